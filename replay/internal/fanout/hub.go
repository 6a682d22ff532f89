package fanout

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// Budget is how many bytes of frames a hub keeps: about a minute of a
// busy collection (1,000 events a second of 1 KB), so that watches
// started apart or paced apart share it.
const Budget = 64 << 20

// ahead is how many frames a hub makes ahead of the furthest watch.
const ahead = 64

// ErrClosed is returned by Hub.Frame when the watch waiting for a frame
// closed.
var ErrClosed = errors.New("the watch closed")

// Maker makes the frames of one hub, in event order, on the hub's
// goroutine.
type Maker interface {
	// Make returns the frame of event i. A frame it cannot make is left
	// empty: each watch then fails on it itself.
	Make(i int) ([]byte, error)
	// Close releases what Make read from, once the hub stops.
	Close()
}

// Hubs holds the hubs of a replay, one per key (a collection and an
// encoding). Its zero value is ready to use.
type Hubs[K comparable] struct {
	mu   sync.Mutex
	hubs map[K]*Hub
}

// Hub makes the frames of one collection's events in one encoding.
type Hub struct {
	key   any
	users int // watches attached; guarded by Hubs.mu
	maker Maker
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

// Attach returns the hub of key, whose collection has n events, for a
// watch whose first event is from; it starts the hub, with the Maker
// newMaker returns, for the first watch. The watch calls Detach when done.
func (hs *Hubs[K]) Attach(key K, n, from int, newMaker func() Maker) *Hub {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	h := hs.hubs[key]
	if h == nil {
		h = &Hub{key: key, maker: newMaker(), slots: make([]atomic.Pointer[[]byte], n), lo: min(from, n),
			wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		h.made.Store(int64(h.lo))
		ch := make(chan struct{})
		h.ready.Store(&ch)
		if hs.hubs == nil {
			hs.hubs = map[K]*Hub{}
		}
		hs.hubs[key] = h
		go h.run()
	}
	h.users++
	return h
}

// Detach says a watch is done with h; the last one stops it.
func (hs *Hubs[K]) Detach(h *Hub) {
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if h.users--; h.users == 0 {
		delete(hs.hubs, h.key.(K))
		close(h.stop)
	}
}

// Frame returns the frame of event i, waiting for the hub to make it, or
// nil when the hub does not hold it: the caller then makes its own. A
// close of closed ends the wait with ErrClosed.
func (h *Hub) Frame(ctx context.Context, closed <-chan struct{}, i int) ([]byte, error) {
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
			return nil, ErrClosed
		case <-h.done:
			return nil, nil
		}
	}
}

// Has reports whether frame i can be had without waiting.
func (h *Hub) Has(i int) bool { return i < h.lo || int64(i) < h.made.Load() }

// ask makes the hub make frames up to event i (and some more).
func (h *Hub) ask(i int) {
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

// run makes frames in event order, up to ahead past the furthest watch,
// keeping Budget bytes of them.
func (h *Hub) run() {
	defer close(h.done)
	defer h.maker.Close()
	kept, oldest := 0, h.lo
	for {
		select {
		case <-h.stop:
			return
		case <-h.wake:
		}
		for next := int(h.made.Load()); next < len(h.slots) && int64(next) < h.want.Load()+ahead; next++ {
			select {
			case <-h.stop:
				return
			default:
			}
			if data, err := h.maker.Make(next); err == nil {
				h.slots[next].Store(&data)
				kept += len(data)
			}
			for kept > Budget && oldest < next {
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
