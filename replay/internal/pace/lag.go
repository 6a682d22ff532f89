package pace

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// A watch that cannot keep up.
//
// kube-apiserver's watch cache (k8s.io/apiserver/pkg/storage/cacher)
// hands every event to each watcher's buffer, a channel of up to 100
// events (then the watcher's own goroutine moves them to a result channel
// of the same size, which the HTTP handler writes out). When a watcher's
// buffer is full as an event comes, the dispatcher waits for it, but only
// within a time budget shared by all its watchers (up to 100 ms, refilled
// by 50 ms every second: timeBudget); a watcher still full then is
// terminated (cacheWatcher.add, then forget): the client gets what its
// buffers held and a clean end of the stream, no ERROR event, and
// client-go's reflector watches again from the last resourceVersion it
// got. The others never wait longer than that budget.
//
// A replayed watch is paced by the recording, so the same rule applies to
// it at a speed above 0: each frame is "dispatched" when it is due on the
// watch's schedule, and the watch "takes" it when its handler is ready to
// write it. A watch that is WatchBuffer frames behind its schedule for
// longer than the budget allows is ended the same way. Nothing else ever
// waits for a slow watch in a replay (each watch walks its timeline on its
// own, and the frames it shares are made ahead of the fastest one), so the
// rule is what bounds how far behind a replayed client can fall, as on a
// real server. At speed 0 there is no schedule (a watch is served as fast
// as it reads, like a watch the API server serves from its cache's
// history), and a replay that waits for the code under test to settle
// has no schedule either: no watch is ever too slow then.

// WatchBuffer is how many frames a watch may be behind its schedule:
// kube-apiserver's largest watcher channel for a resource without an
// index (maxWatchChanSizeWithoutIndex, sized for about a second of a busy
// resource's events) twice over, its input and its result channel.
const WatchBuffer = 2 * 100

// The dispatch budget of kube-apiserver's cacher (time_budget.go).
const (
	budgetRefill = 50 * time.Millisecond // per second
	budgetMax    = 100 * time.Millisecond
)

// Budget is the cacher's timeBudget: how long, in all, the dispatch of a
// resource's events may wait for full watchers.
type Budget struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	budget time.Duration
	last   time.Time
}

// NewBudget returns an empty budget that fills on c from since.
func NewBudget(c clock.PassiveClock, since time.Time) *Budget {
	return &Budget{clock: c, last: since}
}

// take returns the budget available now, which the caller then owns.
func (t *Budget) take() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.clock.Now()
	if !t.last.IsZero() && now.After(t.last) {
		t.budget += time.Duration(now.Sub(t.last).Seconds() * float64(budgetRefill))
	}
	t.budget = min(t.budget, budgetMax)
	t.last = now
	b := t.budget
	t.budget = 0
	return b
}

// give returns an unused part of what take returned.
func (t *Budget) give(d time.Duration) {
	if d <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.budget = min(t.budget+d, budgetMax)
}

// Schedule walks a watch's frames in order from some frame on.
type Schedule interface {
	// Next returns the wait before the next frame (its paced gap), false
	// past the last.
	Next() (time.Duration, bool)
}

// Lag is where one paced watch stands under the rule. The zero Lag is a
// watch on schedule.
type Lag struct {
	// cutAt > 0 ends the watch before frame cutAt: it could not keep up,
	// which backlog tells; held is how long the dispatch of its frames
	// has waited for it so far.
	cutAt   int
	backlog *backlog
	held    time.Duration
}

// Over reports whether the watch was ended before frame next.
func (l *Lag) Over(next int) bool { return l.cutAt > 0 && next >= l.cutAt }

// KeepUp applies the rule as frame k is taken late after it was due: if
// the frame WatchBuffer after it has been due for longer than the budget
// allows, the watch was terminated then, and ends once the frames its
// buffer held (k up to the one before that) are out; KeepUp then reports
// true, once. ahead gives the frames after k, walked on a copy of the
// watch's schedule; budget the dispatch budget of the watch's resource.
// Each is asked for only when needed.
func (l *Lag) KeepUp(k int, late time.Duration, ahead func() Schedule, budget func() *Budget) bool {
	if l.cutAt > 0 {
		return false
	}
	if late <= 0 {
		l.backlog, l.held = nil, 0
		return false
	}
	if l.backlog == nil {
		l.backlog = &backlog{ahead: ahead(), lo: k + 1, waits: make([]time.Duration, WatchBuffer)}
	}
	span, full := l.backlog.slide(k)
	// How long that frame has found the buffer full, less how long the
	// dispatch already waited for this watch: the frames after the one it
	// waited for were dispatched that much later.
	over := late - span - l.held
	if !full || over <= 0 {
		return false
	}
	bud := budget()
	avail := bud.take()
	if over <= avail {
		bud.give(avail - over)
		l.held += over
		return false
	}
	l.cutAt = k + WatchBuffer
	return true
}

// backlog follows, for a paced watch that is late, the waits of the
// WatchBuffer frames after the one it takes, on a copy of its schedule
// walking ahead: frame k+WatchBuffer is due that much after frame k, and
// is the one that finds the watch's buffer full if frame k is not taken
// by then.
type backlog struct {
	ahead Schedule        // walks frames lo+n, lo+n+1, ...
	lo    int             // the window is frames [lo, lo+n)
	waits []time.Duration // the window's waits, a ring of WatchBuffer from head
	head  int
	n     int
	sum   time.Duration
	end   bool // the schedule has no frame after the window
}

// slide moves the window to the frames after frame k and returns how
// long after frame k the last of them is due, and whether the window is
// full (the schedule has that many frames left).
func (w *backlog) slide(k int) (time.Duration, bool) {
	for ; w.lo <= k; w.lo++ {
		if w.n == 0 {
			w.fetch() // walk past it: the copy is walked in order
			w.n, w.sum = 0, 0
			continue
		}
		w.sum -= w.waits[w.head]
		w.head = (w.head + 1) % len(w.waits)
		w.n--
	}
	for w.n < len(w.waits) && !w.end {
		w.fetch()
	}
	return w.sum, w.n == len(w.waits)
}

// fetch adds the next frame of the copy to the window.
func (w *backlog) fetch() {
	d, ok := w.ahead.Next()
	if !ok {
		w.end = true
		return
	}
	w.waits[(w.head+w.n)%len(w.waits)] = d
	w.n++
	w.sum += d
}
