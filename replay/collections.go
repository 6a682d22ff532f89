package replay

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
)

// Which timeline answers for a collection: the recorded one, the
// all-namespaces one assembled from namespaces, or an empty one made for a
// collection the cassette never recorded.

// timelineFor returns the timeline that answers for rp's collection, and
// the namespace to filter it by: the collection's own, else for a
// namespaced request the all-namespaces timeline of the same resource.
//
// In Overlay mode the all-namespaces timeline comes first, so that a write
// and every watch of the resource meet on one timeline; a collection never
// recorded has the timeline it was given at its first request.
func (r *Replayer) timelineFor(rp apipath.Path) (*timeline.Timeline, string) {
	all := rp
	all.Namespace, all.Name = "", ""
	if rp.Namespace != "" && r.overlay() {
		if t := r.timelines[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	if t := r.timelines[rp.Collection()]; t != nil {
		return t, ""
	}
	if rp.Namespace != "" {
		if t := r.timelines[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.empties[rp.Collection()]; t != nil {
		return t, ""
	}
	if rp.Namespace != "" {
		if t := r.empties[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	return nil, ""
}

// writeTimeline returns the timeline a write of rp's collection goes to:
// the all-namespaces one when the recording has it (so its watchers see
// every write), else the collection's own, else a new empty one.
func (r *Replayer) writeTimeline(rp apipath.Path, kind string) *timeline.Timeline {
	if t, _ := r.timelineFor(rp); t != nil {
		return t
	}
	t, _ := r.made(rp, kind)
	return t
}

// made returns the timeline of a collection the cassette never recorded,
// of a resource of kind kind, and the namespace to filter it by: empty as
// of the newest resourceVersion recorded, made at its first request and
// kept (in Overlay mode the code under test writes to it). A resource
// never recorded in any namespace has one timeline, of all namespaces, so
// that what is written in one namespace is listed and watched across all
// of them, as on the server.
func (r *Replayer) made(rp apipath.Path, kind string) (*timeline.Timeline, string) {
	rp.Name = ""
	ns := ""
	if rp.Namespace != "" && !r.recordedSome(rp) {
		ns, rp.Namespace = rp.Namespace, ""
	}
	path := rp.Collection()
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.empties[path]; t != nil {
		return t, ns
	}
	var objs [][]byte
	rv := r.newestRV()
	if rp.Group == "" && rp.Resource == "namespaces" {
		objs = r.namespaces(rv)
	}
	t := timeline.Empty(path, rp, kind, rv, r.overlay(), objs...)
	r.empties[path] = t
	return t, ns
}

// namespaces returns the Namespace objects of a recording that never
// listed namespaces: the four every cluster has, and each one a recorded
// collection lives in, Active (kubectl asks for the namespace when a get
// in it finds nothing, and reports the namespace missing if it is).
func (r *Replayer) namespaces(rv int64) [][]byte {
	ns := map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	for _, t := range r.tlOrder {
		t.Namespaces(ns)
	}
	at := r.header.RecordedAt.UTC().Format(time.RFC3339)
	var out [][]byte
	for _, n := range slices.Sorted(maps.Keys(ns)) {
		uid := uuid.NewSHA1(uuid.NameSpaceOID, []byte("kwrec namespace "+n))
		out = append(out, fmt.Appendf(nil, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q,"uid":%q,"resourceVersion":"%d","creationTimestamp":%q,"labels":{"kubernetes.io/metadata.name":%q}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, n, uid, rv, at, n))
	}
	return out
}

// newestRV is the newest resourceVersion recorded of any collection: they
// are one etcd revision sequence.
func (r *Replayer) newestRV() int64 {
	var rv int64
	for _, t := range r.tlOrder {
		rv = max(rv, t.Last())
	}
	return rv
}

// emptyTimeline answers for a collection the cassette never recorded of a
// resource the server has (kubectl describe lists the events of what it
// describes): no objects, as of the newest resourceVersion recorded of any
// collection (they are one etcd revision sequence). nil for a resource the
// server's discovery does not know.
func (r *Replayer) emptyTimeline(rp apipath.Path) (*timeline.Timeline, string) {
	docs, err := r.discoveryDocs()
	if err != nil {
		return nil, ""
	}
	info, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	kind := info.Kind
	if !ok || !info.Namespaced && rp.Namespace != "" {
		return nil, ""
	}
	if rp.Namespace == "" && r.recordedSome(rp) {
		// All namespaces, where only some were recorded: not empty, but
		// not known either.
		return nil, ""
	}
	return r.made(rp, kind)
}

// recordedSome reports whether the cassette records a collection of rp's
// resource in some namespace.
func (r *Replayer) recordedSome(rp apipath.Path) bool {
	for _, t := range r.tlOrder {
		if t.Res.Group == rp.Group && t.Res.Version == rp.Version && t.Res.Resource == rp.Resource {
			return true
		}
	}
	return false
}
