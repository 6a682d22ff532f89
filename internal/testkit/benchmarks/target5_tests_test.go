package benchmarks_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/watcher"
)

// autoClock is a fake clock that jumps to every timer it is asked for,
// so a watcher's backoff costs no wall time (as in watcher's own tests).
type autoClock struct{ *clocktesting.FakeClock }

func (c *autoClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	if c.HasWaiters() {
		c.Step(d)
	}
	return t
}

var _ clock.WithTicker = (*autoClock)(nil)

// seedScenario is one of watcher/scenarios_test.go's seed scenarios: a
// cassette of watcher/testdata, the watcher's config, replay edits.
type seedScenario struct {
	name    string
	file    string
	cfg     watcher.Config
	edits   func(c *cassettes.Cassette) []string
	corrupt int // insert an undecodable frame after this frame of the first watch
	events  int // the events the scenario yields before replay is exhausted
}

var seedScenarios = []seedScenario{
	{name: "paged-list", file: "paged-list.kwrec", events: 6},
	{name: "paged-list-page-size-1", file: "paged-list-page1.kwrec", cfg: watcher.Config{PageSize: 1}, events: 6},
	{name: "streaming-list", file: "streaming-list.kwrec", cfg: watcher.Config{InitialList: watcher.StreamingList}, events: 6},
	{name: "watch-error-500", file: "paged-list.kwrec", events: 7,
		edits: func(c *cassettes.Cassette) []string {
			return []string{fmt.Sprintf("watch-error:request=%d,after=1,code=500", watchID(c))}
		}},
	{name: "streaming-list-resync", file: "streaming-list.kwrec", cfg: watcher.Config{InitialList: watcher.StreamingList}, corrupt: 4, events: 11},
	{name: "watch-error-410-relist", file: "paged-list.kwrec", events: 11,
		edits: func(c *cassettes.Cassette) []string {
			return []string{fmt.Sprintf("watch-error:request=%d,after=1,code=410", watchID(c))}
		}},
	{name: "stream-end-rewatch", file: "streaming-list.kwrec", cfg: watcher.Config{InitialList: watcher.StreamingList}, events: 6,
		edits: func(c *cassettes.Cassette) []string {
			return []string{fmt.Sprintf("truncate:request=%d,after=3", watchID(c))}
		}},
}

func watchID(c *cassettes.Cassette) int {
	for _, in := range c.Interactions {
		if strings.Contains(in.Request.URL, "watch=true") {
			return in.ID
		}
	}
	return 0
}

// withCorruptFrame is c with a frame no client can decode after frame k
// of its first watch.
func withCorruptFrame(c *cassettes.Cassette, k int) *cassettes.Cassette {
	out := &cassettes.Cassette{Header: c.Header}
	id := watchID(c)
	for _, in := range c.Interactions {
		cp := *in
		if in.ID == id {
			cp.Frames = append(append(append([]cassettes.Frame(nil), in.Frames[:k]...),
				cassettes.Frame{At: in.Frames[k-1].At, Data: []byte("{\"type\":\"MODIFIED\",\"object\":\"not an object\"}\n")}), in.Frames[k:]...)
		}
		out.Interactions = append(out.Interactions, &cp)
	}
	return out
}

// run loads the scenario's cassette and runs a watcher over its replay
// until replay is exhausted, as the watcher's scenario tests do.
func (s seedScenario) run(b *testing.B) {
	c, err := cassettes.Load(filepath.Join("..", "..", "..", "watcher", "testdata", s.file))
	if err != nil {
		b.Fatal(err)
	}
	if s.corrupt > 0 {
		c = withCorruptFrame(c, s.corrupt)
	}
	var edits []replay.Edit
	if s.edits != nil {
		for _, e := range s.edits(c) {
			pe, err := replay.ParseEdit(e)
			if err != nil {
				b.Fatal(err)
			}
			edits = append(edits, pe)
		}
	}
	r, err := replay.New(c, replay.Options{Edits: edits, ErrorWhenExhausted: true})
	if err != nil {
		b.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(r.Config())
	cfg := s.cfg
	cfg.Clock = &autoClock{clocktesting.NewFakeClock(time.Unix(1e9, 0))}
	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(cs.CoreV1().ConfigMaps("seed")), cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	for ev := range w.Events(ctx) {
		if ev.Type == watcher.Error && replay.IsExhausted(ev.Err) {
			break
		}
		n++
	}
	if ctx.Err() != nil || n != s.events {
		b.Fatalf("%s: %d events (want %d), ctx %v", s.name, n, s.events, ctx.Err())
	}
}

// slowestScenario is the slowest seed scenario's time per replay so far.
var slowestScenario struct {
	sync.Mutex
	d time.Duration
}

// BenchmarkTestsAreFast is target 5: each watcher seed scenario (the
// cassettes of watcher/testdata, with the scenario tests' edits) loads and
// replays through a watcher in under 100 ms of wall time; starting and
// stopping a real control plane (controlplanetest.StartEnv, then Stop)
// takes seconds. The controlplane case, skipped when its binaries are
// absent (`make controlplane` builds them), reports how many times slower
// it is than the slowest scenario.
func BenchmarkTestsAreFast(b *testing.B) {
	for _, s := range seedScenarios {
		b.Run("scenario="+s.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				s.run(b)
			}
			per := b.Elapsed() / time.Duration(b.N)
			b.ReportMetric(float64(per)/1e6, "ms/replay")
			slowestScenario.Lock()
			slowestScenario.d = max(slowestScenario.d, per)
			slowestScenario.Unlock()
		})
	}
	b.Run("controlplane-start-stop", func(b *testing.B) {
		if _, err := controlplanetest.AssetsDir(); err != nil {
			b.Skipf("skipping: %v", err)
		}
		for b.Loop() {
			cp, err := controlplanetest.StartEnv()
			if err != nil {
				b.Fatal(err)
			}
			if err := cp.Stop(); err != nil {
				b.Fatal(err)
			}
		}
		per := b.Elapsed() / time.Duration(b.N)
		b.ReportMetric(per.Seconds(), "s/start-stop")
		slowestScenario.Lock()
		if slowestScenario.d > 0 {
			b.ReportMetric(float64(per)/float64(slowestScenario.d), "x-slowest-scenario")
		}
		slowestScenario.Unlock()
	})
}
