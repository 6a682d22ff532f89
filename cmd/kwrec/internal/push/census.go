package push

import (
	"encoding/json"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// Census counts the objects of a recording's window by kind over time:
// what kwrec push compares between the recording it pushed and its
// recording of the target. Objects the cluster makes itself
// ([ClusterMade]) are not counted.
type Census struct {
	start   []cut.Object
	changes []cut.Change
}

// NewCensus returns the census of s.
func NewCensus(s *cut.Script) *Census { return &Census{start: s.Start, changes: s.Changes} }

// Count is how many objects of each kind there are at one time, and
// Pods by phase of scheduling: "Pod scheduled" (spec.nodeName set) and
// "Pod pending" (not yet).
type Count map[string]int

// Kinds returns the kinds of c, sorted.
func (c Count) Kinds() []string { return slices.Sorted(maps.Keys(c)) }

// ident is what a census keeps of an object.
type ident struct {
	kind      string
	scheduled bool
}

// At returns the count at t from the window's start: the state, with
// every change recorded at or before t applied.
func (c *Census) At(t time.Duration) Count {
	live := map[string]ident{}
	apply := func(o cut.Object, deleted bool) {
		id := o.Group + "/" + o.Resource + "/" + key(o.Namespace, o.Name)
		if deleted {
			delete(live, id)
			return
		}
		var u unstructured.Unstructured
		if json.Unmarshal(o.JSON, &u.Object) != nil || ClusterMade(o.Group, &u) {
			return
		}
		node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
		live[id] = ident{kind: u.GetKind(), scheduled: node != ""}
	}
	for _, o := range c.start {
		apply(o, false)
	}
	for _, ch := range c.changes {
		if ch.At > t {
			break
		}
		apply(ch.Object, ch.Type == "DELETED")
	}
	n := Count{}
	for _, id := range live {
		n[id.kind]++
		if id.kind == "Pod" {
			if id.scheduled {
				n["Pod scheduled"]++
			} else {
				n["Pod pending"]++
			}
		}
	}
	return n
}
