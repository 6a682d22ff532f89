package benchmarks_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/recorder"
)

// watchList switches client-go's WatchListClient feature for the informers
// created while it is set. client-go reads its gates from KUBE_FEATURE_*
// environment variables once per process (features.envVarFeatureGates) and
// the reflector reads the gate when it is created, so the benchmarks
// replace the gates before anything reads them, keeping every other
// feature's default (and environment override).
var watchList atomic.Bool

type gates struct{ features.Gates }

func (g gates) Enabled(f features.Feature) bool {
	if f == features.WatchListClient {
		return watchList.Load()
	}
	return g.Gates.Enabled(f)
}

// childEnv names the variable that makes the test binary a measuring
// subprocess (see child in target4_read_test.go) instead of running tests.
const childEnv = "KWREC_BENCH_CHILD"

var tmpDir string

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		os.Exit(child(mode, os.Getenv(childEnv+"_PATH")))
	}
	if path := os.Getenv(fanServeEnv); path != "" {
		os.Exit(fanServe(path))
	}
	features.ReplaceFeatureGates(gates{features.FeatureGates()})
	// Informers log the expected end of their watches ("context
	// canceled") and replay's no-match for a re-watch after the recorded
	// one; the benchmark output is for numbers.
	klog.SetLogger(logr.Discard())
	code := m.Run()
	for _, f := range fanCleanup {
		f()
	}
	if tmpDir != "" {
		os.RemoveAll(tmpDir)
	}
	os.Exit(code)
}

// tempDir is one directory for the whole process, removed by TestMain.
func tempDir(tb testing.TB) string {
	if tmpDir == "" {
		d, err := os.MkdirTemp("", "kwrec-bench-")
		if err != nil {
			tb.Fatal(err)
		}
		tmpDir = d
	}
	return tmpDir
}

// streams caches generated streams for the whole process: -count runs a
// benchmark several times and generating 100k events takes seconds.
var streams struct {
	sync.Mutex
	m map[string]*benchmarks.Stream
}

func stream(f benchmarks.Format, pods, events int) *benchmarks.Stream {
	streams.Lock()
	defer streams.Unlock()
	k := fmt.Sprint(f, pods, events)
	if s := streams.m[k]; s != nil {
		return s
	}
	if streams.m == nil {
		streams.m = map[string]*benchmarks.Stream{}
	}
	s := benchmarks.Generate(f, pods, events)
	streams.m[k] = s
	return s
}

// bareTransport serves a Stream from memory: the client's own decode limit.
// A list request gets the list, a streaming list (sendInitialEvents) the
// WatchList body, a watch the watch body; with once, later watches idle
// until cancelled, as a live watch with no new events would.
type bareTransport struct {
	s      *benchmarks.Stream
	once   bool
	served atomic.Bool
}

var _ http.RoundTripper = (*bareTransport)(nil)

func (t *bareTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	q := req.URL.Query()
	ct := t.s.Format.ContentType()
	var body io.ReadCloser
	switch {
	case q.Get("watch") != "true" && q.Get("watch") != "1":
		ct = t.s.Format.ListContentType()
		body = io.NopCloser(bytes.NewReader(t.s.List))
	case t.once && t.served.Swap(true):
		body = &idleBody{ctx: req.Context(), closed: make(chan struct{})}
	case q.Get("sendInitialEvents") == "true":
		body = io.NopCloser(bytes.NewReader(t.s.WatchList()))
	default:
		body = io.NopCloser(bytes.NewReader(t.s.Watch))
	}
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {ct}}, Body: body, ContentLength: -1, Request: req}, nil
}

// idleBody is an open watch with nothing to send.
type idleBody struct {
	ctx    context.Context
	closed chan struct{}
	once   sync.Once
}

func (b *idleBody) Read([]byte) (int, error) {
	select {
	case <-b.ctx.Done():
		return 0, b.ctx.Err()
	case <-b.closed:
		return 0, io.ErrClosedPipe
	}
}

func (b *idleBody) Close() error { b.once.Do(func() { close(b.closed) }); return nil }

// withFormat makes clients of cfg ask for format f.
func withFormat(cfg *rest.Config, f benchmarks.Format) *rest.Config {
	cfg.QPS, cfg.Burst = -1, -1
	if f == benchmarks.Protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	} else {
		cfg.ContentType = "application/json"
		cfg.AcceptContentTypes = "application/json"
	}
	return cfg
}

func bareConfig(s *benchmarks.Stream, once bool) *rest.Config {
	return withFormat(&rest.Config{Host: "https://bare.invalid", Transport: &bareTransport{s: s, once: once}}, s.Format)
}

// capture records what run does with a client config over the bare
// transport of s, and returns the cassette: replay then answers exactly the
// requests client-go sends.
func capture(tb testing.TB, s *benchmarks.Stream, once bool, run func(*rest.Config)) *cassettes.Cassette {
	var buf bytes.Buffer
	w, err := cassettes.NewWriter(&buf, recorder.Header("", recorder.Options{}), cassettes.WriterOptions{FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	rec, err := recorder.New(w, recorder.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	cfg := bareConfig(s, once)
	rec.WrapConfig(cfg)
	run(cfg)
	if err := rec.Close(); err != nil {
		tb.Fatal(err)
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	c, err := cassettes.Read(&buf, "captured")
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// side is one side of a side-by-side benchmark, accumulated over ops.
type side struct {
	name    string
	d       time.Duration
	mallocs uint64
	events  int
}

// run calls setup untimed, then times the function it returns (which
// handles n events) and counts the heap allocations of every goroutine
// meanwhile.
func (s *side) run(n int, setup func() func()) {
	f := setup()
	runtime.GC()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	t := time.Now()
	f()
	s.d += time.Since(t)
	runtime.ReadMemStats(&m1)
	s.mallocs += m1.Mallocs - m0.Mallocs
	s.events += n
}

func (s *side) rate() float64 { return float64(s.events) / s.d.Seconds() }

func (s *side) allocsPerEvent() float64 { return float64(s.mallocs) / float64(s.events) }

// pairs is how many times one round of sideBySide runs each side: 8, or
// $KWREC_BENCH_PAIRS. On a shared 2-core machine, load from other
// processes drifts within seconds, and alternating short runs (base,
// other, other, base, ...) spreads it over both sides evenly.
var pairs = func() int {
	if n, err := strconv.Atoi(os.Getenv("KWREC_BENCH_PAIRS")); err == nil && n > 0 {
		return n
	}
	return 8
}()

// sideBySide runs one round per op: base and other pairs times each,
// alternating which goes first. A round's ratio is the median of its
// pairs' ratios (other's rate over base's in the two runs side by side),
// so that one run stalled by another process (a 0.3 s run that a burst
// of load slows by a third) moves it no more than any other pair does.
// It reports both rates and other's rate as a fraction of base's over all
// runs, the median, min and max of the rounds' ratios (the rounds are
// logged, each with the spread of its pairs), and the allocations per
// event other adds. Run it with -benchtime Nx for N rounds in one run.
func sideBySide(b *testing.B, n int, base, other *side, runBase, runOther func() func()) {
	b.ReportAllocs()
	var ratios []float64
	var logged []string
	for b.Loop() {
		var rs []float64
		for i := range pairs {
			rb, ro := &side{}, &side{}
			if i%2 == 0 {
				rb.run(n, runBase)
				ro.run(n, runOther)
			} else {
				ro.run(n, runOther)
				rb.run(n, runBase)
			}
			rs = append(rs, ro.rate()/rb.rate())
			base.add(rb)
			other.add(ro)
		}
		med, lo, hi := spread(rs)
		ratios = append(ratios, med)
		logged = append(logged, fmt.Sprintf("%.3f (pairs %.3f-%.3f)", med, lo, hi))
	}
	ratio := other.name + "/" + base.name
	b.ReportMetric(base.rate(), base.name+"-events/s")
	b.ReportMetric(other.rate(), other.name+"-events/s")
	b.ReportMetric(other.rate()/base.rate(), ratio)
	med, lo, hi := spread(ratios)
	b.ReportMetric(med, ratio+"-median")
	b.ReportMetric(lo, ratio+"-min")
	b.ReportMetric(hi, ratio+"-max")
	b.Logf("%s per round: %s", ratio, strings.Join(logged, ", "))
	b.ReportMetric(other.allocsPerEvent()-base.allocsPerEvent(), "allocs/event-added")
}

func (s *side) add(o *side) {
	s.d += o.d
	s.mallocs += o.mallocs
	s.events += o.events
}

// spread returns the median, min and max of xs.
func spread(xs []float64) (med, lo, hi float64) {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0, 0, 0
	}
	med = s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return med, s[0], s[len(s)-1]
}
