package cassettes_test

import (
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/podgen"
)

// distinctEvents are cycled through to make long streams for the write
// rate. Sizes, read rates and memory are measured by internal/testkit/benchmarks on
// varied Pods: cycling 5000 similar Pods flatters compression.
var (
	eventsOnce sync.Once
	events     [][]byte
)

func benchEvents() [][]byte {
	eventsOnce.Do(func() {
		for i := 0; i < 5000; i++ {
			events = append(events, podgen.WatchEventJSON(i))
		}
	})
	return events
}

// writeWatch writes a cassette of one watch with n generated events and
// returns the raw JSON stream's size.
func writeWatch(tb testing.TB, out io.Writer, n int, compress bool) int64 {
	evs := benchEvents()
	w, err := cassettes.NewWriter(out, cassettes.Header{}, cassettes.WriterOptions{Compress: compress, FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	var raw int64
	for i := 0; i < n; i++ {
		ev := evs[i%len(evs)]
		raw += int64(len(ev))
		if err := w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: ev}); err != nil {
			tb.Fatal(err)
		}
		// A recorder flushes about once a second; at a busy 1000 events/s
		// that is every 1000 events.
		if i%1000 == 999 {
			w.Flush()
		}
	}
	w.End(id, cassettes.End{At: time.Duration(n) * time.Millisecond, Reason: cassettes.EndStopped})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return raw
}

func BenchmarkWrite(b *testing.B) {
	for _, compress := range []bool{false, true} {
		b.Run(fmt.Sprintf("events=10k/zstd=%v", compress), func(b *testing.B) {
			raw := writeWatch(b, io.Discard, 10000, compress)
			b.SetBytes(raw)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				writeWatch(b, io.Discard, 10000, compress)
			}
		})
	}
}
