package replay

import (
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/discovery"
)

// How far a replay has got: Play releases what Hold keeps back, Done
// closes once every recorded change and interaction is served, Consumed
// once the clients then stay idle for Linger.

// Play releases the recorded changes [Options.Hold] keeps back. Call it
// once the code under test is ready, for a controller once its manager
// has started and its caches have synced. It is a no-op without Hold and
// after the first call.
func (r *Replayer) Play() {
	r.playOnce.Do(func() {
		r.playedAt = r.clock.Now()
		close(r.playing)
	})
}

// Consumed returns a channel closed once the replay is [Replayer.Done] and
// the clients have then made no request for [Options.Linger]: every
// recorded change delivered and the code under test idle. A test that
// replays into code that keeps watching waits for it (or passes
// ErrorWhenExhausted, which ends the watches then).
func (r *Replayer) Consumed() <-chan struct{} { return r.consumed }

// linger closes consumed once the clients have been idle for Linger.
func (r *Replayer) linger() {
	for {
		idle := r.clock.Since(time.Unix(0, r.activity.Load()))
		if idle >= r.opts.Linger {
			close(r.consumed)
			return
		}
		t := r.clock.NewTimer(r.opts.Linger - idle)
		select {
		case <-t.C():
		case <-r.closed:
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
func (r *Replayer) Done() <-chan struct{} { return r.done }

// advance records that a frame moved t to resourceVersion rv.
func (r *Replayer) advance(t *timeline.Timeline, rv int64) {
	if t.Advance(rv) {
		r.mu.Lock()
		r.checkDoneLocked()
		r.mu.Unlock()
	}
}

// reached records that a timeline reached its last recorded
// resourceVersion.
func (r *Replayer) reached() {
	r.mu.Lock()
	r.checkDoneLocked()
	r.mu.Unlock()
}

// finish records that iv has been served to its end.
func (r *Replayer) finish(iv *ivState) {
	if iv == nil {
		return
	}
	r.mu.Lock()
	if !iv.finished {
		iv.finished = true
		r.checkDoneLocked()
	}
	r.mu.Unlock()
}

func (r *Replayer) checkDoneLocked() {
	if r.doneClosed {
		return
	}
	if !r.opts.Strict { // every timeline delivered to its end
		for _, t := range r.world.Recorded() {
			if !r.delivered(t) {
				return
			}
		}
	}
	for _, iv := range r.ivs {
		if iv.finished || (!iv.claimed && r.optional(iv)) {
			continue
		}
		return
	}
	r.doneClosed = true
	close(r.done)
	if r.opts.Linger > 0 {
		// Linger counts from done, not from the last request: the
		// clients may have been idle for longer while Hold held the
		// recorded changes, and need Linger to react to the last one.
		r.activity.Store(r.clock.Now().UnixNano())
		go r.linger()
	} else {
		close(r.consumed)
	}
}

// delivered reports whether t's recorded changes have all been served,
// through t or through the all-namespaces timeline assembled from it (an
// assembled one counts through its namespaces').
func (r *Replayer) delivered(t *timeline.Timeline) bool {
	d := r.world.AllOf(t)
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
func (r *Replayer) pending() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if !r.opts.Strict {
		for _, t := range r.world.Recorded() {
			if !r.delivered(t) {
				out = append(out, fmt.Sprintf("%s: delivered up to resourceVersion %d of %d", t.Path, t.Recorded(t.Progress()), t.Recorded(t.Last())))
			}
		}
	}
	for _, iv := range r.ivs {
		switch {
		case iv.finished || (!iv.claimed && r.optional(iv)):
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
func (r *Replayer) optional(iv *ivState) bool {
	if !strings.EqualFold(iv.in.Request.Method, http.MethodGet) {
		return false
	}
	if iv.table != nil || discovery.IsPath(pathOf(iv.in.Request.URL)) {
		return true
	}
	if r.opts.Strict {
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
	return r.world.Timeline(rp.Collection()) != nil || r.world.Timeline(all.Collection()) != nil
}
