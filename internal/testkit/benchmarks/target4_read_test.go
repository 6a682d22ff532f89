package benchmarks_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// readAll streams every entry of the cassette in data and returns the
// number of frames.
func readAll(tb testing.TB, r io.Reader) int {
	cr, err := cassettes.NewReader(r, "bench")
	if err != nil {
		tb.Fatal(err)
	}
	defer cr.Close()
	n := 0
	for {
		e, err := cr.Next()
		if err == io.EOF {
			return n
		}
		if err != nil {
			tb.Fatal(err)
		}
		if e.Frame != nil {
			n++
		}
	}
}

// readFiles caches, per process, the 10k-event cassette in text and zstd
// form and as go-vcr YAML.
var readFiles = sync.OnceValues(func() ([3][]byte, int64) {
	evs := bigStream().Events[:10_000]
	var text, zst bytes.Buffer
	raw := writeWatch(panicTB{}, &text, evs, 1000, false)
	writeWatch(panicTB{}, &zst, evs, 1000, true)
	return [3][]byte{text.Bytes(), zst.Bytes(), vcrYAML(panicTB{}, evs)}, raw
})

// panicTB lets sync.OnceValues helpers use the testing.TB helpers.
type panicTB struct{ testing.TB }

func (panicTB) Fatal(args ...any) { panic(fmt.Sprint(args...)) }

// BenchmarkCassettesReadFast is target 4.
//
// events=10k: streaming read (cassettes.Reader, entry by entry) of the text
// form, and of the zstd form, at least 2x go-vcr's cassette load (YAML
// unmarshal) of the same watch, in MB/s of raw watch JSON for all three.
//
// events=100k: a 100k-event (670 MB raw) zstd cassette read by
// cassettes.Reader; opened (replay.Open: the index and the object state in
// one pass, frames left in the file) and replayed (the watch's whole body
// served through Replayer.RoundTrip to io.Discard; client-go's decoding is
// targets 1 and 2); and, for comparison, loaded whole (cassettes.Load) and
// replayed (replay.New). Each runs in a fresh subprocess whose peak resident
// memory (VmHWM) is reported, with the subprocess's baseline before it
// starts. Target: stream-read and open-replay under 100 MB.
func BenchmarkCassettesReadFast(b *testing.B) {
	b.Run("events=10k", func(b *testing.B) {
		files, raw := readFiles()
		text, zst, yml := files[0], files[1], files[2]
		sides := []*side{{name: "kwrec-text"}, {name: "kwrec-zstd"}, {name: "go-vcr-yaml"}}
		runs := []func() func(){
			func() func() { return func() { readAll(b, bytes.NewReader(text)) } },
			func() func() { return func() { readAll(b, bytes.NewReader(zst)) } },
			func() func() {
				return func() {
					var vc cassette.Cassette
					if err := yaml.Unmarshal(yml, &vc); err != nil {
						b.Fatal(err)
					}
				}
			},
		}
		b.ReportAllocs()
		for b.Loop() {
			for i, s := range sides {
				s.run(int(raw), runs[i])
			}
		}
		for _, s := range sides {
			b.ReportMetric(s.rate()/1e6, s.name+"-MB/s")
		}
		b.ReportMetric(sides[0].rate()/sides[2].rate(), "text/go-vcr")
		b.ReportMetric(sides[1].rate()/sides[2].rate(), "zstd/go-vcr")
		b.ReportMetric(float64(len(text))/1e6, "MB-text")
	})
	b.Run("events=100k", func(b *testing.B) {
		path := bigCassette(b)
		var read, opened, loaded, unz childResult
		for b.Loop() {
			unz = runChild(b, "decompress", path)
			read = runChild(b, "stream-read", path)
			opened = runChild(b, "open-replay", path)
			loaded = runChild(b, "load-replay", path)
		}
		b.ReportMetric(unz.Seconds, "s-decompress")
		b.ReportMetric(opened.LoadSeconds/unz.Seconds, "open/decompress")
		b.ReportMetric(read.PeakMB, "MB-peak-stream-read")
		b.ReportMetric(opened.PeakMB, "MB-peak-open-replay")
		b.ReportMetric(loaded.PeakMB, "MB-peak-load-replay")
		b.ReportMetric(read.BaseMB, "MB-baseline")
		b.ReportMetric(read.Bytes/1e6/read.Seconds, "stream-read-MB/s")
		b.ReportMetric(opened.LoadSeconds, "s-open")
		b.ReportMetric(loaded.LoadSeconds, "s-load")
		b.ReportMetric(float64(opened.Events)/(opened.Seconds-opened.LoadSeconds), "open-replay-events/s")
		b.ReportMetric(float64(loaded.Events)/(loaded.Seconds-loaded.LoadSeconds), "load-replay-events/s")
	})
}

var bigCassettePath string

// bigCassette writes the 100k-event zstd cassette to a file once per process.
//
// With KWREC_BENCH_PROFILE=DIR set, the file is kept in DIR (and reused by
// the next run) and each subprocess writes DIR/MODE.cpu.pprof and, at its
// peak, DIR/MODE.opened.heap.pprof (cassette open) and
// DIR/MODE.serving.heap.pprof (500 MB served): the profiles
// that show where time and memory go.
func bigCassette(b *testing.B) string {
	if dir := os.Getenv(profileEnv); dir != "" && bigCassettePath == "" {
		p := filepath.Join(dir, "watch-100k.kwrec.zst")
		if _, err := os.Stat(p); err == nil {
			bigCassettePath = p
		}
	}
	if bigCassettePath == "" {
		dir := os.Getenv(profileEnv)
		if dir == "" {
			dir = tempDir(b)
		}
		p := filepath.Join(dir, "watch-100k.kwrec.zst")
		f, err := os.Create(p)
		if err != nil {
			b.Fatal(err)
		}
		bw := bufio.NewWriter(f)
		writeWatch(b, bw, bigStream().Events, 1000, true)
		if err := bw.Flush(); err != nil {
			b.Fatal(err)
		}
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		bigCassettePath = p
	}
	return bigCassettePath
}

const profileEnv = "KWREC_BENCH_PROFILE"

// childResult is what a measuring subprocess reports on stdout.
type childResult struct {
	Events      int
	Bytes       float64 // raw frame bytes read or served
	Seconds     float64 // the whole job
	LoadSeconds float64 // replay.Open, or cassettes.Load and replay.New, alone
	BaseMB      float64 // VmHWM before the job
	PeakMB      float64 // VmHWM after it
}

func runChild(b *testing.B, mode, path string) childResult {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childEnv+"_PATH="+path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s child: %v\n%s", mode, err, stderr.Bytes())
	}
	var r childResult
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("%s child printed %q: %v", mode, out, err)
	}
	return r
}

// child runs one measuring job (see runChild) and exits: TestMain calls it
// in place of the tests when childEnv is set.
func child(mode, path string) int {
	r := childResult{BaseMB: vmHWM()}
	fail := func(err error) int { fmt.Fprintln(os.Stderr, err); return 1 }
	profDir := os.Getenv(profileEnv)
	if profDir != "" {
		f, err := os.Create(filepath.Join(profDir, mode+".cpu.pprof"))
		if err != nil {
			return fail(err)
		}
		defer f.Close()
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	heapProfile := func(when string) {
		if profDir == "" {
			return
		}
		f, err := os.Create(filepath.Join(profDir, mode+"."+when+".heap.pprof"))
		if err == nil {
			runtime.GC()
			pprof.WriteHeapProfile(f)
			f.Close()
		}
	}
	start := time.Now()
	switch mode {
	case "decompress":
		// The floor for an open: the file decompressed to io.Discard with
		// klauspost's zstd, as cassettes reads it (one goroutine).
		f, err := os.Open(path)
		if err != nil {
			return fail(err)
		}
		dec, err := zstd.NewReader(bufio.NewReaderSize(f, 1<<20), zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return fail(err)
		}
		n, err := io.Copy(io.Discard, dec)
		dec.Close()
		f.Close()
		if err != nil {
			return fail(err)
		}
		r.Bytes = float64(n)
	case "stream-read":
		cr, err := cassettes.Open(path)
		if err != nil {
			return fail(err)
		}
		for {
			e, err := cr.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				return fail(err)
			}
			if e.Frame != nil {
				r.Events++
				r.Bytes += float64(len(e.Frame.Data))
			}
		}
		cr.Close()
	case "open-replay", "load-replay":
		var rp *replay.Replayer
		var err error
		if mode == "open-replay" {
			rp, err = replay.Open(path, replay.Options{})
		} else {
			var c *cassettes.Cassette
			if c, err = cassettes.Load(path); err == nil {
				rp, err = replay.New(c, replay.Options{})
			}
		}
		if err != nil {
			return fail(err)
		}
		defer rp.Close()
		r.LoadSeconds = time.Since(start).Seconds()
		heapProfile("opened")
		// The watch to replay is the first request: read from the file's
		// first lines, for Interactions() would build every frame's
		// skeleton, which a replay alone never does.
		u, err := firstRequestURL(path)
		if err != nil {
			return fail(err)
		}
		req, _ := http.NewRequest("GET", u, nil)
		req.Header.Set("Accept", "application/json")
		resp, err := rp.RoundTrip(req)
		if err != nil {
			return fail(err)
		}
		lines := &lineCounter{}
		n, err := io.CopyN(lines, resp.Body, 500<<20)
		if err == nil {
			heapProfile("serving")
			var m int64
			m, err = io.Copy(lines, resp.Body)
			n += m
		}
		if err != nil && err != io.EOF {
			return fail(err)
		}
		resp.Body.Close()
		r.Events, r.Bytes = lines.n, float64(n)
	case "record-million":
		var err error
		if r.Events, r.Bytes, err = recordMillion(path); err != nil {
			return fail(err)
		}
	default:
		return fail(fmt.Errorf("unknown child mode %q", mode))
	}
	r.Seconds = time.Since(start).Seconds()
	r.PeakMB = vmHWM()
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return fail(err)
	}
	return 0
}

// firstRequestURL returns the URL of the first request of the cassette at
// path.
func firstRequestURL(path string) (string, error) {
	cr, err := cassettes.Open(path)
	if err != nil {
		return "", err
	}
	defer cr.Close()
	for {
		e, err := cr.Next()
		if err != nil {
			return "", fmt.Errorf("%s: no request: %v", path, err)
		}
		if e.Request != nil {
			return e.Request.URL, nil
		}
	}
}

// lineCounter counts the newlines written to it: a JSON watch's events.
type lineCounter struct{ n int }

func (c *lineCounter) Write(p []byte) (int, error) {
	c.n += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

// vmHWM returns the process's peak resident set size in MB, 0 if unknown.
func vmHWM() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}
