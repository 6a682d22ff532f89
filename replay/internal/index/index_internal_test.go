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

// seekStates counts an index's seek points: all, and those whose claims
// were checked and held (good) or did not (bad).
type seekStates struct{ all, good, bad int }

func seekStatesOf(x *Index, k int) seekStates {
	unknown, good, bad := x.lines.SeekStates(k)
	return seekStates{unknown + good + bad, good, bad}
}

func allSeekStates(x *Index) seekStates {
	var n seekStates
	for k := range x.files {
		s := seekStatesOf(x, k)
		n.all, n.good, n.bad = n.all+s.all, n.good+s.good, n.bad+s.bad
	}
	return n
}

// readsFrameN reads frame from of in, alone, which must be the event
// {"n":from}.
func readsFrameN(t *testing.T, x *Index, in *Interaction, from int) {
	t.Helper()
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
			if n := seekStatesOf(x, 0).all; n < 40 {
				t.Fatalf("%d seek points, want one per 300 bytes of text", n)
			}
			in := x.Interactions[0]
			for _, from := range []int{199, 120, 60} {
				readsFrameN(t, x, in, from)
			}
			n := allSeekStates(x)
			if (n.good > 0) != tt.good || (n.bad > 0) != tt.bad {
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
		readsFrameN(t, x, in, from)
	}
	if n := allSeekStates(x); n.good == 0 || n.bad != 0 {
		t.Errorf("seek points by state %v; want good ones and no bad", n)
	}
	// Frame 250 is in a later part, and was found from its seek points.
	k := x.lines.FileAt(in.Frames.At(250).off)
	if good := seekStatesOf(x, k).good; k == 0 || good == 0 {
		t.Errorf("frame 250 is in %s, with %d good seek points; want a later part, with some", x.names[k], good)
	}
}
