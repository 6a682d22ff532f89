package replay

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/discovery"
	"github.com/kwrec/kwrec/replay/internal/overlay"
)

// How far a replay has got: Play releases what Hold keeps back, Done
// closes once every recorded change and interaction is served, Consumed
// once the clients then stay idle for Linger.

// progress is how far a replay has got. Its lock guards when it is done
// and each interaction's record (claimed, finished, errs).
type progress struct {
	clock  clock.Clock
	strict bool          // Options.Strict: only the recorded interactions count
	linger time.Duration // Options.Linger
	world  *overlay.World
	ivs    []*ivState
	closed <-chan struct{} // closed by Replayer.Close

	// activity is when the last request came, in clock UnixNano, for
	// Linger and Settle.
	activity atomic.Int64
	// changed is when the last recorded change was sent, for Settle.
	changed  atomic.Int64
	playing  chan struct{} // closed by Play, or at once without Hold
	playedAt time.Time     // when Play closed playing (read after it is closed)
	playOnce sync.Once
	consumed chan struct{} // closed Linger after done with no request, or by Replayer.Close
	consume  func()        // closes consumed once

	mu         sync.Mutex
	done       chan struct{}
	doneClosed bool
}

// newProgress returns the progress of a replay that starts now.
func newProgress(c clock.Clock, opts Options, closed <-chan struct{}) *progress {
	pr := &progress{clock: c, strict: opts.Strict, linger: opts.Linger, closed: closed,
		playing: make(chan struct{}), consumed: make(chan struct{}), done: make(chan struct{})}
	pr.consume = sync.OnceFunc(func() { close(pr.consumed) })
	pr.activity.Store(c.Now().UnixNano())
	if !opts.Hold {
		pr.play()
	}
	return pr
}

// check closes done if the replay is done.
func (pr *progress) check() {
	pr.mu.Lock()
	pr.checkDoneLocked()
	pr.mu.Unlock()
}

// Play releases the recorded changes [Options.Hold] keeps back. Call it
// once the code under test is ready, for a controller once its manager
// has started and its caches have synced. It is a no-op without Hold and
// after the first call.
func (r *Replayer) Play() { r.prog.play() }

func (pr *progress) play() {
	pr.playOnce.Do(func() {
		pr.playedAt = pr.clock.Now()
		close(pr.playing)
	})
}

// Consumed returns a channel closed once the replay is [Replayer.Done] and
// the clients have then made no request for [Options.Linger]: every
// recorded change delivered and the code under test idle; or once the
// Replayer is closed, when nothing more is served. A test that
// replays into code that keeps watching waits for it (or passes
// ErrorWhenExhausted, which ends the watches then).
func (r *Replayer) Consumed() <-chan struct{} { return r.prog.consumed }

// linger closes consumed once the clients have been idle for Linger.
func (pr *progress) lingerOn() {
	for {
		idle := pr.clock.Since(time.Unix(0, pr.activity.Load()))
		if idle >= pr.linger {
			pr.consume()
			return
		}
		t := pr.clock.NewTimer(pr.linger - idle)
		select {
		case <-t.C():
		case <-pr.closed:
			t.Stop()
			return
		}
	}
}

// Done returns a channel closed once the whole cassette has been served:
// every recorded interaction answered to its end (or closed by the client),
// and, unless [Options.Strict], every recorded resourceVersion of every
// collection delivered, whether by a recorded stream or a timeline view.
// A replay of an empty cassette is done at once.
func (r *Replayer) Done() <-chan struct{} { return r.prog.done }

// advance records that a frame moved t to resourceVersion rv.
func (pr *progress) advance(t *timeline.Timeline, rv int64) {
	if t.Advance(rv) {
		pr.mu.Lock()
		pr.checkDoneLocked()
		pr.mu.Unlock()
	}
}

// reached records that a timeline reached its last recorded
// resourceVersion.
func (pr *progress) reached() {
	pr.mu.Lock()
	pr.checkDoneLocked()
	pr.mu.Unlock()
}

// finish records that iv has been served to its end.
func (pr *progress) finish(iv *ivState) {
	if iv == nil {
		return
	}
	pr.mu.Lock()
	if !iv.finished {
		iv.finished = true
		pr.checkDoneLocked()
	}
	pr.mu.Unlock()
}

func (pr *progress) checkDoneLocked() {
	if pr.doneClosed {
		return
	}
	if !pr.strict { // every timeline delivered to its end
		for _, t := range pr.world.Recorded() {
			if !pr.delivered(t) {
				return
			}
		}
	}
	for _, iv := range pr.ivs {
		if iv.finished || (!iv.claimed && pr.optional(iv)) {
			continue
		}
		return
	}
	pr.doneClosed = true
	close(pr.done)
	if pr.linger > 0 {
		// Linger counts from done, not from the last request: the
		// clients may have been idle for longer while Hold held the
		// recorded changes, and need Linger to react to the last one.
		pr.activity.Store(pr.clock.Now().UnixNano())
		go pr.lingerOn()
	} else {
		pr.consume()
	}
}

// delivered reports whether t's recorded changes have all been served,
// through t or through the all-namespaces timeline assembled from it (an
// assembled one counts through its namespaces').
func (pr *progress) delivered(t *timeline.Timeline) bool {
	d := pr.world.AllOf(t)
	switch {
	case d == t:
		return true
	case t.Broken() != "" || t.Progress() >= t.Last():
		return true
	}
	return d != nil && d.Progress() >= t.Last()
}

// pending says what keeps [Replayer.Done] open: each collection not yet
// delivered to its last recorded resourceVersion, and each recorded
// interaction not yet served to its end that the replay needs. Empty once
// done.
func (pr *progress) pending() []string {
	pr.mu.Lock()
	defer pr.mu.Unlock()
	var out []string
	if !pr.strict {
		for _, t := range pr.world.Recorded() {
			if !pr.delivered(t) {
				out = append(out, fmt.Sprintf("%s: delivered up to resourceVersion %d of %d", t.Path, t.Recorded(t.Progress()), t.Recorded(t.Last())))
			}
		}
	}
	for _, iv := range pr.ivs {
		switch {
		case iv.finished || (!iv.claimed && pr.optional(iv)):
		case iv.claimed:
			out = append(out, fmt.Sprintf("interaction %d (%s %s): being served", iv.in.ID, iv.in.Request.Method, iv.in.Request.URL))
		default:
			out = append(out, fmt.Sprintf("interaction %d (%s %s): not asked for", iv.in.ID, iv.in.Request.Method, iv.in.Request.URL))
		}
	}
	return out
}

// optional reports whether a replay can be done without iv served: a GET
// of a collection that a timeline answers instead (unless Strict), and
// what kwrec record records for other clients than the one recorded: the
// server's discovery and the Table form of a collection.
func (pr *progress) optional(iv *ivState) bool {
	if !strings.EqualFold(iv.in.Request.Method, http.MethodGet) {
		return false
	}
	if iv.table != nil || discovery.IsPath(pathOf(iv.in.Request.URL)) {
		return true
	}
	if pr.strict {
		return false
	}
	if iv.stream != nil {
		return true
	}
	// A failed GET of a recorded collection (a reset while the server was
	// down, a 5xx): the timeline answers the client's retries, which need
	// not repeat it.
	rp, ok := apipath.Parse(pathOf(iv.in.Request.URL))
	if !ok {
		return false
	}
	all := rp
	all.Namespace, all.Name = "", ""
	return pr.world.Timeline(rp.Collection()) != nil || pr.world.Timeline(all.Collection()) != nil
}
