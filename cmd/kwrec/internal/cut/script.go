package cut

import (
	"cmp"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/timepoint"
)

// Script is a window of a recording object by object, for a tool that
// makes the recorded changes again elsewhere (kwrec push): the state at
// the window's start, then every recorded change in it, with its time.
type Script struct {
	// Start is every object of the state at the first point, as
	// [Cut]'s lists hold it, sorted by group, resource, namespace and
	// name.
	Start []Object
	// Changes are the watch events recorded after the first point and
	// up to the second, in resourceVersion order (every etcd-backed
	// collection shares one revision sequence, so that is the order the
	// server made them in).
	Changes []Change
	// Span is the window's length: from the first point to the second.
	Span time.Duration
}

// Object is one recorded object of a [Script].
type Object struct {
	Group, Version, Resource string
	// Namespace and Name are the object's; Namespace is "" for a
	// cluster-scoped one.
	Namespace, Name string
	// RV is the resourceVersion it was recorded at.
	RV int64
	// JSON is the object as a get answers it, with kind and apiVersion:
	// decoded from protobuf when it was recorded so.
	JSON []byte
}

// Change is one recorded watch event of a [Script].
type Change struct {
	// At is when it was recorded, from the window's start.
	At time.Duration
	// Type is the watch event's: ADDED, MODIFIED or DELETED.
	Type string
	// Object is the event's object: for DELETED, its last state.
	Object
}

// Script returns the window of r from from to to as objects (see
// [Script]). The state of a collection first recorded after from is its
// first list: for a window from the recording's start, that of each
// collection's first list. A collection whose resourceVersions are not
// integers (see [timeline.Timeline.Broken]) is left out; an object that
// two recorded collections hold (one namespace's and all namespaces')
// comes once.
func (r *Recording) Script(from, to timepoint.Point) (*Script, error) {
	w, err := r.window(from, to)
	if err != nil {
		return nil, err
	}
	rv1, rv2 := r.maxRV(w.from), r.maxRV(w.to)
	got, err := r.readScript(rv1, rv2)
	if err != nil {
		return nil, err
	}
	s := &Script{Span: w.t2 - w.t1}
	seen := map[string]bool{}
	for _, t := range r.tlList {
		if t.Broken() != "" {
			continue
		}
		at := max(rv1, t.Oldest())
		if err := s.addState(t, at, seen, got); err != nil {
			return nil, err
		}
		if err := s.addChanges(t, at, rv2, w.t1, seen, got); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(s.Start, func(a, b Object) int {
		return cmp.Or(cmp.Compare(a.Group, b.Group), cmp.Compare(a.Resource, b.Resource),
			cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
	})
	slices.SortStableFunc(s.Changes, func(a, b Change) int { return cmp.Compare(a.RV, b.RV) })
	return s, nil
}

// readScript reads back the objects a script of the window from rv1 to
// rv2 holds: every collection's state at rv1 (or its oldest), and its
// events after it up to rv2.
func (r *Recording) readScript(rv1, rv2 int64) (objBytes, error) {
	b := newReadBack()
	for _, t := range r.tlList {
		if t.Broken() != "" {
			continue
		}
		at := max(rv1, t.Oldest())
		b.wantState(t, at)
		for i := range t.NumEvents() {
			if e := t.Event(i); e.RV() > at && e.RV() <= rv2 {
				b.wantObjects([]timeline.Object{e.Obj})
			}
		}
	}
	if err := b.read(r); err != nil {
		return nil, err
	}
	return b.got, nil
}

// addState adds the objects of t at rv to s.Start, those not seen yet.
func (s *Script) addState(t *timeline.Timeline, rv int64, seen map[string]bool, got objBytes) error {
	l, raws, err := stateOf(t, url.Values{}, rv, got)
	if err != nil {
		return err
	}
	for i := range l.Items {
		o := &l.Items[i]
		id := "state " + t.Res.Group + "/" + t.Res.Resource + "/" + o.Key
		if seen[id] {
			continue
		}
		seen[id] = true
		b, err := timeline.Codec{}.Object(t, o, raws[i], false)
		if err != nil {
			return fmt.Errorf("%s %s: %v", t.Path, o.Key, err)
		}
		s.Start = append(s.Start, Object{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
			Namespace: o.Namespace(), Name: o.Name(), RV: o.RV, JSON: b})
	}
	return nil
}

// addChanges adds the events of t after rv1 up to rv2 to s.Changes,
// those not seen yet, timed from t1.
func (s *Script) addChanges(t *timeline.Timeline, rv1, rv2 int64, t1 time.Duration, seen map[string]bool, got objBytes) error {
	for i := range t.NumEvents() {
		e := t.Event(i)
		if e.RV() <= rv1 || e.RV() > rv2 {
			continue
		}
		id := fmt.Sprintf("event %s/%s/%s %d %s", t.Res.Group, t.Res.Resource, e.Obj.Key, e.RV(), e.Type)
		if seen[id] {
			continue
		}
		seen[id] = true
		raw, err := got.of(t, e.Obj.Ref)
		if err != nil {
			return err
		}
		b, err := timeline.Codec{}.Object(t, &e.Obj, raw, false)
		if err != nil {
			return fmt.Errorf("%s %s: %v", t.Path, e.Obj.Key, err)
		}
		at, _ := t.AtOfRV(e.RV())
		s.Changes = append(s.Changes, Change{At: max(at-t1, 0), Type: e.Type,
			Object: Object{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
				Namespace: e.Obj.Namespace(), Name: e.Obj.Name(), RV: e.RV(), JSON: b}})
	}
	return nil
}
