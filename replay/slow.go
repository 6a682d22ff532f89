package replay

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
// write it. A watch that is watchBuffer frames behind its schedule for
// longer than the budget allows is ended the same way. Nothing else ever
// waits for a slow watch here (each watch walks the timeline on its own
// and the hubs make frames ahead of the fastest one), so the rule is what
// bounds how far behind a replayed client can fall, as on a real server.
// At speed 0 there is no schedule (a watch is served as fast as it reads,
// like a watch the API server serves from its cache's history), and with
// Options.Settle the schedule is the code under test's: no watch is ever
// too slow then.

// watchBuffer is how many frames a watch may be behind its schedule:
// kube-apiserver's largest watcher channel for a resource without an
// index (maxWatchChanSizeWithoutIndex, sized for about a second of a busy
// resource's events) twice over, its input and its result channel.
const watchBuffer = 2 * 100

// The dispatch budget of kube-apiserver's cacher (time_budget.go).
const (
	budgetRefill = 50 * time.Millisecond // per second
	budgetMax    = 100 * time.Millisecond
)

// timeBudget is the cacher's timeBudget: how long, in all, the dispatch
// of events may wait for full watchers.
type timeBudget struct {
	mu     sync.Mutex
	clock  clock.PassiveClock
	budget time.Duration
	last   time.Time
}

// take returns the budget available now, which the caller then owns.
func (t *timeBudget) take() time.Duration {
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
func (t *timeBudget) give(d time.Duration) {
	if d <= 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.budget = min(t.budget+d, budgetMax)
}

// backlog follows, for a paced watch that is late, the waits of the
// watchBuffer frames after the one it takes, on a copy of its plan
// walking ahead: frame k+watchBuffer is due that much after frame k, and
// is the one that finds the watch's buffer full if frame k is not taken
// by then.
type backlog struct {
	ahead *plan
	lo    int             // the window is frames [lo, lo+n) of the plan
	waits []time.Duration // the window's waits, a ring of watchBuffer from head
	head  int
	n     int
	sum   time.Duration
	end   bool // the plan has no frame after the window
}

// newBacklog starts a window after frame k, the frame p gave last.
func newBacklog(p *plan, k int) *backlog {
	ahead := *p
	if p.steps != nil {
		ahead.steps = p.steps.Clone()
	}
	return &backlog{ahead: &ahead, lo: k + 1, waits: make([]time.Duration, watchBuffer)}
}

// slide moves the window to the frames after frame k and returns how
// long after frame k the last of them is due, and whether the window is
// full (the plan has that many frames left).
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
	f, ok := w.ahead.frame(w.lo + w.n)
	if !ok {
		w.end = true
		return
	}
	d := w.ahead.pace.wait(f.gap) + f.pause
	w.waits[(w.head+w.n)%len(w.waits)] = d
	w.n++
	w.sum += d
}

// paced reports whether the rule applies to b: a watch on a schedule.
func (b *body) paced() bool {
	return b.p.watch && b.p.pace.speed > 0 && b.r.opts.Settle <= 0
}

// keepUp applies kube-apiserver's rule as frame k, due at b.due, is taken
// now: if the frame watchBuffer after it has been due for longer than the
// budget allows, the watch was terminated then, and ends once the frames
// its buffer held (k up to the one before that) are out.
func (b *body) keepUp(k int) {
	if b.cutAt > 0 {
		return
	}
	late := b.r.clock.Since(b.due)
	if late <= 0 {
		b.backlog, b.held = nil, 0
		return
	}
	if b.backlog == nil {
		b.backlog = newBacklog(b.p, k)
	}
	span, full := b.backlog.slide(k)
	// How long that frame has found the buffer full, less how long the
	// dispatch already waited for this watch: the frames after the one it
	// waited for were dispatched that much later.
	over := late - span - b.held
	if !full || over <= 0 {
		return
	}
	bud := b.r.fan.budget(b.p.tl)
	avail := bud.take()
	if over <= avail {
		bud.give(avail - over)
		b.held += over
		return
	}
	b.cutAt = k + watchBuffer
	b.r.fan.terminated.Add(1)
}
