package timeline

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/kwrec/kwrec/internal/wire"
)

// RVScale is how much a timeline that takes writes ([Timeline.WithWrites], [Empty] with writes)
// multiplies every recorded resourceVersion by: recorded etcd revision R
// is served as R×1000, and the writes made after the timeline reached R
// get R×1000+1, R×1000+2, ... So resourceVersions only grow along the
// collection, written and recorded events interleaved, up to 999 writes
// between two recorded events (a 1,000th is refused with [ErrNoRoom]).
const RVScale = 1000

// ErrStale means the object changed between the read a write was computed
// from and its commit: compute it again from the current version.
var ErrStale = errors.New("the object changed while the write was computed")

// ErrNoRoom means RVScale-1 writes already sit between the last recorded
// event served and the next one.
var ErrNoRoom = errors.New("no resourceVersion left for a write")

// scaleFactor returns what t multiplies recorded resourceVersions by: 1,
// or [RVScale] for a timeline that takes writes. Outside this package the
// scale is crossed with [Timeline.Served] and [Timeline.Recorded].
func (t *Timeline) scaleFactor() int64 {
	if t.scale == 0 {
		return 1
	}
	return t.scale
}

// Served returns the resourceVersion t serves for recorded resourceVersion
// rv.
func (t *Timeline) Served(rv int64) int64 { return rv * t.scaleFactor() }

// Recorded returns the recorded resourceVersion that t serves as rv (for
// a write's, the recorded one it follows).
func (t *Timeline) Recorded(rv int64) int64 { return rv / t.scaleFactor() }

// Takes reports whether t takes writes.
func (t *Timeline) Takes() bool { return t.scale > 1 }

// rescale multiplies every recorded resourceVersion by the scale, at Seal.
func (t *Timeline) rescale() {
	k := t.scaleFactor()
	if k == 1 {
		return
	}
	t.events.rvs.rescale(k)
	for _, s := range t.snaps {
		s.rv *= k
		for key, o := range s.items {
			o.RV *= k
			s.items[key] = o
		}
	}
	for _, m := range t.marks {
		m.RV *= k
	}
	for _, s := range t.streams {
		s.rvs.rescale(k)
	}
	t.last *= k
	t.oldest *= k
	t.progress *= k
}

// Bytes returns the bytes a Ref with no interaction names: a held list
// body, or a write's object.
func (t *Timeline) Bytes(r Ref) ([]byte, error) {
	if r.W {
		t.mu.Lock()
		b := t.written[r.I]
		t.mu.Unlock()
		return b, nil
	}
	return r.Of(t.held[r.I])
}

// Newest returns the highest resourceVersion of the timeline, recorded or
// written.
func (t *Timeline) Newest() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.writes); n > 0 && t.writes[n-1].RV() > t.last {
		return t.writes[n-1].RV()
	}
	return t.last
}

// Changed returns a channel closed at the next write.
func (t *Timeline) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.changed == nil {
		t.changed = make(chan struct{})
	}
	return t.changed
}

// Current returns the current version of object key, as a write sees
// it: the state at "now" ([Timeline.Progress]) with every write so far.
func (t *Timeline) Current(key string) (Object, bool) {
	t.mu.Lock()
	now := t.progress
	ws := t.writes
	t.mu.Unlock()
	objs, _ := t.stateOf(now, ws, key)
	if len(objs) == 0 {
		return Object{}, false
	}
	return objs[0], true
}

// Commit appends a write to the timeline: an event of type typ for object
// key with labels, whose JSON (with kind and apiVersion) is data. base is
// the resourceVersion of the version the write was computed from, 0 when
// the object did not exist; when the object has changed since (a recorded
// event touched it, or another write), Commit returns [ErrStale] and
// nothing is written. The write gets the next resourceVersion after now
// (see [RVScale]), set in the stored bytes, which Commit returns; now
// moves to it, and every watch of the collection sends it.
func (t *Timeline) Commit(typ, key, labels string, base int64, data []byte) (int64, []byte, error) {
	if !t.Takes() {
		return 0, nil, fmt.Errorf("the timeline of %s takes no writes", t.Path)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	objs, _ := t.stateOf(t.progress, t.writes, key)
	var cur int64
	if len(objs) > 0 {
		cur = objs[0].RV
	}
	if cur != base {
		return 0, nil, ErrStale
	}
	rv := t.progress + 1
	if n := len(t.writes); n > 0 && t.writes[n-1].RV() >= rv {
		rv = t.writes[n-1].RV() + 1
	}
	if next := t.nextRecorded(t.progress); next > 0 && rv >= next {
		return 0, nil, fmt.Errorf("%w: %d writes since resourceVersion %d, the most that fit before the next recorded event (%d)", ErrNoRoom, RVScale-1, t.progress/RVScale*RVScale, next)
	}
	b, err := wire.SetRVJSON(data, strconv.FormatInt(rv, 10))
	if err != nil {
		return 0, nil, err
	}
	t.written = append(t.written, b)
	ref := Ref{I: int32(len(t.written) - 1), N: int32(len(b)), Enc: JSON, Typed: true, W: true}
	t.writes = append(t.writes, Event{Type: typ, Obj: Object{Key: key, RV: rv, Labels: labels, Ref: ref}})
	t.progress = rv
	if t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	return rv, b, nil
}

// nextRecorded returns the resourceVersion of the first recorded event or
// list after rv, 0 for none.
func (t *Timeline) nextRecorded(rv int64) int64 {
	var next int64
	if i := t.events.search(rv); i < t.events.Len() {
		next = t.events.rvAt(i)
	}
	for _, s := range t.snaps {
		if s.rv > rv && (next == 0 || s.rv < next) {
			next = s.rv
		}
	}
	return next
}

// Writes returns the writes so far, in order, for reading only.
func (t *Timeline) Writes() []Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.writes
}

// Follower walks the writes one watch sends, interleaved with its
// recorded steps.
type Follower struct {
	t    *Timeline
	next int
	sel  Selector
	// steps, for a watch with a selector on labels or fields, holds its
	// selection (see Steps.Follow).
	steps *Steps
}

// Follow returns the Follower of a watch that starts after resourceVersion
// from, with selector sel.
func (t *Timeline) Follow(from int64, sel Selector) *Follower {
	t.mu.Lock()
	defer t.mu.Unlock()
	i := 0
	for i < len(t.writes) && t.writes[i].RV() <= from {
		i++
	}
	return &Follower{t: t, next: i, sel: sel}
}

// Next returns the next write the watch sends before a step that moves
// the timeline to rv (0: after every recorded step, any write). With none,
// it moves now to rv, so that every later write gets a higher
// resourceVersion and this watch sends it after the step, and reports
// whether that reached the last recorded resourceVersion for the first
// time (see [Timeline.Advance]).
func (f *Follower) Next(rv int64) (ev Event, ok, reachedLast bool) {
	return f.next1(rv, true)
}

// Before is Next that leaves now where it is: for a watch that is not
// sending the step yet.
func (f *Follower) Before(rv int64) (ev Event, ok bool) {
	ev, ok, _ = f.next1(rv, false)
	return ev, ok
}

func (f *Follower) next1(rv int64, advance bool) (ev Event, ok, reachedLast bool) {
	t := f.t
	for {
		t.mu.Lock()
		if f.next >= len(t.writes) || rv != 0 && t.writes[f.next].RV() >= rv {
			if advance {
				reachedLast = t.advanceLocked(rv)
			}
			t.mu.Unlock()
			return Event{}, false, reachedLast
		}
		w := t.writes[f.next]
		f.next++
		// Matched unlocked: a field selector reads the object, which
		// may be a write's bytes the timeline holds under t.mu.
		t.mu.Unlock()
		if f.steps != nil {
			if ev, ok := f.steps.write(w, rv); ok {
				return ev, true, false
			}
			continue
		}
		if f.sel.Matches(&w.Obj) {
			return w, true, false
		}
	}
}

// Pending reports whether a write is waiting to be sent (that the
// watch's selector may still filter out).
func (f *Follower) Pending() bool {
	f.t.mu.Lock()
	defer f.t.mu.Unlock()
	return f.next < len(f.t.writes)
}
