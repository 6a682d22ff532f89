package replay

import (
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/fanout"
	"github.com/kwrec/kwrec/replay/internal/pace"
)

// sharing holds what the watches of a Replayer share: the hubs that make
// the frames of recorded events once for every watch of a collection in
// one encoding (see package fanout), and the dispatch budgets of
// kube-apiserver's rule for a watch that cannot keep up (see pace.Lag),
// one per timeline as the API server has one per resource. Set clock and
// since before use.
type sharing struct {
	clock   clock.PassiveClock
	since   time.Time // when the Replayer started: the budgets fill from then
	hubs    fanout.Hubs[hubKey]
	mu      sync.Mutex
	budgets map[*timeline.Timeline]*pace.Budget
	// made counts the watch-event frames of recorded events made, by hubs
	// and by watches alike; terminated the watches ended for falling
	// behind (tests read them).
	made       atomic.Int64
	terminated atomic.Int64
}

// budget returns the dispatch budget of t (nil: of the recorded streams
// of no timeline).
func (f *sharing) budget(t *timeline.Timeline) *pace.Budget {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.budgets[t]
	if b == nil {
		if f.budgets == nil {
			f.budgets = map[*timeline.Timeline]*pace.Budget{}
		}
		b = pace.NewBudget(f.clock, f.since)
		f.budgets[t] = b
	}
	return b
}

type hubKey struct {
	t     *timeline.Timeline
	proto bool
}

// attach returns the hub of t's events in encoding proto for a watch whose
// first event is from; the watch calls f.hubs.Detach when done.
func (f *sharing) attach(s *serving, t *timeline.Timeline, proto bool, from int) *fanout.Hub {
	return f.hubs.Attach(hubKey{t, proto}, t.NumEvents(), from, func() fanout.Maker {
		return &eventFrames{s: s, t: t, proto: proto, frames: cursor{src: s.src}}
	})
}

// eventFrames makes the watch-event frames of a timeline's recorded events
// for a hub.
type eventFrames struct {
	s      *serving
	t      *timeline.Timeline
	proto  bool
	frames cursor
}

// Make reads event i's recorded object and returns its watch-event frame.
func (m *eventFrames) Make(i int) ([]byte, error) {
	e := m.t.Event(i)
	ref := e.Obj.Ref
	var raw []byte
	var err error
	if ref.In == nil {
		raw, err = m.t.Bytes(ref)
	} else if raw, err = m.frames.frame(ref.In, int(ref.I)); err == nil {
		raw, err = ref.Of(raw)
	}
	if err != nil {
		return nil, err
	}
	m.s.fan.made.Add(1)
	return m.s.views.codec.WatchEvent(m.t, e.Type, &e.Obj, raw, m.proto)
}

func (m *eventFrames) Close() { m.frames.close() }
