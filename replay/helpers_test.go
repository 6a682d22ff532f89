package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	testclock "k8s.io/utils/clock/testing"
)

const cmPath = "/api/v1/namespaces/default/configmaps"

// fixture loads testdata/name.
func fixture(t testing.TB, name string) *cassettes.Cassette {
	t.Helper()
	c, err := cassettes.Load("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// source is where a test's Replayer reads its cassette from. replay.New
// and replay.Open serve through the same index (TestNewAndOpenAnswerAlike
// shows they answer alike), so tests read from a file, the path with more
// to it: compression and seek points.
type source string

const (
	// fromFile writes the cassette to a compressed file with tiny segments
	// (many seek points) and opens it with replay.Open: frames are read
	// back from the file.
	fromFile source = "open"
	// inMemory serves the cassette held in memory with replay.New.
	inMemory source = "memory"
)

// forEachSource runs f as a subtest reading from a file (see source).
// Tests of the server's connections and tokens (server_hardening_test.go,
// HTTP/2, other tokens) take fromFile directly.
func forEachSource(t *testing.T, f func(t *testing.T, src source)) {
	t.Helper()
	t.Run(string(fromFile), func(t *testing.T) { f(t, fromFile) })
}

// replayer returns a Replayer over c read from src, closed when the test
// ends.
func (src source) replayer(t testing.TB, c *cassettes.Cassette, opts replay.Options) *replay.Replayer {
	t.Helper()
	var r *replay.Replayer
	var err error
	switch src {
	case inMemory:
		r, err = replay.New(c, opts)
	case fromFile:
		r, err = replay.Open(writeCompressed(t, c), opts)
	default:
		t.Fatalf("no source %q", src)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// writeCompressed writes c to a compressed cassette file with tiny
// segments and returns its path.
func writeCompressed(t testing.TB, c *cassettes.Cassette) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "replay.kwrec.zst")
	cassettetest.Write(t, path, c, cassettes.WriterOptions{SegmentSize: 512, FlushInterval: time.Hour})
	return path
}

func clientset(t testing.TB, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// cmJSON is a ConfigMap as the API server writes it in a watch event.
func cmJSON(name string, rv int, value string) string {
	return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","uid":"u-%s","resourceVersion":"%d"},"data":{"k":%q}}`, name, name, rv, value)
}

func eventFrame(at time.Duration, typ, obj string) cassettes.Frame {
	return cassettes.Frame{At: at, Data: []byte(`{"type":"` + typ + `","object":` + obj + "}\n")}
}

// watchCassette is one recorded JSON watch of configmaps from
// resourceVersion 100, with the given frames and end.
// modifiedWatch returns the frames of a watch of n MODIFIED events, from
// resourceVersion 101 on, cycling over ConfigMaps c0-c6 with value(i) as
// event i's value, and the events a client should receive.
func modifiedWatch(n int, value func(i int) string) ([]cassettes.Frame, []got) {
	var frames []cassettes.Frame
	var want []got
	for i := range n {
		name := fmt.Sprintf("c%d", i%7)
		frames = append(frames, eventFrame(0, "MODIFIED", cmJSON(name, 101+i, value(i))))
		want = append(want, got{"MODIFIED", name, fmt.Sprint(101 + i), value(i)})
	}
	return frames, want
}

func watchCassette(end cassettes.EndReason, frames ...cassettes.Frame) *cassettes.Cassette {
	var last time.Duration
	if len(frames) > 0 {
		last = frames[len(frames)-1].At
	}
	return &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{{
		ID: 1,
		Request: cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443" + cmPath + "?resourceVersion=100&watch=true",
			Header: http.Header{"Accept": {"application/json"}}},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
		Frames:   frames,
		End:      &cassettes.End{At: last, Reason: end},
	}}}
}

// got is one watch event reduced to comparable fields.
type got struct {
	Type, Name, RV, Value string
}

func (g got) String() string { return g.Type + " " + g.Name + "@" + g.RV + "=" + g.Value }

func summarize(ev watch.Event) got {
	switch o := ev.Object.(type) {
	case *corev1.ConfigMap:
		return got{string(ev.Type), o.Name, o.ResourceVersion, o.Data["k"]}
	case interface {
		UnstructuredContent() map[string]any
	}:
		m := o.UnstructuredContent()
		md, _ := m["metadata"].(map[string]any)
		data, _ := m["data"].(map[string]any)
		v, _ := data["k"].(string)
		n, _ := md["name"].(string)
		rv, _ := md["resourceVersion"].(string)
		return got{string(ev.Type), n, rv, v}
	}
	b, _ := json.Marshal(ev.Object)
	return got{Type: string(ev.Type), Value: string(b)}
}

// recv reads n events from w, failing after a generous watchdog.
func recv(t testing.TB, w watch.Interface, n int) []got {
	t.Helper()
	var out []got
	watchdog := time.NewTimer(20 * time.Second)
	defer watchdog.Stop()
	for len(out) < n {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed after %d events, want %d: %v", len(out), n, out)
			}
			out = append(out, summarize(ev))
		case <-watchdog.C:
			t.Fatalf("watchdog: got %d of %d events: %v", len(out), n, out)
		}
	}
	return out
}

// waitClosed reads w until it closes, returning what came before.
func waitClosed(t testing.TB, w watch.Interface) []got {
	t.Helper()
	var out []got
	watchdog := time.NewTimer(20 * time.Second)
	defer watchdog.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out
			}
			out = append(out, summarize(ev))
		case <-watchdog.C:
			t.Fatalf("watchdog: watch still open after %v", out)
		}
	}
}

// waitDone waits for the replay to be done.
func waitDone(t testing.TB, r *replay.Replayer) {
	t.Helper()
	select {
	case <-r.Done():
	case <-time.After(20 * time.Second):
		t.Fatal("watchdog: replay not done")
	}
}

// waitWaiters waits, inside a synctest bubble, until every other goroutine
// of the test is blocked, and fails unless one of them waits on the fake
// clock: the next Step then moves the replay on deterministically.
func waitWaiters(t testing.TB, fc *testclock.FakeClock) {
	t.Helper()
	synctest.Wait()
	if !fc.HasWaiters() {
		t.Fatal("everything is blocked and nothing waits on the fake clock")
	}
}

// storeState reduces an informer store to name -> rv=value.
func storeState(s cache.Store) map[string]string {
	m := map[string]string{}
	for _, o := range s.List() {
		cm := o.(*corev1.ConfigMap)
		m[cm.Name] = cm.ResourceVersion + "=" + cm.Data["k"]
	}
	return m
}

// waitStore waits until the informer's store equals want, re-checking on
// every notification from the informer's handler.
func waitStore(t testing.TB, inf cache.SharedIndexInformer, changed <-chan struct{}, want map[string]string) {
	t.Helper()
	watchdog := time.NewTimer(20 * time.Second)
	defer watchdog.Stop()
	for {
		if d := cmp.Diff(want, storeState(inf.GetStore())); d == "" {
			return
		}
		select {
		case <-changed:
		case <-watchdog.C:
			t.Fatalf("watchdog: store never reached the recorded state (-want +got):\n%s", cmp.Diff(want, storeState(inf.GetStore())))
		}
	}
}

// waitLog waits until the handler log has n entries and returns it.
func waitLog(t testing.TB, changed <-chan struct{}, log func() []string, n int) []string {
	t.Helper()
	watchdog := time.NewTimer(20 * time.Second)
	defer watchdog.Stop()
	for {
		if l := log(); len(l) >= n {
			return l
		}
		select {
		case <-changed:
		case <-watchdog.C:
			t.Fatalf("watchdog: handlers saw only %v", log())
		}
	}
}

// notifier returns handlers that signal changed and log every event.
func notifier() (cache.ResourceEventHandlerFuncs, <-chan struct{}, func() []string) {
	ch := make(chan struct{}, 1)
	var mu sync.Mutex
	var log []string
	note := func(s string) {
		mu.Lock()
		log = append(log, s)
		mu.Unlock()
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	name := func(o any) string {
		if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
			o = d.Obj
		}
		cm := o.(*corev1.ConfigMap)
		return cm.Name + "@" + cm.ResourceVersion
	}
	h := cache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { note("add " + name(o)) },
		UpdateFunc: func(old, o any) {
			// A re-list replaces every object: client-go then calls
			// OnUpdate with old == new for the unchanged ones. Those are
			// not events; skip them so lost or repeated events show.
			if old.(*corev1.ConfigMap).ResourceVersion == o.(*corev1.ConfigMap).ResourceVersion {
				return
			}
			note("update " + name(o))
		},
		DeleteFunc: func(o any) { note("delete " + name(o)) },
	}
	return h, ch, func() []string {
		mu.Lock()
		defer mu.Unlock()
		out := append([]string(nil), log...)
		return out
	}
}

// requestLog is a RoundTripper recording request lines before the replayer.
type requestLog struct {
	next http.RoundTripper
	mu   sync.Mutex
	urls []string
}

func (l *requestLog) RoundTrip(req *http.Request) (*http.Response, error) {
	l.mu.Lock()
	q := req.URL.Query()
	q.Del("timeoutSeconds")
	l.urls = append(l.urls, req.Method+" "+req.URL.Path+"?"+q.Encode())
	l.mu.Unlock()
	return l.next.RoundTrip(req)
}

func (l *requestLog) contains(s string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range l.urls {
		if strings.Contains(u, s) {
			return true
		}
	}
	return false
}

func (l *requestLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := append([]string(nil), l.urls...)
	sort.Strings(s)
	return strings.Join(s, "\n")
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx
}

type informerT = cache.SharedIndexInformer

func rawRequest(pathQuery string) *http.Request {
	req, _ := http.NewRequest("GET", "https://x"+pathQuery, nil)
	req.Header.Set("Accept", "application/json")
	return req
}

// initialSorted sorts the first n entries of a handler log: an informer
// hands over its initial list (a Replace) in map order.
func initialSorted(log []string, n int) []string {
	out := append([]string(nil), log...)
	sort.Strings(out[:min(n, len(out))])
	return out
}

// wantRecordedEvents watches the default namespace's ConfigMaps with watch
// from resourceVersion 100, bookmarks allowed, and checks that it sends the
// recorded events.
func wantRecordedEvents(t *testing.T, watchFn func(context.Context, metav1.ListOptions) (watch.Interface, error)) {
	t.Helper()
	w, err := watchFn(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if d := cmp.Diff(recordedEvents, recv(t, w, 4)); d != "" {
		t.Errorf("events (-recorded +replayed):\n%s", d)
	}
}
