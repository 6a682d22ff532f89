package report_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/report"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

// writeLarge writes a cassette of benchmarks.Generate's Pods: a list of
// pods, then a watch of events, at the generator's pace.
func writeLarge(tb testing.TB, path string, pods, events int) {
	tb.Helper()
	s := benchmarks.Generate(benchmarks.JSON, pods, events)
	w, err := cassettes.Create(path, cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), Server: "v1.37.2", Redactions: []string{"header:Authorization"}}, cassettes.WriterOptions{})
	if err != nil {
		tb.Fatal(err)
	}
	ct := map[string][]string{"Content-Type": {benchmarks.JSON.ContentType()}}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?limit=500"})
	w.Response(id, cassettes.Response{Status: 200, Header: ct, Latency: 20 * time.Millisecond})
	w.Frame(id, cassettes.Frame{Data: s.List})
	w.End(id, cassettes.End{At: time.Millisecond, Reason: cassettes.EndEOF})
	id, _ = w.Request(25*time.Millisecond, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?allowWatchBookmarks=true&resourceVersion=1&watch=true"})
	w.Response(id, cassettes.Response{Status: 200, Header: ct, Latency: time.Millisecond})
	var at time.Duration
	for i, ev := range s.Events {
		at += time.Duration(i%3) * time.Millisecond
		if err := w.Frame(id, cassettes.Frame{At: at, Data: ev}); err != nil {
			tb.Fatal(err)
		}
	}
	w.End(id, cassettes.End{At: at + time.Second, Reason: cassettes.EndStopped})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkLargeReport builds, writes and renders (headless Chromium) the
// report of a 100k-event Pod watch after a 5000-Pod list, the issue's
// target: a report under 30 MB that renders in under 5 s. Run it with
//
//	go test -run '^$' -bench LargeReport -benchtime 1x ./cmd/kwrec/internal/report
func BenchmarkLargeReport(b *testing.B) {
	dir := b.TempDir()
	cassette := filepath.Join(dir, "pods.kwrec.zst")
	writeLarge(b, cassette, 5000, 100_000)
	file := filepath.Join(dir, "report.html")
	b.ResetTimer()
	for range b.N {
		r, err := report.Build(cassette, report.Options{})
		if err != nil {
			b.Fatal(err)
		}
		writeHTML(b, r, file)
	}
	b.StopTimer()
	fi, err := os.Stat(file)
	if err != nil {
		b.Fatal(err)
	}
	mb := float64(fi.Size()) / (1 << 20)
	b.ReportMetric(mb, "report-MB")
	if mb >= 30 {
		b.Errorf("the report is %.1f MB, want < 30 MB", mb)
	}
	bin := chromium(b)
	dom, wall := headless(b, bin, file, "#selftest", "--dump-dom")
	s := readSelftest(b, dom)
	b.ReportMetric(float64(s.RenderMs), "render-ms")
	b.ReportMetric(float64(wall.Milliseconds()), "chromium-wall-ms")
	if len(s.Errors) > 0 || s.Frames != 100_001 {
		b.Errorf("selftest: %+v", s)
	}
	if s.RenderMs >= 5000 {
		b.Errorf("first render took %d ms, want < 5 s", s.RenderMs)
	}
	b.Logf("selftest: %+v", s)
}
