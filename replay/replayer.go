package replay

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
)

// Options configure a [Replayer]. The zero value replays exactly what was
// recorded, as fast as the client reads, answering unrecorded list and watch
// requests from the rebuilt object state, and idling at the end of a
// recorded watch like a live server.
type Options struct {
	// Matcher decides which recorded interaction answers a request.
	// Default [DefaultMatcher].
	Matcher Matcher
	// Speed scales recorded time: 1 is real time, 10 ten times faster. The
	// default 0 skips every recorded wait (latency and gaps between
	// frames), serving frames as fast as the client reads them; the idle
	// end of a watch then lasts the client's timeoutSeconds of clock time
	// unscaled, so a client that re-watches at once does not spin.
	// Negative values are refused.
	Speed float64
	// MaxGap caps every wait between frames (after Speed). Default 0: no cap.
	MaxGap time.Duration
	// Clock is the clock waits run on; tests pass a
	// k8s.io/utils/clock/testing.FakeClock and step it when HasWaiters().
	// Default: the real clock.
	Clock clock.Clock
	// Edits are applied after the cassette's own [cassettes.Header.Edits].
	Edits []Edit
	// Strict answers recorded requests only: no Kubernetes-aware fallback.
	// Default false.
	Strict bool
	// ErrorWhenExhausted makes a fully served replay fail fast instead of
	// idling: once [Replayer.Done] is closed, a request with no remaining
	// match fails with [ErrExhausted], and every stream that would idle
	// (a recorded watch that the recording stopped, or a fallback watch
	// with no events left) ends with a body read error wrapping
	// [ErrExhausted], so no test can hang. Default false.
	ErrorWhenExhausted bool
}

// ivState is the replay state of one recorded interaction.
type ivState struct {
	in       *cassettes.Interaction
	errs     []Edit // pending error edits, fired on successive attempts
	edits    []Edit // stream edits
	claimed  bool
	finished bool
	coll     *collection
	rvs      []int64 // per frame: the resourceVersion it moves coll to, 0 for none

	// Only while the recording is being read (see collection.observe):
	watch   bool     // a watch, else a list
	initial bool     // a streaming list still sending its initial events
	pending []object // its initial ADDED objects so far
	listBuf []byte   // a list body split across frames, joined
	broken  bool     // a frame made the collection's state unusable
}

// rv returns the resourceVersion frame i moves the collection to.
func (iv *ivState) rv(i int) int64 {
	if i < len(iv.rvs) {
		return iv.rvs[i]
	}
	return 0
}

// Replayer is an [http.RoundTripper] that answers requests from a cassette.
// It is safe for concurrent use. Create one with [New].
type Replayer struct {
	opts   Options
	clock  clock.Clock
	match  Matcher
	header cassettes.Header
	src    source
	ivs    []*ivState
	global []Edit // warps that apply to every interaction

	mu         sync.Mutex
	colls      map[string]*collection
	collOrder  []*collection
	done       chan struct{}
	doneClosed bool
}

var _ http.RoundTripper = (*Replayer)(nil)

// New returns a Replayer over c, held in memory. It resolves the
// cassette's [cassettes.Header.Edits] and opts.Edits against c and fails
// (wrapping [ErrBadEdit]) when one names an interaction or frame c does not
// have. Use [Open] for a cassette too large to hold.
func New(c *cassettes.Cassette, opts Options) (*Replayer, error) {
	if c == nil {
		return nil, errors.New("kwrec replay: nil cassette")
	}
	r, err := newReplayer(opts, memSource{})
	if err != nil {
		return nil, err
	}
	r.header = c.Header
	for _, in := range c.Interactions {
		iv := r.add(in)
		r.ivs = append(r.ivs, iv)
		if iv.coll != nil {
			for i, f := range in.Frames {
				iv.coll.observe(iv, i, f)
			}
		}
	}
	if err := r.ready(opts); err != nil {
		return nil, err
	}
	return r, nil
}

func newReplayer(opts Options, src source) (*Replayer, error) {
	if !(opts.Speed >= 0) || math.IsInf(opts.Speed, 0) { // NaN too
		return nil, fmt.Errorf("kwrec replay: speed %v is not a finite number >= 0; use 0 for as fast as possible, 1 for real time", opts.Speed)
	}
	r := &Replayer{opts: opts, clock: opts.Clock, match: opts.Matcher, src: src,
		colls: map[string]*collection{}, done: make(chan struct{})}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	if r.match == nil {
		r.match = DefaultMatcher
	}
	return r, nil
}

// ready finishes a Replayer once every interaction is in r.ivs and every
// frame observed: it seals the rebuilt object state and resolves the edits.
func (r *Replayer) ready(opts Options) error {
	byID := map[int]*ivState{}
	for _, iv := range r.ivs {
		byID[iv.in.ID] = iv
	}
	var edits []Edit
	for _, s := range r.header.Edits {
		e, err := ParseEdit(s)
		if err != nil {
			return fmt.Errorf("kwrec replay: cassette header: %w", err)
		}
		edits = append(edits, e)
	}
	edits = append(edits, opts.Edits...)
	for _, e := range edits {
		if err := r.resolve(e, byID); err != nil {
			return err
		}
	}
	// The object state is rebuilt now, while the recording is read, not
	// inside the first fallback request: a client (a WatchList informer)
	// would otherwise wait for the whole recording to be decoded mid-request.
	sort.SliceStable(r.collOrder, func(i, j int) bool { return r.collOrder[i].ivs[0].in.ID < r.collOrder[j].ivs[0].in.ID })
	for _, c := range r.collOrder {
		c.seal()
	}
	r.checkDoneLocked()
	return nil
}

// Header returns the cassette's header.
func (r *Replayer) Header() cassettes.Header { return r.header }

// Interactions returns the cassette's interactions in order, for reading
// only. For a Replayer made by [Open], frames carry their offsets but no
// Data: the bytes stay in the file.
func (r *Replayer) Interactions() []*cassettes.Interaction {
	out := make([]*cassettes.Interaction, len(r.ivs))
	for i, iv := range r.ivs {
		out[i] = iv.in
	}
	return out
}

// Close releases the cassette file of a Replayer made by [Open]; bodies
// still being served fail once it is closed. It is a no-op for [New].
func (r *Replayer) Close() error { return r.src.close() }

// add makes the replay state of in and files a JSON list or watch under its
// collection. Frames are observed separately.
func (r *Replayer) add(in *cassettes.Interaction) *ivState {
	iv := &ivState{in: in}
	if !strings.EqualFold(in.Request.Method, http.MethodGet) || in.Response == nil || in.Response.Status != http.StatusOK || !isJSON(in.Response.Header) {
		return iv
	}
	u, err := url.Parse(in.Request.URL)
	if err != nil {
		return iv
	}
	rp, ok := apipath.Parse(u.Path)
	if !ok || rp.Name != "" {
		return iv
	}
	c := r.colls[u.Path]
	if c == nil {
		c = &collection{path: u.Path, rp: rp}
		r.colls[u.Path] = c
		r.collOrder = append(r.collOrder, c)
	}
	c.ivs = append(c.ivs, iv)
	iv.coll = c
	q := u.Query()
	iv.watch = isWatch(q)
	iv.initial = iv.watch && q.Get("sendInitialEvents") == "true"
	return iv
}

// resolve attaches e to the interaction it names.
func (r *Replayer) resolve(e Edit, byID map[int]*ivState) error {
	if e.Kind == EditWarp && e.Request == 0 {
		r.global = append(r.global, e)
		return nil
	}
	var iv *ivState
	if e.Match != "" {
		n := 0
		for _, cand := range r.ivs {
			u, err := url.Parse(cand.in.Request.URL)
			if err == nil && strings.Contains(u.Path, e.Match) {
				if n++; n == e.Request {
					iv = cand
					break
				}
			}
		}
		if iv == nil {
			return fmt.Errorf("kwrec replay: %w %s: the cassette has %d interaction(s) whose path contains %q, not %d", ErrBadEdit, e, n, e.Match, e.Request)
		}
	} else if iv = byID[e.Request]; iv == nil {
		return fmt.Errorf("kwrec replay: %w %s: the cassette has no interaction %d (it has %d interactions)", ErrBadEdit, e, e.Request, len(r.ivs))
	}
	nf := len(iv.in.Frames)
	switch e.Kind {
	case EditError:
		iv.errs = append(iv.errs, e)
		return nil
	case EditWatchError, EditReset, EditTruncate:
		if iv.in.Response == nil {
			return fmt.Errorf("kwrec replay: %w %s: interaction %d has no response to cut", ErrBadEdit, e, iv.in.ID)
		}
		if e.After > nf {
			return fmt.Errorf("kwrec replay: %w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
	case EditPause, EditDrop, EditDup:
		if e.Frame > nf {
			return fmt.Errorf("kwrec replay: %w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
	}
	iv.edits = append(iv.edits, e)
	return nil
}

// Done returns a channel closed once the whole cassette has been served:
// every recorded interaction answered to its end (or closed by the client),
// and, unless [Options.Strict], every recorded resourceVersion of every
// collection delivered, whether by the recorded stream or by the fallback
// after an edit. A replay of an empty cassette is done at once.
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

// advance records that a frame moved c to resourceVersion rv.
func (r *Replayer) advance(c *collection, rv int64) {
	r.mu.Lock()
	if rv > c.progress {
		c.progress = rv
		if rv >= c.last {
			r.checkDoneLocked()
		}
	}
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
	if r.opts.Strict { // only the recorded interactions count
		for _, iv := range r.ivs {
			if !iv.finished {
				return
			}
		}
		r.doneClosed = true
		close(r.done)
		return
	}
	for _, c := range r.collOrder {
		if c.progress < c.last {
			return
		}
	}
	for _, iv := range r.ivs {
		if iv.finished || (!iv.claimed && iv.coll != nil) {
			continue
		}
		return
	}
	r.doneClosed = true
	close(r.done)
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
	p, err := r.planFor(req, got)
	if err != nil {
		return nil, err
	}
	if w := p.pace.wait(p.latency); w > 0 {
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
	gz := acceptsGzip(req.Header.Get("Accept-Encoding"))
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
		exhausted = r.done
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-exhausted:
		return fmt.Errorf("kwrec replay: %w (the recording stopped before this request got a response)", ErrExhausted)
	}
}

// acceptsGzip reports whether the caller itself asked for gzip. Go's
// transport adds "Accept-Encoding: gzip" below RoundTrip, so a RoundTripper
// sees the header only when the caller set it; server mode sees what the
// client sent.
func acceptsGzip(ae string) bool {
	for _, part := range strings.Split(ae, ",") {
		if strings.EqualFold(strings.TrimSpace(strings.SplitN(part, ";", 2)[0]), "gzip") {
			return !strings.Contains(strings.ReplaceAll(part, " ", ""), "q=0")
		}
	}
	return false
}

// planFor picks what answers got: a recorded interaction (or an error edit
// in front of it), the fallback, or an error.
func (r *Replayer) planFor(req *http.Request, got *cassettes.Request) (*plan, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var cands []candidate
	for _, iv := range r.ivs {
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
			e := iv.errs[0]
			iv.errs = iv.errs[1:]
			return r.errorPlan(iv, e), nil
		}
		iv.claimed = true
		return r.recordedPlan(iv, req), nil
	}
	if r.opts.ErrorWhenExhausted && r.doneClosed {
		return nil, noMatchError(ErrExhausted, got, cands, "")
	}
	extra := ""
	if !r.opts.Strict {
		p, why := r.fallback(req, got)
		if p != nil {
			return p, nil
		}
		extra = "(fallback: " + why + ")"
	}
	return nil, noMatchError(ErrNoMatch, got, cands, extra)
}

func (r *Replayer) pacing(iv *ivState) pacing {
	p := pacing{speed: r.opts.Speed, cap: r.opts.MaxGap}
	apply := func(e Edit) {
		if e.Kind != EditWarp {
			return
		}
		if e.Scale > 0 {
			p.speed *= e.Scale
		}
		if e.Cap > 0 && (p.cap == 0 || e.Cap < p.cap) {
			p.cap = e.Cap
		}
	}
	for _, e := range r.global {
		apply(e)
	}
	if iv != nil {
		for _, e := range iv.edits {
			apply(e)
		}
	}
	return p
}

// timeoutOf returns the request's timeoutSeconds.
func timeoutOf(req *http.Request) time.Duration {
	s := req.URL.Query().Get("timeoutSeconds")
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// recordedPlan builds the plan for a claimed interaction, edits applied.
func (r *Replayer) recordedPlan(iv *ivState, req *http.Request) *plan {
	in := iv.in
	p := &plan{iv: iv, pace: r.pacing(iv), timeout: timeoutOf(req)}
	if in.End != nil {
		p.endErr = in.End.Error
	}
	if in.Response == nil {
		p.end = endIdle
		if in.End != nil {
			if in.End.Reason == cassettes.EndReset {
				p.end = endReset
			}
			p.latency = in.End.At
		}
		return p
	}
	p.status, p.header, p.latency, p.coll = in.Response.Status, in.Response.Header, in.Response.Latency, iv.coll
	var last time.Duration
	if n := len(in.Frames); n > 0 {
		last = in.Frames[n-1].At
	}
	// The recorded end.
	p.end = endIdle
	if in.End != nil {
		p.endGap = in.End.At - last
		switch in.End.Reason {
		case cassettes.EndEOF:
			p.end = endEOF
		case cassettes.EndReset:
			p.end = endReset
		case cassettes.EndTimeout:
			if p.timeout == 0 {
				p.timeout = in.End.At
			}
		}
	}
	cut, cutAt := Edit{}, -1
	reframe := false
	for _, e := range iv.edits {
		switch e.Kind {
		case EditPause, EditDrop, EditDup:
			reframe = true
		case EditWatchError, EditReset, EditTruncate:
			if cutAt < 0 || e.After < cutAt {
				cut, cutAt = e, e.After
			}
		}
	}
	// Without frame edits the recorded frames are served as they are,
	// described on the fly (see plan.frame) rather than listed here.
	p.recN = len(in.Frames)
	if cutAt >= 0 {
		p.recN = min(p.recN, cutAt)
	}
	if reframe {
		p.frames, p.recN = editedFrames(iv, p.recN), 0
	}
	if cutAt >= 0 {
		p.endGap, p.endErr = 0, ""
		switch cut.Kind {
		case EditWatchError:
			p.frames = append(p.frames, outFrame{data: watchErrorFrame(p.header.Get("Content-Type"), cut)})
			p.end = endEOF
		case EditReset:
			p.end = endReset
			p.endErr = "injected by edit " + cut.String()
		case EditTruncate:
			p.end = endEOF
		}
	}
	return p
}

// recordedFrame describes frame i (0-based) of iv as served unedited.
func recordedFrame(iv *ivState, i int) outFrame {
	fs := iv.in.Frames
	gap := fs[i].At
	if i > 0 {
		gap -= fs[i-1].At
	}
	return outFrame{gap: gap, rec: i + 1, rv: iv.rv(i)}
}

// editedFrames lists the first n recorded frames of iv with its pause,
// drop and dup edits applied.
func editedFrames(iv *ivState, n int) []outFrame {
	type src struct {
		orig int // 1-based recorded frame number
		f    outFrame
	}
	frames := make([]src, n)
	for i := range frames {
		frames[i] = src{orig: i + 1, f: recordedFrame(iv, i)}
	}
	for _, e := range iv.edits {
		i := 0
		for i < len(frames) && frames[i].orig != e.Frame {
			i++
		}
		if i == len(frames) {
			continue
		}
		switch e.Kind {
		case EditPause:
			frames[i].f.pause += e.For
		case EditDrop:
			frames = append(frames[:i], frames[i+1:]...)
		case EditDup:
			d := frames[i]
			d.f.gap, d.f.pause = 0, 0
			frames = append(frames[:i+1], append([]src{d}, frames[i+1:]...)...)
		}
	}
	out := make([]outFrame, len(frames))
	for i, s := range frames {
		out[i] = s.f
	}
	return out
}

// errorPlan answers with the HTTP error of edit e.
func (r *Replayer) errorPlan(iv *ivState, e Edit) *plan {
	reason := e.Reason
	if reason == "" {
		reason = reasonFor(e.Status)
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	msg := fmt.Sprintf("kwrec: injected by edit %s", e)
	var lat time.Duration
	if iv.in.Response != nil {
		lat = iv.in.Response.Latency
	}
	return &plan{status: e.Status, header: h, latency: lat, pace: r.pacing(iv), end: endEOF,
		frames: []outFrame{{data: statusJSON(e.Status, reason, msg, e.RetryAfter)}}}
}

// watchErrorFrame is the ERROR watch event of edit e, in the stream's own
// encoding: a JSON line, or a length-prefixed protobuf WatchEvent.
func watchErrorFrame(contentType string, e Edit) []byte {
	reason := e.Reason
	if reason == "" {
		reason = reasonFor(e.Status)
	}
	msg := fmt.Sprintf("kwrec: injected by edit %s", e)
	if e.Status == http.StatusGone {
		// The watch cache's wording for a compacted version.
		msg = "too old resource version (" + msg + ")"
	}
	if mediaType(contentType) != "application/vnd.kubernetes.protobuf" {
		return watchEventJSON("ERROR", trimNL(statusJSON(e.Status, reason, msg, 0)))
	}
	st := &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Message: msg, Reason: metav1.StatusReason(reason), Code: int32(e.Status)}
	raw, _ := st.Marshal()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: "v1", Kind: "Status"}, Raw: raw}
	ub, _ := unk.Marshal()
	ev := metav1.WatchEvent{Type: "ERROR", Object: runtime.RawExtension{Raw: append([]byte("k8s\x00"), ub...)}}
	eb, _ := ev.Marshal()
	out := make([]byte, 4, 4+len(eb))
	binary.BigEndian.PutUint32(out, uint32(len(eb)))
	return append(out, eb...)
}
