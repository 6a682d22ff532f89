package cassettefile_test

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cassettefile"
)

// scanned is a cassette's Lines, placed by a Scanner that read its files,
// and where each frame line of "n" events is (by n).
type scanned struct {
	lines  *cassettefile.Lines
	frames map[int][2]int64 // n: text offset, length
	names  []string
}

// scan reads the cassette in paths (a file, or a recording's parts) as
// kwrec's index does, noting where each {"n":N} frame's line is.
func scan(t *testing.T, paths []string) scanned {
	t.Helper()
	parts := make([]cassettefile.Part, len(paths))
	files := make([]cassettefile.LinesFile, len(paths))
	for k, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		parts[k] = cassettefile.Part{R: f, Name: p}
		files[k] = cassettefile.LinesFile{R: f, Name: p}
	}
	sc := cassettefile.NewScanner(parts, cassettefile.ScanOptions{Check: cassettefile.CheckNone, Ahead: true, Borrow: true})
	defer sc.Close()
	if err := sc.Start(); err != nil {
		t.Fatal(err)
	}
	s := scanned{lines: cassettefile.NewLines(files), frames: map[int][2]int64{}, names: paths}
	for {
		line, err := sc.ReadLine()
		if err == io.EOF {
			if more, err := sc.NextFile(); err != nil {
				t.Fatal(err)
			} else if more {
				continue
			}
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if i := bytes.Index(line, []byte(`"n":`)); i >= 0 {
			var n int
			fmt.Sscanf(string(line[i+len(`"n":`):]), "%d", &n)
			off, l := sc.Line()
			s.frames[n] = [2]int64{off, int64(l)}
		}
	}
	s.lines.Place(sc)
	return s
}

// readsFrameN reads the line of event n alone, with a new cursor.
func (s scanned) readsFrameN(t *testing.T, n int) {
	t.Helper()
	c := s.lines.Cursor()
	defer c.Close()
	loc, ok := s.frames[n]
	if !ok {
		t.Fatalf("no frame %d scanned", n)
	}
	line, err := c.ReadLine(loc[0], int(loc[1]), nil)
	if want := fmt.Sprintf(`"n":%d}`, n); err != nil || !bytes.Contains(line, []byte(want)) {
		t.Fatalf("line of frame %d = %q, %v; want one holding %s", n, line, err, want)
	}
}

// seekStates counts seek points: all, and those whose claims were checked
// and held (good) or did not (bad).
type seekStates struct{ all, good, bad int }

func (s scanned) statesOf(k int) seekStates {
	unknown, good, bad := s.lines.SeekStates(k)
	return seekStates{unknown + good + bad, good, bad}
}

func (s scanned) allStates() seekStates {
	var n seekStates
	for k := range s.names {
		x := s.statesOf(k)
		n.all, n.good, n.bad = n.all+x.all, n.good+x.good, n.bad+x.bad
	}
	return n
}

// record writes a watch of n {"n":i} events with small segments.
func record(t *testing.T, path string, n int, opts cassettes.WriterOptions) {
	t.Helper()
	w, err := cassettes.Create(path, cassettes.Header{}, opts)
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i := 0; i < n; i++ {
		w.Frame(id, cassettes.Frame{At: time.Duration(i), Data: fmt.Appendf(nil, `{"type":"ADDED","object":{"n":%d}}`+"\n", i)})
		if i%20 == 19 {
			w.Flush()
		}
	}
	w.End(id, cassettes.End{Reason: cassettes.EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSeekPointsAreUsedOnlyOnceTheirBytesCheckOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.kwrec.zst")
	record(t, path, 200, cassettes.WriterOptions{SegmentSize: 300, FlushInterval: time.Hour})
	z, _ := os.ReadFile(path)
	dec, _ := zstd.NewReader(bytes.NewReader(z))
	text, _ := io.ReadAll(dec)
	dec.Close()
	var stale bytes.Buffer
	enc, _ := zstd.NewWriter(&stale)
	enc.Write(text)
	enc.Close()
	stalePath := filepath.Join(dir, "stale.kwrec.zst")
	os.WriteFile(stalePath, stale.Bytes(), 0o644)

	tests := []struct {
		name      string
		path      string
		good, bad bool
	}{
		{"the writer's seek points check out", path, true, false},
		{"another tool's recompression leaves stale seek points, which are not used", stalePath, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := scan(t, []string{tt.path})
			if n := s.statesOf(0).all; n < 40 {
				t.Fatalf("%d seek points, want one per 300 bytes of text", n)
			}
			for _, n := range []int{199, 120, 60} {
				s.readsFrameN(t, n)
			}
			n := s.allStates()
			if (n.good > 0) != tt.good || (n.bad > 0) != tt.bad {
				t.Errorf("seek points by state %v; want good %v, bad %v", n, tt.good, tt.bad)
			}
		})
	}
}

func TestEachPartsSeekPointsCheckOut(t *testing.T) {
	dir := t.TempDir()
	record(t, filepath.Join(dir, "w.kwrec.zst"), 400, cassettes.WriterOptions{SegmentSize: 300, MaxSize: 1000, FlushInterval: time.Hour})
	paths, err := cassettes.Parts(filepath.Join(dir, "w-*.kwrec.zst"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) < 3 {
		t.Fatalf("%d parts, want at least 3", len(paths))
	}
	s := scan(t, paths)
	for _, n := range []int{399, 250, 120, 60, 5} {
		s.readsFrameN(t, n)
	}
	if n := s.allStates(); n.good == 0 || n.bad != 0 {
		t.Errorf("seek points by state %v; want good ones and no bad", n)
	}
	// Frame 250 is in a later part, and was found from its seek points.
	k := s.lines.FileAt(s.frames[250][0])
	if good := s.statesOf(k).good; k == 0 || good == 0 {
		t.Errorf("frame 250 is in %s, with %d good seek points; want a later part, with some", s.names[k], good)
	}
}
