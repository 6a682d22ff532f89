package replay

import (
	"context"
	"github.com/kwrec/kwrec/internal/pace"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwrec/kwrec/internal/timeline"
	"k8s.io/utils/clock"
)

// Fan-out: many watches of one collection share the work of serving it,
// as kube-apiserver's watch cache serializes each object once per
// encoding for all its watchers (cachingObject). Every watch still walks
// the timeline on its own (its own starting point, selector, pacing,
// marks, writes and Hold), but the frame of a recorded event, in the
// encoding it negotiated, comes from the collection's hub for that
// encoding: read from the recording and encoded there once, then handed
// to every watch that sends it, which writes the same bytes.
//
// A hub makes frames in event order on a goroutine of its own, a little
// ahead of the watch that is furthest on, and never waits for one that is
// behind: a slow watch only ever costs itself. It keeps the frames it
// made up to a byte budget, oldest dropped first; a watch that needs a
// frame the hub no longer holds, or never made (it was made before the
// watch's starting point), makes that one itself, as every watch did
// before fan-out.

// hubBudget is how many bytes of frames a hub keeps: about a minute of a
// busy collection (1,000 events a second of 1 KB), so that watches
// started apart or paced apart share it.
const hubBudget = 64 << 20

// hubAhead is how many frames a hub makes ahead of the furthest watch.
const hubAhead = 64

// fanout holds a Replayer's hubs, one per timeline and encoding with a
// watch open, and its dispatch budgets. Set clock and since before use.
type fanout struct {
	clock clock.PassiveClock
	since time.Time // when the Replayer started: the budgets fill from then
	mu    sync.Mutex
	hubs  map[hubKey]*hub
	// budgets are the dispatch budgets of kube-apiserver's rule for a
	// watch that cannot keep up (slow.go), one per timeline as the API
	// server has one per resource.
	budgets map[*timeline.Timeline]*pace.Budget
	// made counts the watch-event frames of recorded events made, by hubs
	// and by watches alike; terminated the watches ended for falling
	// behind (tests read them).
	made       atomic.Int64
	terminated atomic.Int64
}

// budget returns the dispatch budget of t (nil: of the recorded streams
// of no timeline).
func (f *fanout) budget(t *timeline.Timeline) *pace.Budget {
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

// hub makes the frames of one timeline's recorded events in one encoding.
type hub struct {
	r     *Replayer
	key   hubKey
	users int // watches attached; guarded by fanout.mu

	// slots[i] is the frame of event i, once made and while kept.
	slots []atomic.Pointer[[]byte]
	lo    int          // the first event made: where the first watch started
	made  atomic.Int64 // events [lo, made) are made (some maybe dropped since)
	want  atomic.Int64 // 1 + the highest event a watch waits for
	// ready is closed, and replaced, whenever made grows.
	ready atomic.Pointer[chan struct{}]
	wake  chan struct{} // cap 1: wakes the goroutine when want grew
	stop  chan struct{} // closed when the last watch leaves
	done  chan struct{} // closed when the goroutine has returned
}

// attach returns the hub of t's events in encoding proto for a watch whose
// first event is from, starting it for the first watch; the watch calls
// detach when done.
func (f *fanout) attach(r *Replayer, t *timeline.Timeline, proto bool, from int) *hub {
	k := hubKey{t, proto}
	f.mu.Lock()
	defer f.mu.Unlock()
	h := f.hubs[k]
	if h == nil {
		n := t.NumEvents()
		h = &hub{r: r, key: k, slots: make([]atomic.Pointer[[]byte], n), lo: min(from, n),
			wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		h.made.Store(int64(h.lo))
		ch := make(chan struct{})
		h.ready.Store(&ch)
		if f.hubs == nil {
			f.hubs = map[hubKey]*hub{}
		}
		f.hubs[k] = h
		go h.run()
	}
	h.users++
	return h
}

// detach says a watch is done with h; the last one stops it.
func (f *fanout) detach(h *hub) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if h.users--; h.users == 0 {
		delete(f.hubs, h.key)
		close(h.stop)
	}
}

// frame returns the frame of event i, waiting for the hub to make it, or
// nil when the hub does not hold it: the caller then makes its own.
func (h *hub) frame(ctx context.Context, closed <-chan struct{}, i int) ([]byte, error) {
	if i < h.lo {
		return nil, nil
	}
	for {
		ready := *h.ready.Load() // before made: a later frame closes it
		if int64(i) < h.made.Load() {
			if p := h.slots[i].Load(); p != nil {
				return *p, nil
			}
			return nil, nil
		}
		h.ask(i)
		select {
		case <-ready:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-closed:
			return nil, errClosedBody
		case <-h.done:
			return nil, nil
		}
	}
}

// has reports whether frame i can be had without waiting.
func (h *hub) has(i int) bool { return i < h.lo || int64(i) < h.made.Load() }

// ask makes the hub make frames up to event i (and some more).
func (h *hub) ask(i int) {
	for {
		w := h.want.Load()
		if w > int64(i) {
			return
		}
		if h.want.CompareAndSwap(w, int64(i)+1) {
			break
		}
	}
	select {
	case h.wake <- struct{}{}:
	default:
	}
}

// run makes frames in event order, up to hubAhead past the furthest
// watch, keeping hubBudget bytes of them.
func (h *hub) run() {
	defer close(h.done)
	t := h.key.t
	frames := cursor{src: h.r.src}
	defer frames.close()
	kept, oldest := 0, h.lo
	for {
		select {
		case <-h.stop:
			return
		case <-h.wake:
		}
		for next := int(h.made.Load()); next < t.NumEvents() && int64(next) < h.want.Load()+hubAhead; next++ {
			select {
			case <-h.stop:
				return
			default:
			}
			e := t.Event(next)
			data, err := h.make(t, &e, &frames)
			if err == nil {
				h.slots[next].Store(&data)
				kept += len(data)
			}
			// An event the hub cannot make (its frame is unreadable) is
			// left empty: each watch then fails on it itself.
			for kept > hubBudget && oldest < next {
				if p := h.slots[oldest].Swap(nil); p != nil {
					kept -= len(*p)
				}
				oldest++
			}
			h.made.Store(int64(next + 1))
			ch := make(chan struct{})
			close(*h.ready.Swap(&ch))
		}
	}
}

// make reads event e's recorded object and returns its watch-event frame.
func (h *hub) make(t *timeline.Timeline, e *timeline.Event, frames *cursor) ([]byte, error) {
	ref := e.Obj.Ref
	var raw []byte
	var err error
	if ref.In == nil {
		raw, err = t.Bytes(ref)
	} else if raw, err = frames.frame(ref.In, int(ref.I)); err == nil {
		raw, err = ref.Of(raw)
	}
	if err != nil {
		return nil, err
	}
	h.r.fan.made.Add(1)
	return h.r.codec.WatchEvent(t, e.Type, &e.Obj, raw, h.key.proto)
}
