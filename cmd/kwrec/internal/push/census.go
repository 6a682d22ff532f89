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
	start   []counted
	changes []counted
}

// counted is what a census keeps of one recorded object.
type counted struct {
	at        time.Duration
	id        string // group/resource/namespace/name
	kind      string // "" for one not counted
	scheduled bool
	deleted   bool
}

// NewCensus returns the census of s.
func NewCensus(s *cut.Script) *Census {
	c := &Census{}
	for _, o := range s.Start {
		c.start = append(c.start, count(o, 0, false))
	}
	for _, ch := range s.Changes {
		c.changes = append(c.changes, count(ch.Object, ch.At, ch.Type == "DELETED"))
	}
	return c
}

func count(o cut.Object, at time.Duration, deleted bool) counted {
	n := counted{at: at, id: o.Group + "/" + o.Resource + "/" + key(o.Namespace, o.Name), deleted: deleted}
	var u unstructured.Unstructured
	if json.Unmarshal(o.JSON, &u.Object) != nil || ClusterMade(o.Group, &u) {
		return n
	}
	node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
	n.kind, n.scheduled = u.GetKind(), node != ""
	return n
}

// Times returns when the changes of the census were recorded, from the
// window's start, in order.
func (c *Census) Times() []time.Duration {
	out := make([]time.Duration, len(c.changes))
	for i, ch := range c.changes {
		out[i] = ch.at
	}
	return out
}

// Count is how many objects of each kind there are at one time, and
// Pods by phase of scheduling: "Pod scheduled" (spec.nodeName set) and
// "Pod pending" (not yet).
type Count map[string]int

// Kinds returns the kinds of c, sorted.
func (c Count) Kinds() []string { return slices.Sorted(maps.Keys(c)) }

// At returns the count at t from the window's start: the state, with
// every change recorded at or before t applied.
func (c *Census) At(t time.Duration) Count {
	live := map[string]counted{}
	apply := func(o counted) {
		if o.deleted || o.kind == "" {
			delete(live, o.id)
			return
		}
		live[o.id] = o
	}
	for _, o := range c.start {
		apply(o)
	}
	for _, ch := range c.changes {
		if ch.at > t {
			break
		}
		apply(ch)
	}
	n := Count{}
	for _, o := range live {
		n[o.kind]++
		if o.kind == "Pod" {
			if o.scheduled {
				n["Pod scheduled"]++
			} else {
				n["Pod pending"]++
			}
		}
	}
	return n
}
