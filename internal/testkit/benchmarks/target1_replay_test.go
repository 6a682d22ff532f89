package benchmarks_test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/replay"
)

// clientStream is the stream in format f of the client-throughput
// benchmarks (targets 1 and 2): one run of one side takes about 0.3 s on
// this machine (informers twice that).
func clientStream(f benchmarks.Format) *benchmarks.Stream {
	if f == benchmarks.Protobuf {
		return stream(benchmarks.Protobuf, 1000, 10000)
	}
	return stream(benchmarks.JSON, 1000, 1000)
}

// watchAll returns a timed function that drains one typed watch of cfg,
// which must deliver n events.
func watchAll(b *testing.B, cfg *rest.Config, n int) func() {
	cs := kubernetes.NewForConfigOrDie(cfg)
	return func() {
		w, err := cs.CoreV1().Pods("default").Watch(context.Background(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for range w.ResultChan() {
			got++
		}
		if got != n {
			b.Fatalf("%d events, want %d", got, n)
		}
	}
}

// informAll returns a timed function that runs a Pod SharedIndexInformer
// over cfg until its handlers have seen n notifications (the listed Pods,
// then one per watch event), with the WatchListClient feature as wl.
func informAll(b *testing.B, cfg *rest.Config, n int, wl bool) func() {
	return func() {
		watchList.Store(wl)
		f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace("default"))
		inf := f.Core().V1().Pods().Informer()
		var seen atomic.Int64
		done := make(chan struct{})
		note := func() {
			if seen.Add(1) == int64(n) {
				close(done)
			}
		}
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc: func(any) { note() }, UpdateFunc: func(any, any) { note() }, DeleteFunc: func(any) { note() },
		}); err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		f.Start(ctx.Done())
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			b.Fatalf("the informer saw %d of %d notifications in 2 minutes", seen.Load(), n)
		}
		cancel()
		f.Shutdown()
	}
}

// captured caches the cassettes recorded from the bare transports.
var captured sync.Map // string -> *cassettes.Cassette

func capturedOnce(b *testing.B, key string, s *benchmarks.Stream, once bool, run func(*rest.Config) func()) *cassettes.Cassette {
	if c, ok := captured.Load(key); ok {
		return c.(*cassettes.Cassette)
	}
	c := capture(b, s, once, func(cfg *rest.Config) { run(cfg)() })
	captured.Store(key, c)
	return c
}

func replayConfig(b *testing.B, c *cassettes.Cassette, f benchmarks.Format) *rest.Config {
	r, err := replay.New(c, replay.Options{Speed: 0})
	if err != nil {
		b.Fatal(err)
	}
	return withFormat(r.Config(), f)
}

// openConfig is replayConfig through replay.Open: c saved once as a zstd
// file, opened (indexed) for every run, frames read back as served.
func openConfig(b *testing.B, c *cassettes.Cassette, f benchmarks.Format, key string) (*rest.Config, func()) {
	path := filepath.Join(tempDir(b), key+".kwrec.zst")
	if _, err := os.Stat(path); err != nil {
		if err := cassettes.Save(path, c); err != nil {
			b.Fatal(err)
		}
	}
	r, err := replay.Open(path, replay.Options{Speed: 0})
	if err != nil {
		b.Fatal(err)
	}
	return withFormat(r.Config(), f), func() { r.Close() }
}

// BenchmarkReplayCostsTheClientNothing is target 1: client-go decoding a
// replay at speed 0 reaches at least 0.95 (JSON) and 0.90 (protobuf) of
// the events/s it reaches from a bare in-memory RoundTripper serving the
// same bytes, for a typed watch, a SharedIndexInformer's list+watch and a
// WatchList informer. The replayed cassette is recorded from the bare
// transport, so both sides answer exactly the same requests. WatchList
// replays a plain list+watch recording: replay answers the streaming list
// from the collection's timeline (JSON and protobuf); the bare side serves
// the streaming list the API server would.
func BenchmarkReplayCostsTheClientNothing(b *testing.B) {
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		// typed-watch-open is the same through replay.Open, which reads
		// every frame back from the zstd file (opened in the untimed setup
		// of each run).
		for _, open := range []bool{false, true} {
			name, other := "typed-watch/", "replay"
			if open {
				name, other = "typed-watch-open/", "replay-open"
			}
			b.Run(name+string(f), func(b *testing.B) {
				s := clientStream(f)
				n := len(s.Events)
				key := "watch-" + string(f)
				c := capturedOnce(b, key, s, false, func(cfg *rest.Config) func() { return watchAll(b, cfg, n) })
				sideBySide(b, n, &side{name: "bare"}, &side{name: other},
					func() func() { return watchAll(b, bareConfig(s, false), n) },
					func() func() {
						if !open {
							return watchAll(b, replayConfig(b, c, f), n)
						}
						cfg, closeFn := openConfig(b, c, f, key)
						run := watchAll(b, cfg, n)
						return func() { run(); closeFn() }
					})
			})
		}
	}
	// noise is the bare client against itself, with the same rounds: the
	// spread of its ratios is what the machine alone adds to every ratio
	// above.
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		b.Run("noise/"+string(f), func(b *testing.B) {
			s := clientStream(f)
			n := len(s.Events)
			bare := func() func() { return watchAll(b, bareConfig(s, false), n) }
			sideBySide(b, n, &side{name: "bare"}, &side{name: "bare-again"}, bare, bare)
		})
	}
	// The informers list then watch, or (WatchList) stream the list; replay
	// answers the streaming list of a plain list+watch recording from the
	// collection's timeline, in protobuf too.
	for _, watchList := range []bool{false, true} {
		for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
			name := "informer-list-watch/"
			if watchList {
				name = "informer-watchlist/"
			}
			b.Run(name+string(f), func(b *testing.B) {
				s := clientStream(f)
				n := s.Items + len(s.Events)
				c := capturedOnce(b, "informer-"+string(f), s, true, func(cfg *rest.Config) func() { return informAll(b, cfg, n, false) })
				sideBySide(b, n, &side{name: "bare"}, &side{name: "replay"},
					func() func() { return informAll(b, bareConfig(s, true), n, watchList) },
					func() func() { return informAll(b, replayConfig(b, c, f), n, watchList) })
			})
		}
	}
}
