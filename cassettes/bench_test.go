package cassettes_test

import (
	"bytes"
	"fmt"
	"io"
	"runtime"
	"sync"
	"testing"
	"time"

	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/podgen"
)

// distinctEvents are cycled through to make long streams; 5000 events (33
// MB) exceed zstd's window, so the cycle does not flatter compression.
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

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

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

// peakHeap samples the heap while f runs and returns its peak in bytes.
func peakHeap(f func()) uint64 {
	runtime.GC()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > peak {
				peak = ms.HeapInuse
			}
			select {
			case <-done:
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}

func BenchmarkRead(b *testing.B) {
	for _, compress := range []bool{false, true} {
		b.Run(fmt.Sprintf("events=10k/zstd=%v", compress), func(b *testing.B) {
			var file bytes.Buffer
			raw := writeWatch(b, &file, 10000, compress)
			b.SetBytes(raw)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				r, err := cassettes.NewReader(bytes.NewReader(file.Bytes()), "bench")
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := r.Next(); err != nil {
						if err != io.EOF {
							b.Fatal(err)
						}
						break
					}
				}
				r.Close()
			}
		})
	}
}

// vcrYAML is the same watch as go-vcr would save it: one interaction whose
// body is the whole stream.
func vcrYAML(b *testing.B, n int) []byte {
	evs := benchEvents()
	var body bytes.Buffer
	for i := 0; i < n; i++ {
		body.Write(evs[i%len(evs)])
	}
	vc := cassette.Cassette{Version: cassette.CassetteFormatV2, Interactions: []*cassette.Interaction{{
		Request:  cassette.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true"},
		Response: cassette.Response{Code: 200, Body: body.String()},
	}}}
	out, err := yaml.Marshal(&vc)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// BenchmarkCassette100k measures the numbers on a 100k-event watch
// of realistic Pods: compressed size against the raw stream and against
// go-vcr YAML, streaming read rate, and peak heap while reading.
func BenchmarkCassette100k(b *testing.B) {
	const n = 100000
	var file bytes.Buffer
	raw := writeWatch(b, &file, n, true)
	yml := vcrYAML(b, n)
	b.SetBytes(raw)
	b.ResetTimer()
	var peak uint64
	for i := 0; i < b.N; i++ {
		p := peakHeap(func() {
			r, err := cassettes.NewReader(bytes.NewReader(file.Bytes()), "bench")
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := r.Next(); err != nil {
					break
				}
			}
			r.Close()
		})
		peak = max(peak, p)
	}
	b.StopTimer()
	b.ReportMetric(float64(raw)/float64(file.Len()), "x-smaller-than-raw")
	b.ReportMetric(float64(len(yml))/float64(file.Len()), "x-smaller-than-go-vcr")
	b.ReportMetric(float64(file.Len())/1e6, "MB-compressed")
	// The compressed file itself is in the heap; report the reader's part.
	b.ReportMetric(float64(peak-uint64(file.Cap()))/1e6, "MB-peak-heap-reading")
}

// BenchmarkGoVCRLoad is go-vcr's cassette load (YAML unmarshal) of the
// same 10k-event watch, the rate BenchmarkRead is compared with.
func BenchmarkGoVCRLoad(b *testing.B) {
	yml := vcrYAML(b, 10000)
	b.SetBytes(int64(len(yml)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var vc cassette.Cassette
		if err := yaml.Unmarshal(yml, &vc); err != nil {
			b.Fatal(err)
		}
	}
}
