package replay

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/match"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/pace"
)

// Replayer is an [http.RoundTripper] that answers requests from a cassette.
// It is safe for concurrent use. Create one with [New] or [Open].
type Replayer struct {
	opts  Options  // with Clock and Matcher defaulted
	hist  *History // what r replays, shared with its other replays
	own   bool     // r closes hist (Open made both)
	ivs   []*ivState
	edits editSet
	// serving is what the bodies r serves ask of it (body.go): its clock,
	// progress, views and what the watches share.
	serving

	// world is the replay's collections, forked from the History's (see
	// fork); writer applies writes to it, in Overlay mode only.
	world  *overlay.World
	writer *overlay.Writer

	started time.Time
	closed  signal      // fired by Close
	wc      *WorldClock // Options.WorldClock, else nil

	counts requestCounts
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

func newReplayer(opts Options, h *History) (*Replayer, error) {
	if err := opts.check(); err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Matcher == nil {
		opts.Matcher = DefaultMatcher
	}
	r := &Replayer{opts: opts, hist: h, closed: newSignal()}
	r.serving = serving{clock: opts.Clock, src: h.src, settle: opts.Settle, settled: opts.Settled, exhaust: opts.ErrorWhenExhausted}
	r.started = r.clock.Now()
	r.fan.clock, r.fan.since = r.clock, r.started
	r.alarms = pace.NewAlarms(r.clock)
	r.prog = newProgress(r.clock, opts, r.closed.C())
	return r, nil
}

// Header returns the cassette's header.
func (r *Replayer) Header() cassettes.Header { return r.hist.header }

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
// still being served fail once it is closed, and [Replayer.Consumed] is
// closed.
func (r *Replayer) Close() error {
	r.closed.fire()
	r.prog.consume() // nothing more is served: a test waiting for Consumed goes on
	if r.own {
		return r.hist.Close()
	}
	return nil
}

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

// RoundTrip answers req from the cassette. Waits (latency, frame gaps)
// run on [Options.Clock] and end when req's context is cancelled.
func (r *Replayer) RoundTrip(req *http.Request) (*http.Response, error) {
	got, err := requestOf(req)
	if err != nil {
		return nil, err
	}
	ctx := req.Context()
	r.prog.activity.Store(r.clock.Now().UnixNano())
	r.counts.add(req)
	if r.wc != nil {
		r.wc.sync()
	}
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
			r.prog.finish(p.iv)
			return nil, ctx.Err()
		}
	}
	if p.status == 0 { // no response recorded: fail as the recording did
		return nil, r.noResponse(ctx, p)
	}
	return r.response(req, p), nil
}

// requestOf is req as the Matcher sees it, its body read.
func requestOf(req *http.Request) (*cassettes.Request, error) {
	got := &cassettes.Request{Method: req.Method, URL: req.URL.String(), Header: req.Header}
	if req.Body != nil && req.Body != http.NoBody {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("kwrec replay: reading request body: %w", err)
		}
		got.Body = b
	}
	return got, nil
}

// response answers req with p's head and a body that serves p.
func (r *Replayer) response(req *http.Request, p *plan) *http.Response {
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
	resp.Body = newBody(&r.serving, req.Context(), p, r.clock.Now(), gz)
	return resp
}

// noResponse replays an interaction that ended before any response.
func (r *Replayer) noResponse(ctx context.Context, p *plan) error {
	r.prog.finish(p.iv)
	if p.end == endReset {
		return &resetError{recorded: p.endErr}
	}
	var exhausted <-chan struct{}
	if r.opts.ErrorWhenExhausted {
		exhausted = r.prog.consumed
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
// An edit that cuts the stream after its first frames applies to
// whichever plan answers.
func (r *Replayer) planFor(req *http.Request, got *cassettes.Request) (p *plan, err error) {
	if cut, after := r.edits.cut(req); cut != nil {
		defer func() {
			if p != nil {
				p.cut, p.cutAfter = cut, after
			}
		}()
	}
	if p := r.anchoredError(req); p != nil {
		return p, nil
	}
	p, cands := r.recordedMatch(req, got)
	if p != nil {
		return p, nil
	}
	exhausted := r.opts.ErrorWhenExhausted && isClosed(r.prog.consumed)
	if p := r.views.discoveryPlan(req); p != nil {
		return p, nil
	}
	if exhausted {
		return nil, match.NoMatch(ErrExhausted, got, cands, "")
	}
	extra := ""
	if r.writer != nil { // Overlay mode
		if a, ok := r.writer.Write(req, got.Body); ok {
			return r.views.answerPlan(a), nil
		}
	}
	if !r.opts.Strict {
		p, why := r.views.viewPlan(req)
		if p != nil {
			return p, nil
		}
		extra = "(" + why + ")"
	}
	return nil, match.NoMatch(ErrNoMatch, got, cands, extra)
}

// recordedMatch claims the first recorded interaction that answers got
// and returns its plan (or that of an error edit in front of it); else
// nil and every candidate, for the error.
func (r *Replayer) recordedMatch(req *http.Request, got *cassettes.Request) (*plan, []match.Candidate) {
	r.prog.mu.Lock()
	var cands []match.Candidate
	for _, iv := range r.ivs {
		if (r.opts.overlay() || r.opts.WorldClock) && (iv.stream != nil || iv.table != nil) {
			// The world has the code's writes, or is at the world
			// clock's time: every read of a recorded collection is a
			// view of its timeline.
			continue
		}
		diffs := r.opts.Matcher(got, iv.in)
		if diffs != nil {
			cands = append(cands, match.Candidate{ID: iv.in.ID, Diffs: diffs})
			continue
		}
		if iv.claimed {
			cands = append(cands, match.Candidate{ID: iv.in.ID, Used: true})
			continue
		}
		if len(iv.errs) > 0 {
			es := iv.errs[0]
			iv.errs = iv.errs[1:]
			r.prog.mu.Unlock()
			es.Fire("")
			return r.errorPlan(iv, es.Edit), nil
		}
		iv.claimed = true
		r.prog.mu.Unlock()
		return r.recordedPlan(iv, req), nil
	}
	r.prog.mu.Unlock()
	return nil, cands
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
	for _, e := range r.edits.global {
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

// signal is a channel closed once, by the first fire.
type signal struct {
	once *sync.Once
	ch   chan struct{}
}

func newSignal() signal { return signal{once: new(sync.Once), ch: make(chan struct{})} }

func (s signal) fire()              { s.once.Do(func() { close(s.ch) }) }
func (s signal) C() <-chan struct{} { return s.ch }
