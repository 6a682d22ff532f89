package benchmarks_test

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/recorder"
)

// millionEnv overrides the event count of BenchmarkAMillionEvents (default
// 1,000,000), for a quicker look.
const millionEnv = "KWREC_BENCH_EVENTS"

func millionEvents() int {
	if n, err := strconv.Atoi(os.Getenv(millionEnv)); err == nil && n > 0 {
		return n
	}
	return 1_000_000
}

// BenchmarkAMillionEvents is the long-recording target (issue 16): a
// million watch events, about 6.6 GB of Pod JSON, recorded through the
// recorder into a compressed cassette with the default flush policy in
// under 150 MB peak RSS (record-peak-MB), then replayed through
// replay.Open, every event read by a watch at speed 0, in under 150 MB
// (replay-peak-MB). Each side is a subprocess, so each peak is its own.
//
// The events cycle a generated stream of 1,000 Pods and 2,000 events
// with ever-growing resourceVersions, so that a generated stream in
// memory does not dominate the peak being measured; a real long
// recording compresses no better per event than the 20k-event streams of
// BenchmarkCassettesAreSmall. The recording side's peak is reset
// (/proc/self/clear_refs) once the generated stream is built.
func BenchmarkAMillionEvents(b *testing.B) {
	n := millionEvents()
	path := filepath.Join(tempDir(b), "million.kwrec.zst")
	for range b.N {
		rec := runChild(b, "record-million", path)
		if rec.Events != n {
			b.Fatalf("recorded %d events, want %d", rec.Events, n)
		}
		st, err := os.Stat(path)
		if err != nil {
			b.Fatal(err)
		}
		rep := runChild(b, "open-replay", path)
		if rep.Events != n {
			b.Fatalf("replayed %d events, want %d", rep.Events, n)
		}
		b.ReportMetric(float64(n), "events")
		b.ReportMetric(rec.Bytes/1e9, "raw-GB")
		b.ReportMetric(float64(st.Size())/1e6, "cassette-MB")
		b.ReportMetric(rec.Seconds, "record-s")
		b.ReportMetric(rec.PeakMB, "record-peak-MB")
		b.ReportMetric(rep.LoadSeconds, "open-s")
		b.ReportMetric(rep.Seconds, "replay-s")
		b.ReportMetric(rep.PeakMB, "replay-peak-MB")
		os.Remove(path)
	}
}

// recordMillion is the "record-million" child: the recorder between a
// client draining a watch and a server generating millionEvents events,
// writing path.
func recordMillion(path string) (events int, bytes float64, err error) {
	n := millionEvents()
	w, err := cassettes.Create(path, recorder.Header("v1.37.2", recorder.Options{}), cassettes.WriterOptions{})
	if err != nil {
		return 0, 0, err
	}
	rec, err := recorder.New(w, recorder.Options{})
	if err != nil {
		return 0, 0, err
	}
	s := benchmarks.Generate(benchmarks.JSON, 1000, 2000)
	// The peak to measure is the recording's, not the generator's.
	debug.FreeOSMemory()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		return 0, 0, fmt.Errorf("resetting the peak RSS: %v", err)
	}
	client := &http.Client{Transport: rec.Wrap(millionServer{s: s, n: n})}
	resp, err := client.Get("https://bare.invalid/api/v1/pods?resourceVersion=" + strconv.FormatInt(s.ListRV, 10) + "&watch=true")
	if err != nil {
		return 0, 0, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		events++
		bytes += float64(len(sc.Bytes()) + 1)
	}
	resp.Body.Close()
	if err := sc.Err(); err != nil {
		return 0, 0, err
	}
	if err := rec.Close(); err != nil {
		return 0, 0, err
	}
	return events, bytes, w.Close()
}

// millionServer answers a watch with n events: s's events over and over,
// each with a resourceVersion above the last.
type millionServer struct {
	s *benchmarks.Stream
	n int
}

func (m millionServer) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: &cycleBody{s: m.s, left: m.n, rv: m.s.ListRV},
		ContentLength: -1, Request: req}, nil
}

// cycleBody is the watch body of millionServer, generated as it is read.
type cycleBody struct {
	s    *benchmarks.Stream
	left int
	i    int
	rv   int64
	cur  []byte
}

func (c *cycleBody) Read(p []byte) (int, error) {
	for len(c.cur) == 0 {
		if c.left == 0 {
			return 0, io.EOF
		}
		ev := c.s.Events[c.i%len(c.s.Events)]
		c.i++
		c.left--
		c.rv++
		typ, start, end, err := wire.SplitWatchEventJSON(ev)
		if err != nil {
			return 0, err
		}
		obj, err := wire.SetRVJSON(ev[start:end], strconv.FormatInt(c.rv, 10))
		if err != nil {
			return 0, fmt.Errorf("event %d: %v", c.i, err)
		}
		c.cur = wire.WatchEventJSON(typ, obj)
	}
	n := copy(p, c.cur)
	c.cur = c.cur[n:]
	return n, nil
}

func (c *cycleBody) Close() error { return nil }
