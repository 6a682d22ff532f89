// Package push makes a recording happen again in a real cluster: it
// creates the recorded state at a window's start in a target API server,
// then makes each recorded change at its recorded time (scaled), so that
// the target's own controllers, scheduler and admission react to it.
// kwrec push is this package.
//
// # Recipe
//
//	rec, err := cut.Read("incident.kwrec.zst")
//	s, err := rec.Script(from, to)                    // the state at from, the changes up to to
//	plan, err := push.NewPlan(s, push.PlanOptions{})  // roots only
//	res, err := push.Run(ctx, plan, push.Config{Client: dyn, Speed: 1})
//
// # What is pushed
//
// With [Roots] (the default), the objects no other recorded object owns
// (by ownerReferences): Deployments, CronJobs, Services, ConfigMaps, but
// not the ReplicaSets, Pods or Jobs those own, which the target's
// controllers make, as SimKube does. With [All], everything, owners
// before what they own, each ownerReference re-pointed at the UID the
// target gave the owner: for a target whose controllers are off.
//
// Left out always: what the target makes itself ([ClusterMade]: the
// system namespaces and what is in kube-system, kube-public and
// kube-node-lease, system: RBAC, the kubernetes Service, every
// namespace's kube-root-ca.crt and default ServiceAccount, bootstrap
// flow control, automanaged APIServices).
//
// # What is changed on the way
//
// [Strip] removes what the target sets: metadata's uid,
// resourceVersion, creationTimestamp, managedFields, generation,
// deletionTimestamp, deletionGracePeriodSeconds and selfLink, and a
// Service's clusterIP and clusterIPs (the target allocates them; a
// headless Service keeps its None).
// ownerReferences to objects not pushed are dropped: the target's
// garbage collector would delete an object whose owner it cannot find.
// A Job's generated selector (its controller-uid labels, without
// spec.manualSelector) names its recorded UID: a create leaves it for
// the target to generate, an update names the target's UID.
//
// Status goes with its object and, where the resource has a status
// subresource (which ignores it there), through /status after it; the
// first 404 from a resource's /status says it has none. An update that
// changes only metadata and status goes through /status alone, as the
// recorded controller wrote it (a Deployment's revision annotation comes
// with its status), and is PUT as well only if the target kept the
// metadata out. With [Roots] the status of the kinds the target's
// controllers write is not written at all ([ControllersOwnStatus]:
// Deployment, ReplicaSet, StatefulSet, DaemonSet, Job, CronJob, Pod,
// ReplicationController, HorizontalPodAutoscaler,
// PersistentVolumeClaim, PersistentVolume, Service, Namespace, Node,
// PodDisruptionBudget), and a CustomResourceDefinition's or
// APIService's never is ([ServerOwnsStatus]). A recorded update that
// writes nothing new once stripped (with [Roots], most of a
// controller's writes) is left out of the plan (Plan.Unchanged).
//
// Secrets are pushed as recorded. A recording is redacted by default,
// so every data value is the redaction marker (REDACTED, base64
// UkVEQUNURUQ=), not the original: the Secret exists on the target with
// the right keys and type, and whatever reads a value reads the marker.
// Record with --no-redact to push real values (and keep that file safe).
//
// # Writes and faults
//
// A create is a POST, an update a PUT over the target's current
// resourceVersion (the one the push last wrote, read again after a 409
// when the target's controllers wrote the object since), a delete a
// DELETE. A write the target
// refuses (a status it answers: AlreadyExists, Invalid, Forbidden,
// NotFound for a missing CRD) is named on [Config.Log] and counted by
// reason; [Skip] goes on, [Stop] ends the push with [ErrRefused]. A
// write it does not answer (no connection, 5xx) is retried with
// [Config.Backoff], then ends the push with [ErrTargetGone]. A 429 is
// client-go's to retry (it waits the Retry-After the server sends, up
// to 10 times) before the push sees it.
//
// # Time
//
// The state at the start is made as fast as the target takes it,
// [Config.Workers] writes at once within a tier of objects that depend
// on none of each other. The changes are then started in recorded order,
// each at the time it was recorded from the window's start divided by
// [Config.Speed] (0: at once), on [Config.Clock], up to [Config.Workers]
// at once: a change waits for the changes before it of its object and of
// its owners, a Namespace's or a CRD's for all before it (and all after
// it for it), and for no other: a burst recorded at one instant is not
// made one after another, and one slow write holds up only what needs it.
// The recorded order is the server's (resourceVersion), and a recorded
// time is when a watch delivered the change: a change delivered before
// one the server made earlier (watches of distinct resources deliver
// apart) is due with that one. Result.Lateness holds how late each one
// was taken.
package push
