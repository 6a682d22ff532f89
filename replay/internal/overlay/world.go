package overlay

import (
	"bytes"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/discovery"
)

// Objects reads what a recording holds of a timeline's objects.
type Objects interface {
	// Each calls fn with the recorded bytes of each of objs, valid only
	// during the call, reading each frame they are in once.
	Each(t *timeline.Timeline, objs []timeline.Object, fn func(k int, raw []byte) error) error
}

// Docs returns the discovery a replay answers with: what it knows of
// each resource (scope, kind, subresources).
type Docs func() (*discovery.Docs, error)

// WorldConfig is what a [World] is made of.
type WorldConfig struct {
	// Recorded are the recorded collections' timelines (a replay's own
	// forks), in the cassette's order.
	Recorded []*timeline.Timeline
	// AllOf maps a namespace's timeline to the all-namespaces one
	// assembled from it, and that one to itself.
	AllOf map[*timeline.Timeline]*timeline.Timeline
	// Writes: the world takes writes (Overlay mode).
	Writes bool
	// RecordedAt is when the recording was made: the creation time of the
	// namespaces a recording that listed none is given.
	RecordedAt time.Time
	Objects    Objects
	Codec      timeline.Codec
	Docs       Docs
	// RecordedCRD returns the CustomResourceDefinition name as the
	// recording holds it outside a list (a GET of it, as kwrec record
	// records it), for a custom resource whose definition the world's
	// timelines do not hold. Optional.
	RecordedCRD func(name string) ([]byte, bool)
}

// World is a replay's collections. Its recorded timelines are fixed when
// it is made; the empty ones it makes are kept under its lock.
type World struct {
	cfg    WorldConfig
	byPath map[string]*timeline.Timeline

	mu      sync.Mutex
	empties map[string]*timeline.Timeline // collections never recorded, by path

	customs customs
}

// NewWorld returns the world of cfg.
func NewWorld(cfg WorldConfig) *World {
	w := &World{cfg: cfg, byPath: make(map[string]*timeline.Timeline, len(cfg.Recorded)), empties: map[string]*timeline.Timeline{}}
	for _, t := range cfg.Recorded {
		w.byPath[t.Path] = t
	}
	return w
}

// Recorded returns the recorded collections' timelines in the cassette's
// order, for reading only.
func (w *World) Recorded() []*timeline.Timeline { return w.cfg.Recorded }

// Timeline returns the recorded timeline of collection path, nil for none.
func (w *World) Timeline(path string) *timeline.Timeline { return w.byPath[path] }

// AllOf returns the all-namespaces timeline assembled from t (t itself for
// that one), nil when t is not part of one.
func (w *World) AllOf(t *timeline.Timeline) *timeline.Timeline { return w.cfg.AllOf[t] }

// For returns the timeline that answers for rp's collection, and the
// namespace to filter it by: the collection's own, else for a namespaced
// request the all-namespaces timeline of the same resource; nil when
// none was recorded or made.
//
// When the world takes writes the all-namespaces timeline comes first, so
// that a write and every watch of the resource meet on one timeline; a
// collection never recorded has the timeline it was given at its first
// request.
func (w *World) For(rp apipath.Path) (*timeline.Timeline, string) {
	all := rp
	all.Namespace, all.Name = "", ""
	if rp.Namespace != "" && w.cfg.Writes {
		if t := w.byPath[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	if t := w.byPath[rp.Collection()]; t != nil {
		return t, ""
	}
	if rp.Namespace != "" {
		if t := w.byPath[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.empties[rp.Collection()]; t != nil {
		return t, ""
	}
	if rp.Namespace != "" {
		if t := w.empties[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	return nil, ""
}

// ForRead is [World.For], else an empty timeline for a collection the
// cassette never recorded of a resource the server has (kubectl describe
// lists the events of what it describes): no objects, as of the newest
// resourceVersion recorded of any collection (they are one etcd revision
// sequence). nil for a resource the server's discovery does not know.
func (w *World) ForRead(rp apipath.Path) (*timeline.Timeline, string) {
	if t, ns := w.For(rp); t != nil {
		return t, ns
	}
	docs, err := w.cfg.Docs()
	if err != nil {
		return nil, ""
	}
	info, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	if !ok || !info.Namespaced && rp.Namespace != "" {
		return nil, ""
	}
	if rp.Namespace == "" && w.recordedSome(rp) {
		// All namespaces, where only some were recorded: not empty, but
		// not known either.
		return nil, ""
	}
	return w.made(rp, info.Kind)
}

// ForWrite returns the timeline a write of rp's collection goes to: the
// all-namespaces one when the recording has it (so its watchers see every
// write), else the collection's own, else a new empty one of objects of
// kind.
func (w *World) ForWrite(rp apipath.Path, kind string) *timeline.Timeline {
	if t, _ := w.For(rp); t != nil {
		return t
	}
	t, _ := w.made(rp, kind)
	return t
}

// made returns the timeline of a collection the cassette never recorded,
// of a resource of kind kind, and the namespace to filter it by: empty as
// of the newest resourceVersion recorded, made at its first request and
// kept (a write may go to it). A resource never recorded in any namespace
// has one timeline, of all namespaces, so that what is written in one
// namespace is listed and watched across all of them, as on the server.
func (w *World) made(rp apipath.Path, kind string) (*timeline.Timeline, string) {
	rp.Name = ""
	ns := ""
	if rp.Namespace != "" && !w.recordedSome(rp) {
		ns, rp.Namespace = rp.Namespace, ""
	}
	path := rp.Collection()
	w.mu.Lock()
	defer w.mu.Unlock()
	if t := w.empties[path]; t != nil {
		return t, ns
	}
	var objs [][]byte
	rv := w.newestRV()
	if rp.Group == "" && rp.Resource == "namespaces" {
		objs = w.namespaces(rv)
	}
	t := timeline.Empty(path, rp, kind, rv, w.cfg.Writes, objs...)
	w.empties[path] = t
	return t, ns
}

// namespaces returns the Namespace objects of a recording that never
// listed namespaces: the four every cluster has, and each one a recorded
// collection lives in, Active (kubectl asks for the namespace when a get
// in it finds nothing, and reports the namespace missing if it is).
func (w *World) namespaces(rv int64) [][]byte {
	ns := map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	for _, t := range w.cfg.Recorded {
		t.Namespaces(ns)
	}
	at := w.cfg.RecordedAt.UTC().Format(time.RFC3339)
	var out [][]byte
	for _, n := range slices.Sorted(maps.Keys(ns)) {
		uid := uuid.NewSHA1(uuid.NameSpaceOID, []byte("kwrec namespace "+n))
		out = append(out, fmt.Appendf(nil, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q,"uid":%q,"resourceVersion":"%d","creationTimestamp":%q,"labels":{"kubernetes.io/metadata.name":%q}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, n, uid, rv, at, n))
	}
	return out
}

// newestRV is the newest resourceVersion recorded of any collection: they
// are one etcd revision sequence.
func (w *World) newestRV() int64 {
	var rv int64
	for _, t := range w.cfg.Recorded {
		rv = max(rv, t.Last())
	}
	return rv
}

// recordedSome reports whether the cassette records a collection of rp's
// resource in some namespace.
func (w *World) recordedSome(rp apipath.Path) bool {
	for _, t := range w.cfg.Recorded {
		if t.Res.Group == rp.Group && t.Res.Version == rp.Version && t.Res.Resource == rp.Resource {
			return true
		}
	}
	return false
}

// All returns every timeline of the world, in no set order: the recorded
// ones, the all-namespaces ones assembled from them, and those made since.
// A world clock replay calls it at every request.
func (w *World) All() []*timeline.Timeline {
	w.mu.Lock()
	defer w.mu.Unlock()
	tls := slices.Clone(w.cfg.Recorded)
	seen := make(map[*timeline.Timeline]bool, len(tls))
	for _, t := range tls {
		seen[t] = true
	}
	for _, d := range w.cfg.AllOf {
		if !seen[d] {
			seen[d] = true
			tls = append(tls, d)
		}
	}
	for _, t := range w.empties {
		tls = append(tls, t)
	}
	return tls
}

// Distinct returns the timelines that hold every object of the world once:
// the recorded ones and those made since, without a namespace's timeline
// whose objects (and writes) an all-namespaces one holds.
func (w *World) Distinct() []*timeline.Timeline {
	w.mu.Lock()
	tls := slices.Clone(w.cfg.Recorded)
	for _, path := range slices.Sorted(maps.Keys(w.empties)) {
		tls = append(tls, w.empties[path])
	}
	w.mu.Unlock()
	return slices.DeleteFunc(tls, func(t *timeline.Timeline) bool {
		d := w.cfg.AllOf[t]
		return t.Broken() != "" || d != nil && d != t
	})
}

// Current lists t's objects as of now.
func Current(t *timeline.Timeline) ([]timeline.Object, error) {
	sel, err := t.Selector(url.Values{}, "", nil)
	if err != nil {
		return nil, err
	}
	l, err := t.List(url.Values{}, sel)
	return l.Items, err
}

// JSON returns the current bytes of o, an object of t, as typed JSON
// with its resourceVersion as served.
func (w *World) JSON(t *timeline.Timeline, o *timeline.Object) ([]byte, error) {
	var raw []byte
	err := w.cfg.Objects.Each(t, []timeline.Object{*o}, func(_ int, b []byte) error {
		raw = append([]byte(nil), b...)
		return nil
	})
	if err != nil {
		return nil, err
	}
	b, err := w.cfg.Codec.Object(t, o, raw, false)
	return bytes.TrimRight(b, "\n"), err
}

// Fields is what a field selector on t's objects reads: the objects,
// and for a custom resource its definition's selectable fields (without
// a definition the world holds, or one it can read, metadata's alone).
func (w *World) Fields(t *timeline.Timeline) *timeline.Fields {
	f := &timeline.Fields{Read: func(o *timeline.Object) ([]byte, error) { return w.JSON(t, o) }}
	if c, err := w.Custom(apipath.Path{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource}); err == nil && c != nil {
		f.Custom = c
	}
	return f
}

// Definition is one version of a CustomResourceDefinition as the world
// holds it.
type Definition struct {
	// Name is the definition's name; RV its resourceVersion, which a
	// change to it changes (-1 for a recorded GET's, which never
	// changes).
	Name string
	RV   int64
	// JSON reads the definition.
	JSON func() ([]byte, error)
}

// Definition returns the world's CustomResourceDefinition of rp's
// resource as of now: in its timeline of definitions, else a recorded
// GET of it (see WorldConfig.RecordedCRD); ok is false when the world
// holds none: a built-in resource, or a recording without its CRD.
func (w *World) Definition(rp apipath.Path) (d Definition, ok bool) {
	if !strings.Contains(rp.Group, ".") {
		return d, false // a CRD's group has a dot, as the server requires
	}
	d.Name = rp.Resource + "." + rp.Group
	if t, _ := w.For(CRDPath); t != nil {
		if o, ok := t.Current("/" + d.Name); ok {
			d.RV, d.JSON = o.RV, func() ([]byte, error) { return w.JSON(t, &o) }
			return d, true
		}
	}
	if w.cfg.RecordedCRD == nil {
		return d, false
	}
	def, ok := w.cfg.RecordedCRD(d.Name)
	if !ok {
		return d, false
	}
	d.RV, d.JSON = -1, func() ([]byte, error) { return def, nil }
	return d, true
}
