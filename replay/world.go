package replay

import (
	"cmp"
	"net/http"
	"slices"
	"sync"

	"github.com/kwrec/kwrec/replay/internal/edit"
	"github.com/kwrec/kwrec/replay/internal/overlay"
)

// What a replay saw and holds, for tools that run one cassette many times
// and compare the runs (replaytest.Explore).

// Object is one object of a replay's world.
type Object struct {
	Group, Version, Resource string
	Namespace, Name          string
	// JSON is the object as a get would answer it, with kind and
	// apiVersion.
	JSON []byte
}

// World returns every object of the replay's world now: the recorded
// state each collection has reached, with the writes applied to it (and
// the collections only written to), each object once, sorted by group,
// resource, namespace and name.
func (r *Replayer) World() ([]Object, error) {
	seen := map[string]bool{}
	var out []Object
	for _, t := range r.world.Distinct() {
		items, err := overlay.Current(t)
		if err != nil {
			return nil, err
		}
		for i := range items {
			o := &items[i]
			id := t.Res.Group + "/" + t.Res.Resource + "/" + o.Key
			if seen[id] {
				continue
			}
			seen[id] = true
			b, err := r.world.JSON(t, o)
			if err != nil {
				return nil, err
			}
			out = append(out, Object{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
				Namespace: o.Namespace(), Name: o.Name(), JSON: b})
		}
	}
	slices.SortFunc(out, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	return out, nil
}

// Change is one change the recording holds: an event of a recorded watch
// of a collection, at its recorded resourceVersion.
type Change struct {
	Group, Resource string
	// Namespace is the recorded collection's, "" for one of all
	// namespaces or of a cluster-scoped resource.
	Namespace string
	RV        int64
	// Type is the watch event's: ADDED, MODIFIED or DELETED.
	Type string
	// Key is the object's namespace/name.
	Key string
}

// Changes returns the changes the recording holds, collection by
// collection in the cassette's order, each in resourceVersion order. An
// edit placed after one (watch-error, reset or truncate with resource,
// namespace and rv) fires on the first watch that crosses it.
func (r *Replayer) Changes() []Change {
	var out []Change
	for _, t := range r.world.Recorded() {
		if r.world.AllOf(t) == t {
			continue // assembled from namespaces' recordings, listed there
		}
		for i := range t.NumEvents() {
			e := t.Event(i)
			out = append(out, Change{Group: t.Res.Group, Resource: t.Res.Resource, Namespace: t.Res.Namespace,
				RV: t.Recorded(e.RV()), Type: e.Type, Key: e.Obj.Key})
		}
	}
	return out
}

// RequestCount is how many requests of one verb a replay answered on one
// resource, all namespaces together: an error edit anchored by resource
// and verb with nth up to N fires on one of them.
type RequestCount struct {
	Verb            string // get, list, watch, create, update, patch, delete, deletecollection
	Group, Resource string
	// Namespace and Name name the object, in [Replayer.ObjectRequests]
	// only.
	Namespace, Name string
	N               int
	// Streaming counts, of the N watches, the streaming lists
	// (sendInitialEvents=true): an edit with before=bookmark and nth up
	// to Streaming fires on one of them.
	Streaming int
}

// Requests returns how many requests the replay answered by verb and
// resource, in the order each was first made.
func (r *Replayer) Requests() []RequestCount { return r.counts.list() }

// ObjectRequests returns how many requests the replay answered on each
// object a request named (a get, update, patch or delete of it, or of
// its subresource), by verb and object, in the order each was first made:
// an error edit with name and nth up to N fires on one of them.
func (r *Replayer) ObjectRequests() []RequestCount { return r.counts.objectList() }

// requestCounts are a replay's [RequestCount]s.
type requestCounts struct {
	mu      sync.Mutex
	counts  []RequestCount
	objects []RequestCount
	at      map[RequestCount]int // where each count is, N aside, in counts or objects
}

func (rc *requestCounts) objectList() []RequestCount {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.objects)
}

func (rc *requestCounts) list() []RequestCount {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.counts)
}

// add notes req.
func (rc *requestCounts) add(req *http.Request) {
	rp, verb := edit.Verb(req)
	if verb == "" {
		return
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.at == nil {
		rc.at = map[RequestCount]int{}
	}
	var i int
	rc.counts, i = rc.counted(rc.counts, RequestCount{Verb: verb, Group: rp.Group, Resource: rp.Resource})
	if verb == "watch" && req.URL.Query().Get("sendInitialEvents") == "true" {
		rc.counts[i].Streaming++
	}
	if rp.Name != "" {
		rc.objects, _ = rc.counted(rc.objects, RequestCount{Verb: verb, Group: rp.Group, Resource: rp.Resource, Namespace: rp.Namespace, Name: rp.Name})
	}
}

// counted returns counts with one more of c (N 0), found through at, and
// where c is in it.
func (rc *requestCounts) counted(counts []RequestCount, c RequestCount) ([]RequestCount, int) {
	if i, ok := rc.at[c]; ok {
		counts[i].N++
		return counts, i
	}
	rc.at[c] = len(counts)
	c.N = 1
	return append(counts, c), len(counts)
}
