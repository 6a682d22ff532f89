package push

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// Verb is what a [Step] asks of the target.
type Verb string

// The verbs of a push.
const (
	// Create is a POST of the object, then a PUT of its status when it
	// carries one the push keeps (see [Step.Status]).
	Create Verb = "create"
	// Update is a PUT of the object as recorded, then of its status.
	Update Verb = "update"
	// Delete is a DELETE of the object.
	Delete Verb = "delete"
)

// Step is one write of a push.
type Step struct {
	// At is when it was recorded, from the window's start; 0 for the
	// state at the start.
	At   time.Duration
	Verb Verb
	GVR  schema.GroupVersionResource
	// Namespace (the target's, after --namespace-map) and Name name the
	// object; Namespace is "" for a cluster-scoped one.
	Namespace, Name string
	// Kind is the object's.
	Kind string
	// Object is the object to write, server-set fields stripped; its
	// ownerReferences name recorded UIDs, re-pointed at the target's as
	// the push goes.
	Object *unstructured.Unstructured
	// Status is the recorded status to write through /status after the
	// object, nil when the plan keeps none (see the package doc).
	Status map[string]any
	// UID is the object's recorded UID.
	UID types.UID
	// MetaWithStatus is set on an update that changes metadata and
	// status but nothing else: the recorded server took both in one
	// write to /status (a Deployment's controller sets its revision
	// annotation with its status), so the push makes it so too, and
	// PUTs the object only if the target left the metadata out.
	MetaWithStatus bool
	// depth is how many recorded owners stand above it.
	depth int
}

// String names the step as kwrec's messages do: "create
// deployments.apps kwrec/web".
func (s *Step) String() string {
	return fmt.Sprintf("%s %s %s", s.Verb, resourceName(s.GVR), key(s.Namespace, s.Name))
}

// id names the object of s among all a push writes.
func (s *Step) id() string { return s.GVR.String() + " " + key(s.Namespace, s.Name) }

// Plan is what a push writes: the state at the start, in dependency
// order, then each recorded change at its time.
type Plan struct {
	// Namespaces are namespaces the objects are in that the recording
	// holds no Namespace object of: the push makes each unless the
	// target has it.
	Namespaces []string
	// Start is the state, in the order it is created: Namespaces, then
	// CustomResourceDefinitions, then the rest, each object after its
	// recorded owners, then by kind (ServiceAccounts and ConfigMaps
	// before the workloads that use them), then by name.
	Start []Step
	// Changes are the recorded changes, in the order recorded.
	Changes []Step
	// Span is the window's length at speed 1.
	Span time.Duration
	// Left counts the objects left out, by why: "owned" (--roots),
	// "excluded" (--include/--exclude), "cluster's own" (see
	// [ClusterMade]).
	Left map[string]int
	// Unchanged counts the recorded updates left out because they
	// change nothing the push writes: with --roots, most of them, as a
	// controller's status writes are most of a recording.
	Unchanged int
}

// Busiest returns the most requests the plan's changes make in any one
// second at speed (above 0): a create or an update with a status counts
// two, its write and its status's. A client-side rate limit below it
// holds the push behind the recording.
func (p *Plan) Busiest(speed float64) int {
	busiest, n, first := 0, 0, 0
	for i := range p.Changes {
		n += requests(&p.Changes[i])
		for float64(p.Changes[i].At-p.Changes[first].At)/speed >= float64(time.Second) {
			n -= requests(&p.Changes[first])
			first++
		}
		busiest = max(busiest, n)
	}
	return busiest
}

func requests(st *Step) int {
	if st.Status != nil && st.Verb != Delete {
		return 2
	}
	return 1
}

// metaWithStatus reports whether st changes prev's metadata and status
// and nothing else.
func metaWithStatus(prev, st *Step) bool {
	if st.Status == nil || equalJSON(prev.Status, st.Status) {
		return false
	}
	a, b := prev.Object.DeepCopy(), st.Object.DeepCopy()
	metaA, metaB := a.Object["metadata"], b.Object["metadata"]
	delete(a.Object, "metadata")
	delete(b.Object, "metadata")
	return !equalJSON(metaA, metaB) && equalJSON(a.Object, b.Object)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// written is what st writes, to tell an update that writes nothing new.
func written(st *Step) string {
	b, _ := json.Marshal([]any{st.Object.Object, st.Status})
	return string(b)
}

// Mode chooses which recorded objects a push writes.
type Mode int

const (
	// Roots pushes the objects no other recorded object owns: the
	// target's controllers make the rest (kwrec push --roots, the
	// default).
	Roots Mode = iota
	// All pushes every object, for a target whose controllers are off
	// (--all).
	All
)

// PlanOptions configure [NewPlan]. The zero value plans roots, every
// resource, no namespace moved.
type PlanOptions struct {
	// Mode is [Roots] (default) or [All].
	Mode Mode
	// Select reports whether a resource of group is pushed (--include,
	// --exclude); nil pushes every one.
	Select func(group, resource, kind string) bool
	// NamespaceMap moves objects of a namespace to another (a=b): the
	// Namespace object is renamed too.
	NamespaceMap map[string]string
}

// NewPlan plans the push of s.
func NewPlan(s *cut.Script, opts PlanOptions) (*Plan, error) {
	p := &Plan{Span: s.Span, Left: map[string]int{}}
	owners := map[types.UID]bool{}
	var objs []*Step
	add := func(o cut.Object, at time.Duration, verb Verb) error {
		st, err := newStep(o, at, verb, opts.NamespaceMap)
		if err != nil {
			return err
		}
		owners[st.UID] = true
		objs = append(objs, st)
		return nil
	}
	for _, o := range s.Start {
		if err := add(o, 0, Create); err != nil {
			return nil, err
		}
	}
	for _, c := range s.Changes {
		if err := add(c.Object, c.At, verbOf(c.Type)); err != nil {
			return nil, err
		}
	}
	depth := depths(objs)
	nss := map[string]bool{}
	have := map[string]bool{}
	last := map[string]string{}   // each object's last write as planned
	lastObj := map[string]*Step{} // and the step
	for i, st := range objs {
		st.depth = depth[st.UID]
		if why := p.leftOut(st, owners, opts); why != "" {
			if i < len(s.Start) || st.Verb == Create {
				p.Left[why]++
			}
			continue
		}
		keep(st, opts.Mode, owners)
		if id, w := st.GVR.String()+" "+key(st.Namespace, st.Name), written(st); st.Verb == Update && last[id] == w {
			p.Unchanged++
			continue
		} else if st.Verb == Delete {
			delete(last, id)
			delete(lastObj, id)
		} else {
			if prev := lastObj[id]; prev != nil && st.Verb == Update {
				st.MetaWithStatus = metaWithStatus(prev, st)
			}
			last[id], lastObj[id] = w, st
		}
		if st.Namespace != "" {
			nss[st.Namespace] = true
		}
		if st.GVR.Group == "" && st.GVR.Resource == "namespaces" {
			have[st.Name] = true
		}
		if i < len(s.Start) {
			p.Start = append(p.Start, *st)
		} else {
			p.Changes = append(p.Changes, *st)
		}
	}
	for ns := range nss {
		if !have[ns] {
			p.Namespaces = append(p.Namespaces, ns)
		}
	}
	slices.Sort(p.Namespaces)
	slices.SortStableFunc(p.Start, func(a, b Step) int {
		return cmp.Or(cmp.Compare(tier(&a), tier(&b)), cmp.Compare(a.depth, b.depth), cmp.Compare(rank(a.Kind), rank(b.Kind)),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return p, nil
}

// leftOut says why st is not pushed, "" when it is.
func (p *Plan) leftOut(st *Step, owners map[types.UID]bool, opts PlanOptions) string {
	switch {
	case ClusterMade(st.GVR.Group, st.Object):
		return "cluster's own"
	case opts.Select != nil && !opts.Select(st.GVR.Group, st.GVR.Resource, st.Kind):
		return "excluded"
	case opts.Mode == Roots && ownedByRecorded(st.Object, owners):
		return "owned"
	}
	return ""
}

// newStep makes the step of one recorded object.
func newStep(o cut.Object, at time.Duration, verb Verb, nsMap map[string]string) (*Step, error) {
	u := &unstructured.Unstructured{}
	if err := json.Unmarshal(o.JSON, &u.Object); err != nil {
		return nil, fmt.Errorf("%s %s: the recorded object does not decode: %v", resourceName(schema.GroupVersionResource{Group: o.Group, Resource: o.Resource}), key(o.Namespace, o.Name), err)
	}
	gvr := schema.GroupVersionResource{Group: o.Group, Version: o.Version, Resource: o.Resource}
	ns, name := mapNS(nsMap, u.GetNamespace()), u.GetName()
	if gvr.Group == "" && gvr.Resource == "namespaces" {
		name = mapNS(nsMap, name)
		u.SetName(name)
	}
	if ns != "" {
		u.SetNamespace(ns)
	}
	st := &Step{At: at, Verb: verb, GVR: gvr, Namespace: ns, Name: name, Kind: u.GetKind(), UID: u.GetUID(), Object: u}
	return st, nil
}

func mapNS(m map[string]string, ns string) string {
	if to, ok := m[ns]; ok {
		return to
	}
	return ns
}

func verbOf(eventType string) Verb {
	switch eventType {
	case "ADDED":
		return Create
	case "DELETED":
		return Delete
	}
	return Update
}

// keep strips from st's object what the target sets itself, splits off
// the status the push writes through /status, and drops the
// ownerReferences whose owner is not recorded (the target's garbage
// collector would delete an object whose owner it cannot find).
func keep(st *Step, mode Mode, owners map[types.UID]bool) {
	u := st.Object
	Strip(u)
	if s, ok := u.Object["status"].(map[string]any); ok {
		delete(u.Object, "status")
		if len(s) > 0 && !ServerOwnsStatus(st.GVR.Group, st.Kind) && !(mode == Roots && ControllersOwnStatus(st.GVR.Group, st.Kind)) {
			st.Status = s
		}
	}
	refs := u.GetOwnerReferences()
	kept := refs[:0]
	for _, r := range refs {
		if owners[r.UID] && mode == All {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "ownerReferences")
	} else {
		u.SetOwnerReferences(kept)
	}
}

// ownedByRecorded reports whether another recorded object owns u.
func ownedByRecorded(u *unstructured.Unstructured, owners map[types.UID]bool) bool {
	for _, r := range u.GetOwnerReferences() {
		if owners[r.UID] && r.UID != u.GetUID() {
			return true
		}
	}
	return false
}

// depths returns how many recorded owners stand above each object (a
// Pod of a ReplicaSet of a Deployment: 2), cycles cut.
func depths(objs []*Step) map[types.UID]int {
	ownersOf := map[types.UID][]types.UID{}
	for _, st := range objs {
		if _, ok := ownersOf[st.UID]; ok || st.UID == "" {
			continue
		}
		for _, r := range st.Object.GetOwnerReferences() {
			ownersOf[st.UID] = append(ownersOf[st.UID], r.UID)
		}
		if ownersOf[st.UID] == nil {
			ownersOf[st.UID] = []types.UID{}
		}
	}
	d := map[types.UID]int{}
	var walk func(uid types.UID, seen map[types.UID]bool) int
	walk = func(uid types.UID, seen map[types.UID]bool) int {
		if v, ok := d[uid]; ok {
			return v
		}
		if seen[uid] {
			return 0
		}
		seen[uid] = true
		n := 0
		for _, o := range ownersOf[uid] {
			if _, recorded := ownersOf[o]; recorded {
				n = max(n, walk(o, seen)+1)
			}
		}
		d[uid] = n
		return n
	}
	for uid := range ownersOf {
		walk(uid, map[types.UID]bool{})
	}
	return d
}

// tier puts Namespaces first, CustomResourceDefinitions second, the rest
// after.
func tier(s *Step) int {
	switch {
	case s.GVR.Group == "" && s.GVR.Resource == "namespaces":
		return 0
	case s.GVR.Group == "apiextensions.k8s.io" && s.GVR.Resource == "customresourcedefinitions":
		return 1
	}
	return 2
}

// kindOrder is the order in which kinds are created among objects of one
// owner depth, as Helm installs them: what a kind uses before it.
var kindOrder = []string{
	"PriorityClass", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodDisruptionBudget",
	"ServiceAccount", "Secret", "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
	"ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Service",
	"DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment", "HorizontalPodAutoscaler",
	"StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

// rank is a kind's place in kindOrder; custom kinds come last.
func rank(kind string) int {
	if i := slices.Index(kindOrder, kind); i >= 0 {
		return i
	}
	return len(kindOrder)
}

// resourceName names a resource as kwrec's messages do: plural, then a
// dot and the group unless core (deployments.apps).
func resourceName(gvr schema.GroupVersionResource) string {
	if gvr.Group == "" {
		return gvr.Resource
	}
	return gvr.Resource + "." + gvr.Group
}

// key is namespace/name, or name alone for a cluster-scoped object.
func key(ns, name string) string {
	if ns == "" {
		return name
	}
	return ns + "/" + name
}
