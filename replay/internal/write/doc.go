// Package write applies the write semantics of a kube-apiserver to one
// object held as JSON, so a replay server can answer the writes of code
// under test like the API server does.
//
// It is pure: no storage, no HTTP, no locks, no package-level mutable
// state. The caller finds the current object, calls [Engine.Apply], stores
// [Result.Object] when [Result.Event] is not "" (and the request was not a
// dry run), sends [Result.Event] to its watchers and answers with
// [Result.Code] and [Result.Body]. The caller assigns resourceVersions,
// uids, times and generated-name suffixes through a [Stamp]:
//
//	var e write.Engine
//	res, err := e.Apply(req, cur, write.Stamp{RV: nextRV(), Now: clk.Now(), UID: newUID(), Suffix: rand5()})
//	if err != nil {
//		status := err.(*apierrors.StatusError).ErrStatus // answer it as a metav1.Status
//	}
//
// # What it does, as the API server does it
//
//   - create: generateName plus [Stamp.Suffix] (base cut to 58 characters);
//     namespace defaulted from the URL, 400 when it disagrees; 422 when name
//     and generateName are both missing; 409 AlreadyExists when cur is not
//     nil; uid, creationTimestamp, resourceVersion set; generation 1 for the
//     kinds whose strategy sets it (Deployments, Jobs, ... and every custom
//     resource; not ConfigMaps); .status dropped when the resource has a
//     status subresource; managedFields as an Update by the field manager.
//   - update (PUT): 404 unless the type allows create on update (Leases,
//     Services, Endpoints, Events, RBAC, ...); 409 Conflict on a stale
//     resourceVersion, 422 on a missing one where updates must be
//     conditional (Leases, PodDisruptionBudgets, webhooks, ...); uid and
//     creationTimestamp kept; generation bumped on changes outside metadata
//     and status (and annotations for Deployments); the main resource
//     ignores .status and the status subresource changes only .status;
//     removing the last finalizer of an object being deleted deletes it
//     (event DELETED); a write that changes nothing makes no event and keeps
//     the resourceVersion.
//   - patch: JSON patch and JSON merge patch (gopkg.in/evanphx/json-patch.v4,
//     as the server), strategic merge patch for built-in types through the Go
//     type in client-go's scheme (415 for custom resources), server-side
//     apply (application/apply-patch+yaml) through
//     k8s.io/apimachinery/pkg/util/managedfields with force and conflicts; a
//     patch of a missing object is 404 except apply, which creates it.
//   - delete: DeleteOptions preconditions (409); propagationPolicy Orphan and
//     Foreground add their finalizers; an object with finalizers gets a
//     deletionTimestamp ([Stamp.Now]) and deletionGracePeriodSeconds 0
//     (event MODIFIED, the object as the answer); deleting it again changes
//     nothing; without finalizers it is removed (event DELETED) and the
//     answer is a Success Status, or the object for the stores that return
//     it (Pods, Namespaces, Services, PVs, PVCs, ...). The DELETED event
//     of an update that removes the last finalizer carries the object as
//     it was stored, finalizers and all.
//   - graceful deletion of Pods (rest.BeforeDelete with the Pod strategy):
//     the grace period is the options' or the Pod's
//     terminationGracePeriodSeconds, 0 for a Pod no node runs or one that
//     has terminated. With 0 the Pod is marked (deletionTimestamp now,
//     [Result.Marked], event MODIFIED) and then removed (event DELETED);
//     otherwise it is marked period seconds ahead and stays, as no kubelet
//     stops it. A Pod being deleted may only have its period shortened.
//
// Built-in kinds are those client-go's kubernetes/scheme knows (read only;
// the engine never registers into it): their bodies go through the Go type,
// dropping unknown fields as the server's default fieldValidation=Warn does.
// Any other kind is treated as a custom resource: kept as sent, merged by SSA
// with a deduced, all-atomic schema.
//
// # What it does not do
//
// Defaults and validation are written here from what kube-apiserver
// answers (defaults.go, validate.go, rbac.go) for Pods, workloads,
// ConfigMaps, Secrets, RBAC's kinds and every object's metadata; the module
// does not import k8s.io/kubernetes. Other kinds get no defaults and only
// metadata validation; there is no admission beyond what a Pod's create gets, no
// kubelet (a bound Pod deleted with a grace period stays marked), no
// custom-resource schemas (no pruning, no structural SSA merge), no CBOR
// apply (off by default in the server). A status update keeps all of the
// current object's metadata, as the custom resource status strategy does;
// some built-in status strategies allow metadata changes other than
// labels. managedFields entries the write touched get [Stamp.Now] as
// their time (a scale write's are the scale handler's, as the server's).
// A built-in object is answered as the server reads it back from etcd
// (protobuf): an empty list the body sent is null.
//
// Errors are always *k8s.io/apimachinery/pkg/api/errors.StatusError with
// the server's code, reason and message; TestLiveWritesMatchTheAPIServer
// compares them, and the written objects, with a real kube-apiserver.
package write
