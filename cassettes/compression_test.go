//go:build unix

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
	"regexp"
	"runtime"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"

	"github.com/kwrec/kwrec/internal/benchmarks"
)

var (
	sizes       = flag.Bool("sizes", false, "run TestCompressionChoices, the experiment behind the compressed form's defaults")
	sizesRounds = flag.Int("sizes.rounds", 3, "TestCompressionChoices: rounds, each writing every configuration once")
	sizesOnly   = flag.String("sizes.only", "", "TestCompressionChoices: only the configurations whose names match this regular expression")
	sizesZstd19 = flag.Bool("sizes.zstd19", false, "TestCompressionChoices: also compress the go-vcr YAML with the zstd CLI at -19 (about 45 s a stream)")
)

// choice is one way to write the compressed form.
type choice struct {
	name string
	c    compression
}

// choices are the configurations TestCompressionChoices compares, the
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
	deltas := def
	deltas.deltas = true
	betterDeltas := at(b, 4*M, M)
	betterDeltas.deltas = true
	better2 := at(b, 4*M, M)
	better2.concurrency = 2
	return []choice{
		{"base64, default level, 4 MiB segments, 1 MiB window (before)", b64},
		{"bytes, default level, 4/1 MiB (the default)", def},
		{"bytes, default level, 4/1 MiB, object deltas", deltas},
		{"bytes, better level, 4/1 MiB", at(b, 4*M, M)},
		{"bytes, better level, 4/1 MiB, encoder concurrency 2", better2},
		{"bytes, better level, 4/1 MiB, object deltas", betterDeltas},
		{"bytes, best level, 4/1 MiB", at(x, 4*M, M)},
		{"bytes, default level, 16/1 MiB", at(d, 16*M, M)},
		{"bytes, better level, 16/1 MiB", at(b, 16*M, M)},
		{"bytes, default level, 8/8 MiB", at(d, 8*M, 8*M)},
		{"bytes, better level, 32/8 MiB", at(b, 32*M, 8*M)},
		{"bytes, best level, 32/8 MiB", at(x, 32*M, 8*M)},
		{"bytes, better level, 64/64 MiB, object deltas (kwrec compact before)", compressionFor(WriterOptions{Compress: true, Compact: true, SegmentSize: 64 * M})},
		{"bytes, compact: better level, 4/4 MiB, object deltas (kwrec compact)", compressionFor(WriterOptions{Compress: true, Compact: true})},
	}
}

// TestCompressionChoices writes the suite's 20k-event JSON and protobuf
// watches (internal/benchmarks, stream(format, 5000, 20_000)) in each
// configuration of [choices], flushing every 1000 events as a recorder at
// 1000 events/s does, and prints each cassette's size and its write rate:
// raw stream MB per second of one goroutine (Writer.Frame to the
// compressed bytes) and per second of the process's CPU (what recording
// takes from a client on the same cores; garbage collection included),
// median and min-max over -sizes.rounds rounds. The rounds alternate the
// configurations' order, so load from other processes falls on all of
// them; rates on a shared machine are still noisy, sizes are exact. It also prints what a zstd dictionary trained from the first
// segment would save, and, with -sizes.zstd19, go-vcr YAML compressed by
// the zstd CLI at -19. Run it with
//
//	go test ./cassettes/ -run CompressionChoices -v -sizes [-sizes.zstd19]
func TestCompressionChoices(t *testing.T) {
	if !*sizes {
		t.Skip("an experiment: run with -sizes")
	}
	cs := choices()
	if *sizesOnly != "" {
		re := regexp.MustCompile(*sizesOnly)
		cs = slices.DeleteFunc(cs, func(c choice) bool { return !re.MatchString(c.name) })
	}
	type result struct {
		size       int64
		rates, cpu []float64
	}
	formats := []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf}
	res := map[benchmarks.Format][]result{}
	events := map[benchmarks.Format][][]byte{}
	for _, f := range formats {
		events[f] = benchmarks.Generate(f, 5000, 20_000).Events
		res[f] = make([]result, len(cs))
	}
	for r := range *sizesRounds {
		for k := range cs {
			i := (k + r) % len(cs) // each round starts one further on
			for _, f := range formats {
				var out countWriter
				runtime.GC()
				start, cpu := time.Now(), cpuTime()
				raw := writeEvents(t, &out, events[f], f, &cs[i].c)
				res[f][i].rates = append(res[f][i].rates, float64(raw)/1e6/time.Since(start).Seconds())
				res[f][i].cpu = append(res[f][i].cpu, float64(raw)/1e6/(cpuTime()-cpu).Seconds())
				res[f][i].size = out.n
			}
		}
	}
	fmt.Printf("%-62s %9s %9s %18s %18s %18s %18s\n", "configuration", "JSON MB", "proto MB",
		"JSON MB/s", "JSON MB/cpu-s", "proto MB/s", "proto MB/cpu-s")
	for i, c := range cs {
		j, p := res[benchmarks.JSON][i], res[benchmarks.Protobuf][i]
		fmt.Printf("%-62s %9.2f %9.2f %18s %18s %18s %18s\n", c.name, float64(j.size)/1e6, float64(p.size)/1e6,
			spread(j.rates), spread(j.cpu), spread(p.rates), spread(p.cpu))
	}
	for _, f := range formats {
		if *sizesOnly != "" {
			break
		}
		d := dictionarySize(t, events[f], f)
		fmt.Printf("%-62s %s %.2f MB\n", "bytes, default level, 4/1 MiB, dictionary of the first segment", f, float64(d)/1e6)
	}
	if *sizesZstd19 {
		for _, f := range formats {
			fmt.Printf("%-62s %s %.2f MB\n", "go-vcr YAML + zstd -19 (the CLI)", f, float64(vcrZstd19(t, events[f]))/1e6)
		}
	}
}

// cpuTime returns the CPU time the process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// spread formats rates as "median (min-max)".
func spread(rates []float64) string {
	s := slices.Sorted(slices.Values(rates))
	return fmt.Sprintf("%.0f (%.0f-%.0f)", s[len(s)/2], s[0], s[len(s)-1])
}

type countWriter struct{ n int64 }

func (c *countWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// writeEvents writes one watch of events to out, compressed as c says
// (nil: plain text), flushing every 1000 events, and returns the raw
// stream's size.
func writeEvents(t *testing.T, out io.Writer, events [][]byte, f benchmarks.Format, c *compression) int64 {
	w, err := newWriter(out, Header{}, WriterOptions{FlushInterval: time.Hour}, c)
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
func dictionarySize(t *testing.T, events [][]byte, f benchmarks.Format) int64 {
	def := compressionFor(WriterOptions{Compress: true})
	var z bytes.Buffer
	writeEvents(t, &z, events, f, &def)
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
func vcrZstd19(t *testing.T, events [][]byte) int64 {
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
