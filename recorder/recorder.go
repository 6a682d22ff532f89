package recorder

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/recorder/internal/framing"
)

// Sentinel errors; match them with [errors.Is].
var (
	// ErrClosed is returned by requests made after [Recorder.Close]: stop
	// the clients (informers, proxies) before closing the recorder.
	ErrClosed = errors.New("recorder: closed; requests after Close are not sent")
	// ErrStopped is what a response body reads after [Recorder.Close] ended
	// its stream (the cassette records [cassettes.EndStopped]).
	ErrStopped = errors.New("recorder: recording stopped")
)

// Options configure a [Recorder]. The zero value records everything with
// redaction on, timed by the real clock.
type Options struct {
	// Clock timestamps requests, response heads and frames. The cassette
	// starts when [New] is called. Default: the real clock.
	Clock clock.PassiveClock
	// Redactions are extra rules, run in order after the built-in ones
	// (see [DefaultRedactions]); their names are listed by [Header].
	Redactions []Redaction
	// DisableRedaction turns the built-in redactions off. Only an explicit
	// true does; Redactions still run.
	DisableRedaction bool
	// MaxBuffered bounds the bytes read from the server and not yet read
	// by the client; past it the recorder stops reading from the server
	// until the client catches up (and arrival times are then late by
	// that wait). Default 64 MiB.
	MaxBuffered int
}

// defaultMaxBuffered is [Options.MaxBuffered]'s default.
const defaultMaxBuffered = 64 << 20

// Recorder records HTTP traffic to a [cassettes.Writer]: plug it into a
// [rest.Config] with [Recorder.WrapConfig], or wrap any transport with
// [Recorder.Wrap]. It is safe for concurrent use by any number of
// requests. Response bodies are pumped from the server by one goroutine
// per request, which timestamps and frames the bytes as they arrive and
// hands them to the client at once.
//
// Close the recorder before the [cassettes.Writer]: Close ends the streams
// still open but does not close the Writer, which the caller created.
type Recorder struct {
	w     *cassettes.Writer
	opts  Options
	clock clock.PassiveClock
	start time.Time
	rules []Redaction

	mu      sync.Mutex
	closed  bool
	open    map[*stream]struct{}
	errs    []error
	lastErr string
	tokens  map[string]struct{} // bearer tokens seen, scrubbed everywhere
	wg      sync.WaitGroup
}

// New returns a recorder writing to w. The cassette's time zero is now,
// by opts.Clock.
func New(w *cassettes.Writer, opts Options) (*Recorder, error) {
	if w == nil {
		return nil, errors.New("recorder: nil cassette writer; create one with cassettes.Create")
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	if opts.MaxBuffered <= 0 {
		opts.MaxBuffered = defaultMaxBuffered
	}
	r := &Recorder{w: w, opts: opts, clock: clk, start: clk.Now(), open: map[*stream]struct{}{}, tokens: map[string]struct{}{}}
	if !opts.DisableRedaction {
		r.rules = append(r.rules, DefaultRedactions()...)
	}
	r.rules = append(r.rules, opts.Redactions...)
	return r, nil
}

// Wrap returns a RoundTripper that sends requests through rt (nil means
// [http.DefaultTransport]) and records them.
func (r *Recorder) Wrap(rt http.RoundTripper) http.RoundTripper {
	if rt == nil {
		rt = http.DefaultTransport
	}
	return &roundTripper{rec: r, next: rt}
}

// WrapConfig makes every client built from cfg (typed, dynamic,
// informers, discovery) record through r. The wrapper sits closest to the
// wire, after client-go adds credentials, which is why headers are
// redacted. A bearer token in cfg is also scrubbed from every recorded
// byte. TLS material is never recorded: it is not HTTP.
func (r *Recorder) WrapConfig(cfg *rest.Config) {
	if cfg.BearerToken != "" {
		r.learnToken(cfg.BearerToken)
	}
	cfg.Wrap(r.Wrap)
}

type roundTripper struct {
	rec  *Recorder
	next http.RoundTripper
}

var _ http.RoundTripper = (*roundTripper)(nil)

func (t *roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	return t.rec.roundTrip(t.next, req)
}

// noteErr keeps an error for Close, once per distinct text (the Writer's
// errors are sticky and would repeat for every frame).
func (r *Recorder) noteErr(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if s := err.Error(); s != r.lastErr {
		r.lastErr = s
		r.errs = append(r.errs, err)
	}
}

func (r *Recorder) roundTrip(next http.RoundTripper, req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		if req.Body != nil {
			req.Body.Close()
		}
		return nil, ErrClosed
	}
	r.wg.Add(1)
	r.mu.Unlock()
	done := true // the interaction ends in this call unless a stream takes it over
	defer func() {
		if done {
			r.wg.Done()
		}
	}()

	start := r.clock.Now()
	out, creq, err := recordedRequest(req)
	if err != nil {
		return nil, err
	}
	r.learnFromHeader(creq.Header)
	ex := &Exchange{Request: &creq}
	r.redact(ex)
	id, err := r.w.Request(start.Sub(r.start), creq)
	if err != nil {
		// The cassette is broken (the error is sticky and Close returns
		// it); the client still gets its answer, unrecorded.
		r.noteErr(err)
		return next.RoundTrip(out)
	}

	resp, err := next.RoundTrip(out)
	if err != nil {
		r.noteErr(r.w.End(id, cassettes.End{At: r.clock.Since(start), Reason: errReason(req.Context(), err), Error: err.Error()}))
		return nil, err
	}
	head, gz := r.responseHead(resp, start)
	ex.Response, ex.meta = &head, nil // the request's redaction parsed the heads without it
	r.redact(ex)
	if err := r.w.Response(id, head); err != nil {
		r.noteErr(err)
		return resp, nil
	}
	respAt := r.clock.Now()
	if resp.StatusCode == http.StatusSwitchingProtocols || resp.Body == nil {
		// An upgraded connection (exec, port-forward) is not HTTP any more
		// and is not recorded; the body must stay the raw connection.
		r.noteErr(r.w.End(id, cassettes.End{At: 0, Reason: cassettes.EndEOF}))
		return resp, nil
	}
	r.startStream(id, req, resp, ex, start, respAt, gz, head.Header.Get("Content-Type"))
	done = false
	return resp, nil
}

// recordedRequest is req as the cassette records it, and the request to
// send in its place: req itself, or for a request with a body (which it
// reads and closes) a clone whose body replays the bytes read.
func recordedRequest(req *http.Request) (*http.Request, cassettes.Request, error) {
	out := req
	creq := cassettes.Request{Method: req.Method, URL: req.URL.String(), Header: req.Header.Clone()}
	if req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, cassettes.Request{}, fmt.Errorf("recorder: reading the request body: %w", err)
		}
		out = req.Clone(req.Context())
		out.Body = io.NopCloser(bytes.NewReader(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		creq.Body = bytes.Clone(body)
	}
	if creq.Method == "" {
		creq.Method = http.MethodGet
	}
	return out, creq, nil
}

// responseHead is the head of resp, sent at start, as the cassette
// records it, and whether the caller gets gzip bytes the cassette records
// decoded.
func (r *Recorder) responseHead(resp *http.Response, start time.Time) (cassettes.Response, bool) {
	head := cassettes.Response{Status: resp.StatusCode, Header: resp.Header.Clone(), Latency: r.clock.Since(start)}
	gz := false
	switch {
	case resp.Uncompressed:
		// Go's transport asked for gzip itself and decoded it; it already
		// dropped Content-Encoding and Content-Length.
		head.Encoding = "gzip"
	case strings.EqualFold(resp.Header.Get("Content-Encoding"), "gzip"):
		// The caller asked for gzip: it gets the gzip bytes, the cassette
		// a decoded copy.
		gz = true
		head.Encoding = "gzip"
		head.Header.Del("Content-Encoding")
		head.Header.Del("Content-Length")
	}
	return head, gz
}

// startStream hands the body of resp, the answer to req, over to a
// stream whose pump records it as interaction id's frames, framed as
// contentType says, and registers the stream for Close. The stream takes
// the interaction over: it ends it and counts it out of r.wg.
func (r *Recorder) startStream(id int, req *http.Request, resp *http.Response, ex *Exchange, start, respAt time.Time, gz bool, contentType string) {
	s := &stream{
		rec:      r,
		id:       id,
		ctx:      req.Context(),
		upstream: resp.Body,
		reqAt:    start,
		respAt:   respAt,
		timeout:  watchTimeout(req.URL),
		gzip:     gz,
		ex:       ex,
	}
	s.cond.L = &s.mu
	s.framer = newFramer(req.URL, contentType, s.emit)
	r.mu.Lock()
	r.open[s] = struct{}{}
	r.mu.Unlock()
	resp.Body = s
	go s.pump()
}

// errReason classifies a transport error that ended an interaction.
func errReason(ctx context.Context, err error) cassettes.EndReason {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		return cassettes.EndTimeout
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return cassettes.EndStopped
	}
	return cassettes.EndReset
}

// watchTimeout returns a watch's requested timeoutSeconds, 0 if none.
func watchTimeout(u *url.URL) time.Duration {
	if !wire.IsWatchURL(u) {
		return 0
	}
	return wire.TimeoutSeconds(u.Query())
}

// newFramer picks the framing of a response body: a protobuf watch stream
// by length prefix, a JSON watch by event, a JSON, YAML or protobuf
// document whole (one frame timestamped at the arrival of its last byte),
// anything else in chunks as read.
func newFramer(u *url.URL, contentType string, emit framing.Emit) framing.Framer {
	mt, params, _ := mime.ParseMediaType(contentType)
	jsonish := mt == "application/json" || strings.HasSuffix(mt, "+json")
	switch {
	case params["stream"] == "watch" && mt == "application/vnd.kubernetes.protobuf":
		return &framing.Proto{Emit: emit}
	case jsonish && (params["stream"] == "watch" || wire.IsWatchURL(u)):
		return &framing.JSON{Emit: emit}
	case jsonish, mt == "application/vnd.kubernetes.protobuf", mt == "application/yaml":
		return &framing.Whole{Emit: emit}
	}
	return &framing.Chunks{Emit: emit}
}

// Close ends the recording of every stream still open with
// [cassettes.EndStopped] (their clients then read [ErrStopped]), waits for
// their pumps, flushes the Writer and returns every error met while
// recording. It does not close the Writer. Requests after Close fail with
// [ErrClosed]. Close is idempotent.
func (r *Recorder) Close() error {
	r.mu.Lock()
	r.closed = true
	open := make([]*stream, 0, len(r.open))
	for s := range r.open {
		open = append(open, s)
	}
	r.mu.Unlock()
	for _, s := range open {
		s.stop()
	}
	r.wg.Wait()
	if r.w != nil {
		r.noteErr(r.w.Flush())
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return errors.Join(r.errs...)
}
