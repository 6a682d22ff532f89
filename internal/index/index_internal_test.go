package index

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
)

// seekStates counts an index's seek points by state.
func seekStates(x *Index) map[int32]int {
	n := map[int32]int{}
	for _, fl := range x.files {
		for i := range fl.seeks {
			n[fl.seeks[i].state.Load()]++
		}
	}
	return n
}

func TestSeekPointsAreUsedOnlyOnceTheirBytesCheckOut(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.kwrec.zst")
	w, err := cassettes.Create(path, cassettes.Header{}, cassettes.WriterOptions{SegmentSize: 300, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i := 0; i < 200; i++ {
		w.Frame(id, cassettes.Frame{At: time.Duration(i), Data: fmt.Appendf(nil, `{"type":"ADDED","object":{"n":%d}}`+"\n", i)})
	}
	w.End(id, cassettes.End{Reason: cassettes.EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
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
			x, err := Open(tt.path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if len(x.files[0].seeks) < 40 {
				t.Fatalf("%d seek points, want one per 300 bytes of text", len(x.files[0].seeks))
			}
			in := x.Interactions[0]
			for _, from := range []int{199, 120, 60} {
				fr, err := x.Frames(in, from)
				if err != nil {
					t.Fatal(err)
				}
				f, err := fr.Next()
				fr.Close()
				if want := fmt.Sprintf(`{"type":"ADDED","object":{"n":%d}}`+"\n", from); err != nil || string(f.Data) != want {
					t.Fatalf("frame %d = %q, %v; want %q", from, f.Data, err, want)
				}
			}
			n := seekStates(x)
			if (n[seekGood] > 0) != tt.good || (n[seekBad] > 0) != tt.bad {
				t.Errorf("seek points by state %v; want good %v, bad %v", n, tt.good, tt.bad)
			}
		})
	}
}

func TestEachPartsSeekPointsCheckOut(t *testing.T) {
	dir := t.TempDir()
	w, err := cassettes.Create(filepath.Join(dir, "w.kwrec.zst"), cassettes.Header{}, cassettes.WriterOptions{SegmentSize: 300, MaxSize: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i := 0; i < 400; i++ {
		w.Frame(id, cassettes.Frame{At: time.Duration(i), Data: fmt.Appendf(nil, `{"type":"ADDED","object":{"n":%d}}`+"\n", i)})
		if i%20 == 19 {
			w.Flush()
		}
	}
	w.End(id, cassettes.End{Reason: cassettes.EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	x, err := Open(filepath.Join(dir, "w-*.kwrec.zst"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	if len(x.files) < 3 {
		t.Fatalf("%d parts, want at least 3", len(x.files))
	}
	in := x.Interactions[0]
	for _, from := range []int{399, 250, 120, 60, 5} {
		fr, err := x.Frames(in, from)
		if err != nil {
			t.Fatal(err)
		}
		f, err := fr.Next()
		fr.Close()
		if want := fmt.Sprintf(`{"type":"ADDED","object":{"n":%d}}`+"\n", from); err != nil || string(f.Data) != want {
			t.Fatalf("frame %d = %q, %v; want %q", from, f.Data, err, want)
		}
	}
	if n := seekStates(x); n[seekGood] == 0 || n[seekBad] != 0 {
		t.Errorf("seek points by state %v; want good ones and no bad", n)
	}
	// Frame 250 is in a later part, and was found from its seek points.
	fl := x.fileAt(in.Frames.At(250).off)
	good := 0
	for i := range fl.seeks {
		if fl.seeks[i].state.Load() == seekGood {
			good++
		}
	}
	if fl == x.files[0] || good == 0 {
		t.Errorf("frame 250 is in %s, with %d good seek points; want a later part, with some", fl.name, good)
	}
}
