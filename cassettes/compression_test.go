package cassettes

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"

	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

var sizesZstd19 = flag.Bool("sizes.zstd19", false, "BenchmarkCompressionChoices: also compress the go-vcr YAML with the zstd CLI at -19 (about 45 s a stream)")

// choice is one way to write the compressed form.
type choice struct {
	name   string
	c      compression
	deltas bool // object deltas
}

// choices are the configurations BenchmarkCompressionChoices compares, the
// first as cassettes were written before the "bytes" form.
func choices() []choice {
	const M = 1 << 20
	d, b, x := zstd.SpeedDefault, zstd.SpeedBetterCompression, zstd.SpeedBestCompression
	def := compressionFor(WriterOptions{Compress: true})
	at := func(level zstd.EncoderLevel, segment, window int) compression {
		c := def
		c.level, c.segment, c.window = level, segment, window
		return c
	}
	b64 := def
	b64.bytesForm = false
	betterDeltas := at(b, 4*M, M)
	better2 := at(b, 4*M, M)
	better2.concurrency = 2
	return []choice{
		{"base64, default level, 4 MiB segments, 1 MiB window (before)", b64, false},
		{"bytes, default level, 4/1 MiB (the default)", def, false},
		{"bytes, default level, 4/1 MiB, object deltas", def, true},
		{"bytes, better level, 4/1 MiB", at(b, 4*M, M), false},
		{"bytes, better level, 4/1 MiB, encoder concurrency 2", better2, false},
		{"bytes, better level, 4/1 MiB, object deltas", betterDeltas, true},
		{"bytes, best level, 4/1 MiB", at(x, 4*M, M), false},
		{"bytes, default level, 16/1 MiB", at(d, 16*M, M), false},
		{"bytes, better level, 16/1 MiB", at(b, 16*M, M), false},
		{"bytes, default level, 8/8 MiB", at(d, 8*M, 8*M), false},
		{"bytes, better level, 32/8 MiB", at(b, 32*M, 8*M), false},
		{"bytes, best level, 32/8 MiB", at(x, 32*M, 8*M), false},
		{"bytes, compact with 64 MiB segments: best level, 64/64 MiB, object deltas", compressionFor(WriterOptions{Compress: true, Compact: true, SegmentSize: 64 * M}), true},
		{"bytes, compact: best level, 16/16 MiB, object deltas (kwrec compact)", compressionFor(WriterOptions{Compress: true, Compact: true}), true},
	}
}

// BenchmarkCompressionChoices, the experiment behind the compressed
// form's defaults, writes the suite's 20k-event JSON and protobuf watches
// (internal/testkit/benchmarks, stream(format, 5000, 20_000)) in each
// configuration of [choices], flushing every 1000 events as a recorder at
// 1000 events/s does: MB/s is the raw stream written per second, MB the
// cassette's size (exact). It also measures what a zstd dictionary
// trained from the first segment would save, and, with -sizes.zstd19,
// go-vcr YAML compressed by the zstd CLI at -19 (about 45 s a stream).
// -count N runs the configurations in turn, N rounds:
//
//	go test ./cassettes/ -run '^$' -bench CompressionChoices -count 3 [-sizes.zstd19]
func BenchmarkCompressionChoices(b *testing.B) {
	formats := []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf}
	events := map[benchmarks.Format][][]byte{}
	for _, f := range formats {
		events[f] = benchmarks.Generate(f, 5000, 20_000).Events
	}
	for _, c := range choices() {
		for _, f := range formats {
			b.Run(fmt.Sprintf("%s/%s", c.name, f), func(b *testing.B) {
				var size int64
				for b.Loop() {
					var out countWriter
					b.SetBytes(writeEvents(b, &out, events[f], f, &c.c, c.deltas))
					size = out.n
				}
				b.ReportMetric(float64(size)/1e6, "MB")
			})
		}
	}
	for _, f := range formats {
		b.Run(fmt.Sprintf("bytes, default level, 4/1 MiB, dictionary of the first segment/%s", f), func(b *testing.B) {
			var size int64
			for b.Loop() {
				size = dictionarySize(b, events[f], f)
			}
			b.ReportMetric(float64(size)/1e6, "MB")
		})
		if *sizesZstd19 {
			b.Run(fmt.Sprintf("go-vcr YAML + zstd -19 (the CLI)/%s", f), func(b *testing.B) {
				var size int64
				for b.Loop() {
					size = vcrZstd19(b, events[f])
				}
				b.ReportMetric(float64(size)/1e6, "MB")
			})
		}
	}
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// writeEvents writes one watch of events to out, compressed as c says
// (nil: plain text), with object deltas or without, flushing every 1000
// events, and returns the raw stream's size.
func writeEvents(t testing.TB, out io.Writer, events [][]byte, f benchmarks.Format, c *compression, deltas bool) int64 {
	w, err := newWriter(out, Header{}, WriterOptions{FlushInterval: time.Hour, Deltas: deltas}, c)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true"})
	w.Response(id, Response{Status: 200, Header: map[string][]string{"Content-Type": {f.ContentType()}}})
	var raw int64
	for i, ev := range events {
		raw += int64(len(ev))
		if err := w.Frame(id, Frame{At: time.Duration(i) * time.Millisecond, Data: ev}); err != nil {
			t.Fatal(err)
		}
		if i%1000 == 999 {
			w.Flush()
		}
	}
	w.End(id, End{At: time.Duration(len(events)) * time.Millisecond, Reason: EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return raw
}

// dictionarySize returns the size of the default compressed form with a
// zstd dictionary built (zstd.BuildDict) from its first segment, 1 MiB of
// history, and stored once in the file (counted compressed): the idea of
// a dictionary shared by all segments, measured before building it.
func dictionarySize(t testing.TB, events [][]byte, f benchmarks.Format) int64 {
	def := compressionFor(WriterOptions{Compress: true})
	var z bytes.Buffer
	writeEvents(t, &z, events, f, &def, false)
	pr, err := Plain(&z)
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	var lines [][]byte
	br := bufio.NewReaderSize(pr, 1<<20)
	for {
		l, err := br.ReadBytes('\n')
		if len(l) > 0 {
			lines = append(lines, l)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	var first [][]byte
	var hist []byte
	for _, l := range lines {
		if len(hist) >= def.segment {
			break
		}
		first, hist = append(first, l), append(hist, l...)
	}
	dict, err := zstd.BuildDict(zstd.BuildDictOptions{ID: 1, Contents: first, History: hist[len(hist)-min(len(hist), 1<<20):],
		Offsets: [3]int{1, 4, 8}, Level: def.level})
	if err != nil {
		t.Fatal(err)
	}
	var out countWriter
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(def.level),
		zstd.WithWindowSize(def.window), zstd.WithEncoderDict(dict))
	if err != nil {
		t.Fatal(err)
	}
	seg := 0
	for i, l := range lines {
		enc.Write(l)
		if seg += len(l); seg >= def.segment {
			enc.Close()
			enc.Reset(&out)
			seg = 0
		} else if i%1000 == 999 {
			enc.Flush()
		}
	}
	enc.Close()
	stored, _ := zstd.NewWriter(nil)
	defer stored.Close()
	return out.n + int64(len(stored.EncodeAll(dict, nil)))
}

// vcrZstd19 returns the size of events as a go-vcr v3 cassette (one
// interaction whose body is the whole stream, as go-vcr would hold a
// watch if it could record one) compressed by `zstd -19`.
func vcrZstd19(t testing.TB, events [][]byte) int64 {
	if _, err := exec.LookPath("zstd"); err != nil {
		t.Skip("no zstd CLI")
	}
	vc := cassette.Cassette{Version: cassette.CassetteFormatV2, Interactions: []*cassette.Interaction{{
		Request: cassette.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true", Headers: map[string][]string{"Accept": {"application/json"}}},
		Response: cassette.Response{Code: 200, Headers: map[string][]string{"Content-Type": {"application/json"}},
			Body: string(bytes.Join(events, nil))},
	}}}
	y, err := yaml.Marshal(&vc)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "watch.yaml")
	if err := os.WriteFile(path, y, 0o644); err != nil {
		t.Fatal(err)
	}
	var out countWriter
	cmd := exec.Command("zstd", "-19", "-q", "-c", path)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return out.n
}
