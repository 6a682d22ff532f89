package watcher_test

// The seed review's scenarios (../shared/seeds), on cassettes recorded from
// the real control plane and replayed, edited where a scenario needs a
// failure. The cassettes in testdata/ are re-recorded with
//
//	KWREC_RECORD=1 go test ./watcher -run TestSeedScenarios
//
// which needs the control plane (`make controlplane`). Every scenario
// records the same script: ConfigMaps a and b exist; the watcher starts;
// after InitDone a is updated; after Apply(a) b is updated; after Apply(b)
// the recording stops.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/controlplanetest"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/watcher"
)

const seedNamespace = "seed"

// cassette names and the watcher config each was recorded with.
var seedCassettes = []struct {
	file string
	cfg  watcher.Config
}{
	{"paged-list.kwrec", watcher.Config{}},
	{"paged-list-page1.kwrec", watcher.Config{PageSize: 1}},
	{"streaming-list.kwrec", watcher.Config{InitialList: watcher.StreamingList}},
}

// requestLog records the URLs a client sends.
type requestLog struct {
	mu   sync.Mutex
	urls []*url.URL
}

func (l *requestLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		l.mu.Lock()
		l.urls = append(l.urls, r.URL)
		l.mu.Unlock()
		return rt.RoundTrip(r)
	})
}

func (l *requestLog) all() []*url.URL {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*url.URL(nil), l.urls...)
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// eventString names an event by object name only: resourceVersions differ
// between recordings.
func eventString(ev watcher.Event[*corev1.ConfigMap]) string {
	switch ev.Type {
	case watcher.Init, watcher.InitDone:
		return ev.Type.String()
	case watcher.Error:
		switch {
		case errors.Is(ev.Err, watcher.ErrWatchFailed):
			return "Error(watch failed)"
		case errors.Is(ev.Err, watcher.ErrWatchError):
			return "Error(watch error)"
		case errors.Is(ev.Err, watcher.ErrInitialListFailed):
			return "Error(initial list failed)"
		case errors.Is(ev.Err, watcher.ErrWatchStartFailed):
			return "Error(watch start failed)"
		}
		return "Error(" + ev.Err.Error() + ")"
	}
	return fmt.Sprintf("%s(%s)", ev.Type, ev.Object.Name)
}

// replayEvents runs a watcher with cfg over the cassette (with edits) until
// replay is exhausted, and returns its events, the final store and the
// requests it made.
func replayEvents(t *testing.T, c *cassettes.Cassette, cfg watcher.Config, edits ...string) ([]string, []string, []*url.URL) {
	t.Helper()
	var es []replay.Edit
	for _, s := range edits {
		e, err := replay.ParseEdit(s)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	r, err := replay.New(c, replay.Options{Edits: es, ErrorWhenExhausted: true})
	if err != nil {
		t.Fatal(err)
	}
	var log requestLog
	rc := r.Config()
	rc.Wrap(log.wrap)
	cs := kubernetes.NewForConfigOrDie(rc)
	cfg.Clock = &autoClock{FakeClock: clocktesting.NewFakeClock(time.Unix(1e9, 0))}
	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(cs.CoreV1().ConfigMaps(seedNamespace)), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var got []string
	var store watcher.Store[*corev1.ConfigMap]
	for ev := range w.Events(ctx) {
		if ev.Type == watcher.Error && replay.IsExhausted(ev.Err) {
			break
		}
		store.Apply(ev)
		got = append(got, eventString(ev))
		if len(got) > 50 {
			t.Fatalf("no end after 50 events: %v", got)
		}
	}
	if ctx.Err() != nil {
		t.Fatalf("replay did not end (hang guard hit); events so far: %v", got)
	}
	var final []string
	for _, cm := range store.List() {
		final = append(final, cm.Name+"="+cm.Data["k"])
	}
	return got, final, log.all()
}

func loadSeed(t *testing.T, file string) *cassettes.Cassette {
	t.Helper()
	c, err := cassettes.Load(filepath.Join("testdata", file))
	if err != nil {
		t.Fatalf("%v (re-record with KWREC_RECORD=1 go test ./watcher -run TestSeedScenarios)", err)
	}
	return c
}

// watchID returns the ID of the first watch interaction.
func watchID(t *testing.T, c *cassettes.Cassette) int {
	for _, in := range c.Interactions {
		if strings.Contains(in.Request.URL, "watch=true") {
			return in.ID
		}
	}
	t.Fatal("the cassette has no watch")
	return 0
}

// withCorruptFrame is a copy of c with a frame the client cannot decode
// inserted after frame k of the first watch: the hand edit a person would
// make in `kwrec edit` to simulate a broken stream.
func withCorruptFrame(t *testing.T, c *cassettes.Cassette, k int) *cassettes.Cassette {
	out := &cassettes.Cassette{Header: c.Header}
	id := watchID(t, c)
	for _, in := range c.Interactions {
		cp := *in
		if in.ID == id {
			cp.Frames = append(append(append([]cassettes.Frame(nil), in.Frames[:k]...), cassettes.Frame{At: in.Frames[k-1].At, Data: []byte("{\"type\":\"MODIFIED\",\"object\":\"not an object\"}\n")}), in.Frames[k:]...)
		}
		out.Interactions = append(out.Interactions, &cp)
	}
	return out
}

func TestSeedScenarios(t *testing.T) {
	if os.Getenv("KWREC_RECORD") == "1" {
		recordSeeds(t)
	}
	paged := loadSeed(t, "paged-list.kwrec")
	page1 := loadSeed(t, "paged-list-page1.kwrec")
	streaming := loadSeed(t, "streaming-list.kwrec")
	final := []string{"a=a2", "b=b2"}
	tests := []struct {
		name      string
		cassette  *cassettes.Cassette
		cfg       watcher.Config
		edits     []string
		want      []string
		wantStore []string
		check     func(t *testing.T, reqs []*url.URL)
	}{
		{
			name:     "a paged list init yields Init, InitApply a and b, InitDone, then the watch's Apply",
			cassette: paged, want: []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Apply(b)"},
			wantStore: final,
		},
		{
			name:     "a paged list with page size 1 takes two pages and a watch: three requests",
			cassette: page1, cfg: watcher.Config{PageSize: 1},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Apply(b)"},
			wantStore: final,
			check: func(t *testing.T, reqs []*url.URL) {
				if len(reqs) != 3 || reqs[0].Query().Get("limit") != "1" || reqs[1].Query().Get("continue") == "" || reqs[2].Query().Get("watch") != "true" {
					t.Errorf("requests = %v, want list limit=1, list continue=..., watch", reqs)
				}
			},
		},
		{
			name:     "a streaming list init yields the same events from one watch ending at the initial-events-end bookmark",
			cassette: streaming, cfg: watcher.Config{InitialList: watcher.StreamingList},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Apply(b)"},
			wantStore: final,
			check: func(t *testing.T, reqs []*url.URL) {
				if len(reqs) != 1 || reqs[0].Query().Get("sendInitialEvents") != "true" {
					t.Errorf("requests = %v, want one streaming list watch", reqs)
				}
			},
		},
		{
			name:     "an error injected mid-watch is reported, then the watcher recovers to the next recorded element",
			cassette: paged, edits: []string{fmt.Sprintf("watch-error:request=%d,after=1,code=500", watchID(t, paged))},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Error(watch error)", "Apply(b)"},
			wantStore: final,
		},
		{
			name:     "streaming_list_resync: a broken stream after Apply(a) re-lists and carries on",
			cassette: withCorruptFrame(t, streaming, 4), cfg: watcher.Config{InitialList: watcher.StreamingList},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Error(watch failed)", "Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(b)"},
			wantStore: final,
		},
		{
			name:     "a 410 Expired mid-watch leads to a re-list",
			cassette: paged, edits: []string{fmt.Sprintf("watch-error:request=%d,after=1,code=410", watchID(t, paged))},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Error(watch error)", "Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(b)"},
			wantStore: final,
		},
		{
			name:     "after a plain stream end the watcher re-watches from the bookmark's resourceVersion",
			cassette: streaming, cfg: watcher.Config{InitialList: watcher.StreamingList},
			edits:     []string{fmt.Sprintf("truncate:request=%d,after=3", watchID(t, streaming))},
			want:      []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Apply(b)"},
			wantStore: final,
			check: func(t *testing.T, reqs []*url.URL) {
				bookmarkRV := rvOfFrame(t, streaming, watchID(t, streaming), 3)
				if len(reqs) < 2 || reqs[1].Query().Get("resourceVersion") != bookmarkRV {
					t.Errorf("re-watch = %v, want resourceVersion=%s (the bookmark's)", reqs, bookmarkRV)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, store, reqs := replayEvents(t, tt.cassette, tt.cfg, tt.edits...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantStore, store); diff != "" {
				t.Errorf("final store (-want +got):\n%s", diff)
			}
			if tt.check != nil {
				tt.check(t, reqs)
			}
		})
	}
}

func rvOfFrame(t *testing.T, c *cassettes.Cassette, id, k int) string {
	for _, in := range c.Interactions {
		if in.ID == id {
			s := string(in.Frames[k-1].Data)
			const key = `"resourceVersion":"`
			i := strings.Index(s, key)
			if i < 0 {
				t.Fatalf("frame %d has no resourceVersion: %s", k, s)
			}
			s = s[i+len(key):]
			return s[:strings.IndexByte(s, '"')]
		}
	}
	t.Fatalf("no interaction %d", id)
	return ""
}

func TestAConsumedCassetteInExhaustionModeEndsWithThatErrorNeverAHang(t *testing.T) {
	r, err := replay.New(loadSeed(t, "paged-list.kwrec"), replay.Options{ErrorWhenExhausted: true})
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(r.Config())
	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(cs.CoreV1().ConfigMaps(seedNamespace)), watcher.Config{Clock: &autoClock{FakeClock: clocktesting.NewFakeClock(time.Unix(1e9, 0))}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	for ev := range w.Events(ctx) {
		n++
		if ev.Type == watcher.Error && replay.IsExhausted(ev.Err) {
			select {
			case <-r.Done():
			default:
				t.Error("an exhaustion error before Done was closed")
			}
			return
		}
		if n > 20 {
			break
		}
	}
	t.Fatalf("no exhaustion error after %d events (ctx: %v)", n, ctx.Err())
}

// An informer replaying the seed cassettes ends with the watcher's store.
func TestAnInformerReplayingTheSeedsEndsWithTheWatchersStore(t *testing.T) {
	for _, s := range seedCassettes {
		t.Run(s.file, func(t *testing.T) {
			c := loadSeed(t, s.file)
			_, want, _ := replayEvents(t, c, s.cfg)
			r, err := replay.New(c, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			cs := kubernetes.NewForConfigOrDie(r.Config())
			f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(seedNamespace))
			inf := f.Core().V1().ConfigMaps().Informer()
			// Every store change signals; the test re-checks on each, with
			// no polling.
			changed := make(chan struct{}, 1)
			signal := func(any) {
				select {
				case changed <- struct{}{}:
				default:
				}
			}
			if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				AddFunc: signal, DeleteFunc: signal,
				UpdateFunc: func(_, o any) { signal(o) },
			}); err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			f.Start(ctx.Done())
			defer func() { cancel(); f.Shutdown() }()
			var got []string
			for {
				got = got[:0]
				for _, o := range inf.GetStore().List() {
					cm := o.(*corev1.ConfigMap)
					got = append(got, cm.Name+"="+cm.Data["k"])
				}
				if cmp.Equal(sorted(got), want) {
					return
				}
				select {
				case <-changed:
				case <-ctx.Done():
					t.Fatalf("informer store = %v, watcher store = %v", sorted(got), want)
				}
			}
		})
	}
}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// runScript runs a watcher with cfg through watchConfig, performing the
// seed script's updates through admin (so a recording holds only the
// watcher's requests), and returns the events it saw.
func runScript(t *testing.T, watchConfig, admin *rest.Config, cfg watcher.Config) []string {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cms := kubernetes.NewForConfigOrDie(admin).CoreV1().ConfigMaps(seedNamespace)
	update := func(name, v string) {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data = map[string]string{"k": v}
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	watched := kubernetes.NewForConfigOrDie(watchConfig).CoreV1().ConfigMaps(seedNamespace)
	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(watched), cfg)
	var got []string
	for ev := range w.Events(ctx) {
		s := eventString(ev)
		got = append(got, s)
		switch s {
		case "InitDone":
			update("a", "a2")
		case "Apply(a)":
			update("b", "b2")
		case "Apply(b)":
			cancel()
		}
	}
	return got
}

// setupSeed starts a control plane with ConfigMaps a and b in the seed
// namespace.
func setupSeed(t *testing.T) *controlplanetest.ControlPlane {
	cp := controlplanetest.Start(t)
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: seedNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return cp
}

func resetObjects(t *testing.T, cs kubernetes.Interface) {
	ctx := context.Background()
	cms := cs.CoreV1().ConfigMaps(seedNamespace)
	for _, n := range []string{"a", "b"} {
		_ = cms.Delete(ctx, n, metav1.DeleteOptions{})
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}, Data: map[string]string{"k": n + "1"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// recordSeeds re-records testdata/*.kwrec from a live control plane.
func recordSeeds(t *testing.T) {
	cp := setupSeed(t)
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	for _, s := range seedCassettes {
		resetObjects(t, cs)
		path := filepath.Join("testdata", s.file)
		h := recorder.Header("v1.37.2", recorder.Options{})
		h.Labels = map[string]string{"re-record": "KWREC_RECORD=1 go test ./watcher -run TestSeedScenarios"}
		w, err := cassettes.Create(path, h, cassettes.WriterOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rec, err := recorder.New(w, recorder.Options{})
		if err != nil {
			t.Fatal(err)
		}
		rc := rest.CopyConfig(cp.Config)
		rc.ContentType = "application/json" // readable fixtures
		rc.AcceptContentTypes = "application/json"
		rec.WrapConfig(rc)
		got := runScript(t, rc, cp.Config, s.cfg)
		if err := errors.Join(rec.Close(), w.Close()); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %s: %v", path, got)
	}
}

// The same watcher, unchanged, against the live control plane.
func TestLiveWatcherRunsTheSeedScriptOnARealServer(t *testing.T) {
	cp := setupSeed(t)
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	for _, s := range seedCassettes {
		t.Run(s.file, func(t *testing.T) {
			resetObjects(t, cs)
			got := runScript(t, cp.Config, cp.Config, s.cfg)
			want := []string{"Init", "InitApply(a)", "InitApply(b)", "InitDone", "Apply(a)", "Apply(b)"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}
