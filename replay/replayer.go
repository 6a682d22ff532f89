package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/discovery"
	"github.com/kwrec/kwrec/internal/pace"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/internal/write"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Options configure a [Replayer]. The zero value replays exactly what was
// recorded, as fast as the client reads, answering every other request for
// a recorded collection from its timeline, and idling at the end of a
// watch like a live server.
type Options struct {
	// Matcher decides which recorded interaction answers a request
	// byte for byte. Default [DefaultMatcher].
	Matcher Matcher
	// Speed scales recorded time: 1 is real time, 10 ten times faster.
	// The default 0 skips every recorded wait and serves frames as fast as
	// the client reads; the idle end of a watch then lasts the client's
	// timeoutSeconds. Negative values are refused. Above 0, a watch that
	// falls far behind its schedule is ended cleanly, as kube-apiserver
	// ends a slow watcher (see the package documentation, "Time").
	Speed float64
	// MaxGap caps every wait between frames (after Speed). Default 0: no cap.
	MaxGap time.Duration
	// Clock is the clock waits run on; tests pass a
	// k8s.io/utils/clock/testing.FakeClock and step it when HasWaiters().
	// Default: the real clock.
	Clock clock.Clock
	// Edits are applied after the cassette's own [cassettes.Header.Edits].
	Edits []Edit
	// Strict answers recorded requests only, byte for byte: no timeline
	// views. Default false.
	Strict bool
	// ErrorWhenExhausted makes a fully served replay fail fast instead of
	// idling: once [Replayer.Consumed] is closed, a request with no remaining
	// match fails with [ErrExhausted], and every stream that would idle
	// (a recorded watch that the recording stopped, or a timeline watch
	// with no events left) ends with a body read error wrapping
	// [ErrExhausted], so no test can hang. Default false.
	ErrorWhenExhausted bool
	// Linger is how long, once [Replayer.Done] is closed, the clients must
	// have made no request before the cassette counts as consumed
	// ([Replayer.Consumed]): the code under test may still react to the
	// last recorded change. Waits run on Clock. Default 0: consumed when
	// done.
	Linger time.Duration
	// Settle paces recorded changes by the code under test instead of by
	// the recording: before a watch sends a recorded change no client has
	// been sent yet, it waits until Settle has passed since the last
	// request and since the previous recorded change. At speed 0 a
	// controller then reconciles each change before the next comes
	// (a workqueue merges changes to one object that come faster than it
	// reconciles), deterministically. Only recorded changes wait: the
	// code under test's own writes reach its watches at once, and one
	// ends the wait. Waits run on Clock (in a synctest bubble, see
	// replaytest.Run, they cost no wall time). Default 0: no wait.
	Settle time.Duration
	// Hold keeps every recorded change back until [Replayer.Play]: lists
	// and gets answer the state the recording starts with, watches send
	// their initial state, and then wait. A controller registers its
	// handlers after its informers start; without Hold, at speed 0 the
	// informers can run through the whole recording first, and the
	// handlers see only the final state. Writes of the code under test
	// are never held. Default false.
	Hold bool
	// Writes says what happens to a write that matches no recorded one.
	// Default [WritesStrict]: it fails with [ErrNoMatch].
	Writes WriteMode
	// DisableGarbageCollection, in [WritesOverlay] mode, leaves the
	// dependents of what the code under test deletes as they are, as a bare
	// API server and envtest do. By default kwrec collects them as
	// kube-controller-manager's garbage collector does on a cluster
	// (ownerReferences with background, foreground and orphan
	// propagation); see the package documentation, "Writes".
	DisableGarbageCollection bool
	// WritesOut, in [WritesOverlay] mode, receives every write applied, as
	// an interaction with its request and answer (see [Replayer.Writes]).
	// The Replayer does not close it. Default nil.
	WritesOut *cassettes.Writer
}

// Replayer is an [http.RoundTripper] that answers requests from a cassette.
// It is safe for concurrent use. Create one with [New] or [Open].
type Replayer struct {
	opts   Options
	clock  clock.Clock
	match  Matcher
	header cassettes.Header
	src    indexSource
	hist   *History // what r replays, shared with its other replays
	own    bool     // r closes hist (Open made both)
	ivs    []*ivState
	global []Edit // warps that apply to every interaction
	edits  []*editState
	codec  timeline.Codec
	fan    sharing      // what the watches share: hubs, budgets (fanout.go)
	alarms *pace.Alarms // the timers of the bodies' waits, one per instant

	// Forked from the History's (see fork), then read-only:
	timelines map[string]*timeline.Timeline // by collection path
	tlOrder   []*timeline.Timeline
	// allOf maps a namespace's timeline to the all-namespaces one
	// assembled from it, and that one to itself: a namespace's recorded
	// changes are delivered when either has served them.
	allOf map[*timeline.Timeline]*timeline.Timeline
	// gcMarked: a write may have left an object waiting for the garbage
	// collector (the orphan or foregroundDeletion finalizer).
	gcMarked atomic.Bool
	tables   map[string]*tableSet // kubectl's Table form of a collection, by path

	discOnce sync.Once // builds disc on the first discovery request
	disc     *discovery.Docs
	discErr  error

	writes  *write.Engine
	started time.Time
	rmu     sync.Mutex
	rand    *rand.Rand // names and uids of writes
	// activity is when the last request came, in clock UnixNano, for
	// Linger.
	activity atomic.Int64
	// changed is when the last recorded change was sent, for Settle.
	changed  atomic.Int64
	playing  chan struct{} // closed by Play, or at once without Hold
	playedAt time.Time     // when Play closed playing (read after it is closed)
	playOnce sync.Once
	consumed chan struct{} // closed Linger after done with no request
	closed   chan struct{} // closed by Close
	closeOne sync.Once

	mu         sync.Mutex // guards the fields below and ivState.claimed/finished/errs
	done       chan struct{}
	doneClosed bool
	empties    map[string]*timeline.Timeline // timelines of collections never recorded, by path

	cmu    sync.Mutex // guards counts
	counts []RequestCount

	wmu       sync.Mutex // guards written and writesErr
	written   []*cassettes.Interaction
	writesErr error
}

var _ http.RoundTripper = (*Replayer)(nil)

// New returns a Replayer over c, a cassette in memory: c is written in
// its text form and served from it exactly as [Open] serves a file. It
// resolves the cassette's [cassettes.Header.Edits] and opts.Edits against
// c and fails (wrapping [ErrBadEdit]) when one names an interaction or
// frame c does not have. Use [Open] for a cassette too large to hold.
func New(c *cassettes.Cassette, opts Options) (*Replayer, error) {
	if c == nil {
		return nil, errNilCassette
	}
	if err := opts.check(); err != nil { // before c is read
		return nil, err
	}
	h, err := loadCassette(c)
	if err != nil {
		return nil, err
	}
	return h.alone(opts)
}

// check refuses options no replay can take.
func (opts Options) check() error {
	if !(opts.Speed >= 0) || math.IsInf(opts.Speed, 0) { // NaN too
		return fmt.Errorf("speed %v is not a finite number >= 0; use 0 for as fast as possible, 1 for real time", opts.Speed)
	}
	if opts.Strict && opts.Writes == WritesOverlay {
		return errors.New("options Strict and WritesOverlay exclude each other: writes are applied to the timelines Strict turns off")
	}
	return nil
}

// alone returns the one Replayer of h, which closes h with it ([New],
// [Open]).
func (h *History) alone(opts Options) (*Replayer, error) {
	r, err := h.Replayer(opts)
	if err != nil {
		h.Close()
		return nil, err
	}
	r.own = true
	return r, nil
}

func newReplayer(opts Options, src indexSource) (*Replayer, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	r := &Replayer{opts: opts, clock: opts.Clock, match: opts.Matcher, src: src,
		timelines: map[string]*timeline.Timeline{}, done: make(chan struct{}),
		empties: map[string]*timeline.Timeline{}, playing: make(chan struct{}), consumed: make(chan struct{}), closed: make(chan struct{})}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	r.started = r.clock.Now()
	r.fan.clock, r.fan.since = r.clock, r.started
	r.alarms = pace.NewAlarms(r.clock)
	r.rand = rand.New(rand.NewPCG(1, 2))
	r.activity.Store(r.started.UnixNano())
	if !opts.Hold {
		r.Play()
	}
	if r.match == nil {
		r.match = DefaultMatcher
	}
	return r, nil
}

// resolveEdits resolves the cassette's edits and opts.Edits against the
// forked timelines and interactions, once r has them.
func (r *Replayer) resolveEdits(opts Options) error {
	var edits []Edit
	for _, s := range r.header.Edits {
		e, err := ParseEdit(s)
		if err != nil {
			return fmt.Errorf("cassette header: %w", err)
		}
		edits = append(edits, e)
	}
	edits = append(edits, opts.Edits...)
	byID := map[int]*ivState{}
	for _, iv := range r.ivs {
		byID[iv.in.ID] = iv
	}
	for _, e := range edits {
		if err := r.resolve(e, byID); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.checkDoneLocked()
	r.mu.Unlock()
	return nil
}

// Header returns the cassette's header.
func (r *Replayer) Header() cassettes.Header { return r.header }

// Interactions returns the cassette's interactions in order, for reading
// only. Their frames carry their arrival times but no Data: a replay reads
// the bytes from the cassette's index as it serves them, so a long
// recording's are not held twice; the frames are made at the first call.
func (r *Replayer) Interactions() []*cassettes.Interaction {
	r.hist.withSkeletons()
	out := make([]*cassettes.Interaction, len(r.ivs))
	for i, iv := range r.ivs {
		out[i] = iv.in
	}
	return out
}

// Close releases the cassette file of a Replayer made by [Open]; bodies
// still being served fail once it is closed.
func (r *Replayer) Close() error {
	r.closeOne.Do(func() { close(r.closed) })
	if r.own {
		return r.hist.Close()
	}
	return nil
}

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

// Config returns a rest.Config whose clients replay through r. Its Host is a
// placeholder: no connection is ever made.
func (r *Replayer) Config() *rest.Config {
	cfg := &rest.Config{Host: "https://kwrec.replay.invalid"}
	r.WrapConfig(cfg)
	return cfg
}

// WrapConfig makes every client built from cfg (typed, dynamic, informers)
// replay through r instead of connecting. It drops TLS settings, which a
// custom Transport cannot carry, and rate limiting, which would distort the
// recorded pacing.
func (r *Replayer) WrapConfig(cfg *rest.Config) {
	cfg.Transport = r
	cfg.WrapTransport = nil
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	cfg.QPS, cfg.Burst = -1, -1
	cfg.RateLimiter = nil
}

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
		for _, t := range r.tlOrder {
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
	d := r.allOf[t]
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
		for _, t := range r.tlOrder {
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
	return r.timelines[rp.Collection()] != nil || r.timelines[all.Collection()] != nil
}

// RoundTrip answers req from the cassette. Waits (latency, frame gaps)
// run on [Options.Clock] and end when req's context is cancelled.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	got := &cassettes.Request{Method: req.Method, URL: req.URL.String(), Header: req.Header}
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("kwrec replay: reading request body: %w", err)
		}
		got.Body = b
	}
	ctx := req.Context()
	r.activity.Store(r.clock.Now().UnixNano())
	r.count(req)
	p, err := r.planFor(req, got)
	if err != nil {
		return nil, err
	}
	if w := p.pace.Wait(p.latency); w > 0 {
		t := r.clock.NewTimer(w)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			r.finish(p.iv)
			return nil, ctx.Err()
		}
	}
	if p.status == 0 { // no response recorded: fail as the recording did
		return nil, r.noResponse(ctx, p)
	}
	h := p.header.Clone()
	if h == nil {
		h = http.Header{}
	}
	h.Del("Content-Length")
	h.Del("Transfer-Encoding")
	h.Del("Content-Encoding")
	// Go's transport adds "Accept-Encoding: gzip" below RoundTrip, so a
	// RoundTripper sees the header only when the caller set it; server
	// mode sees what the client sent.
	gz := wire.AcceptsEncoding(req.Header.Get("Accept-Encoding"), "gzip")
	if gz {
		h.Set("Content-Encoding", "gzip")
	}
	resp := &http.Response{
		Status:        fmt.Sprintf("%d %s", p.status, http.StatusText(p.status)),
		StatusCode:    p.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        h,
		ContentLength: -1,
		Request:       req,
	}
	resp.Body = newBody(r, ctx, p, r.clock.Now(), gz)
	return resp, nil
}

// noResponse replays an interaction that ended before any response.
func (r *Replayer) noResponse(ctx context.Context, p *plan) error {
	r.finish(p.iv)
	if p.end == endReset {
		return &resetError{recorded: p.endErr}
	}
	var exhausted <-chan struct{}
	if r.opts.ErrorWhenExhausted {
		exhausted = r.consumed
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-exhausted:
		return fmt.Errorf("kwrec replay: %w (the recording stopped before this request got a response)", ErrExhausted)
	}
}

// planFor picks what answers got: an error edit anchored on its resource,
// a recorded interaction byte for byte (or an error edit in front of it),
// a view of its collection's timeline, or an error.
func (r *Replayer) planFor(req *http.Request, got *cassettes.Request) (*plan, error) {
	if p := r.anchoredError(req); p != nil {
		return p, nil
	}
	r.mu.Lock()
	var cands []candidate
	for _, iv := range r.ivs {
		if r.overlay() && (iv.stream != nil || iv.table != nil) {
			// The world has the code's writes: every read of a recorded
			// collection is a view of its timeline.
			continue
		}
		diffs := r.match(got, iv.in)
		if diffs != nil {
			cands = append(cands, candidate{id: iv.in.ID, diffs: diffs})
			continue
		}
		if iv.claimed {
			cands = append(cands, candidate{id: iv.in.ID, used: true})
			continue
		}
		if len(iv.errs) > 0 {
			es := iv.errs[0]
			iv.errs = iv.errs[1:]
			r.mu.Unlock()
			es.fire("")
			return r.errorPlan(iv, es.Edit), nil
		}
		iv.claimed = true
		r.mu.Unlock()
		return r.recordedPlan(iv, req), nil
	}
	r.mu.Unlock()
	exhausted := r.opts.ErrorWhenExhausted && isClosed(r.consumed)
	if p := r.discoveryPlan(req); p != nil {
		return p, nil
	}
	if exhausted {
		return nil, noMatchError(ErrExhausted, got, cands, "")
	}
	extra := ""
	if r.overlay() {
		if p := r.writePlan(req, got.Body); p != nil {
			return p, nil
		}
	}
	if !r.opts.Strict {
		p, why := r.viewPlan(req)
		if p != nil {
			return p, nil
		}
		extra = "(" + why + ")"
	}
	return nil, noMatchError(ErrNoMatch, got, cands, extra)
}

// pacing returns how waits are scaled for iv (nil for a timeline view).
func (r *Replayer) pacing(iv *ivState) pace.Pacing {
	p := pace.Pacing{Speed: r.opts.Speed, Cap: r.opts.MaxGap}
	apply := func(e Edit) {
		if e.Kind != EditWarp {
			return
		}
		if e.Scale > 0 {
			p.Speed *= e.Scale
		}
		if e.Cap > 0 && (p.Cap == 0 || e.Cap < p.Cap) {
			p.Cap = e.Cap
		}
	}
	for _, e := range r.global {
		apply(e)
	}
	if iv != nil {
		for _, e := range iv.edits {
			apply(e.Edit)
		}
	}
	return p
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
