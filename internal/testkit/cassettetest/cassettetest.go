// Package cassettetest holds the test helpers that package cassettes and
// kwrec's index of a cassette file (replay/internal/index) share: the fixtures, a
// generated cassette, and writers and readers of cassette files.
package cassettetest

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
)

// Fixtures are the cassettes in cassettes/testdata that read without error.
var Fixtures = []string{"list-then-watch.kwrec", "error-and-reset.kwrec", "protobuf-watch.kwrec"}

// Compat are the recordings in cassettes/testdata/compat, written by
// earlier kwrec versions (its README.md says which, how and why).
var Compat = []CompatFile{
	{"pods.kwrec", "compat/pods.kwrec"}, {"binary.kwrec", "compat/binary.kwrec"},
	{"e070fff-pods.kwrec.zst", "compat/pods.kwrec"}, {"e070fff-binary.kwrec.zst", "compat/binary.kwrec"},
	{"e070fff-list-then-watch.kwrec.zst", "list-then-watch.kwrec"}, {"e070fff-protobuf-watch.kwrec.zst", "protobuf-watch.kwrec"},
	{"8337c9e-pods.kwrec.zst", "compat/pods.kwrec"}, {"8337c9e-binary.kwrec.zst", "compat/binary.kwrec"},
	{"6872f18-binary.kwrec.zst", "compat/binary.kwrec"}, {"6872f18-protobuf-watch.kwrec.zst", "protobuf-watch.kwrec"},
	{"6872f18-pods-compact.kwrec.zst", "compat/pods.kwrec"},
	{"18b37eb-pods-deltas.kwrec.zst", "compat/pods.kwrec"}, {"e058fd0-pods-shared.kwrec.zst", "compat/pods.kwrec"},
	{"18b37eb-pods-parts-*.kwrec.zst", "compat/pods.kwrec"},
	{"26a2720-pods-kept-*.kwrec.zst", ""},
	{"e5ab987-pods-kept-*.kwrec", ""},
}

// CompatFile is a recording an earlier kwrec wrote.
type CompatFile struct {
	// Name is a file in cassettes/testdata/compat, or a rotated
	// recording's parts there as a pattern, as [cassettes.Load] and
	// replay.Open take it.
	Name string
	// Source is the recording in cassettes/testdata it holds, the same
	// interactions and frames; empty for a recording record --keep
	// rebased, which holds the state at its start and what followed.
	Source string
}

// Load loads the cassette file path, or the recording a pattern or first
// part names ([cassettes.Load]), or fails the test.
func Load(tb testing.TB, path string) *cassettes.Cassette {
	tb.Helper()
	c, err := cassettes.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	return c
}

// Generated returns a cassette of three interleaved watches with JSON, text and
// binary frames, big enough for many segments.
func Generated() *cassettes.Cassette {
	c := &cassettes.Cassette{Header: cassettes.Header{Server: "v1.37.2", Labels: map[string]string{"scenario": "generated"}}}
	for id := 1; id <= 3; id++ {
		c.Interactions = append(c.Interactions, &cassettes.Interaction{ID: id, At: time.Duration(id) * time.Millisecond,
			Request:  cassettes.Request{Method: "GET", URL: fmt.Sprintf("/api/v1/namespaces/ns%d/pods?watch=true", id)},
			Response: &cassettes.Response{Status: 200}})
	}
	for i := 0; i < 300; i++ {
		in := c.Interactions[i%3]
		var data []byte
		switch i % 7 {
		case 3:
			data = fmt.Appendf(nil, "text chunk %d\n", i)
		case 5:
			data = []byte{0, 0, 0, 3, 0xff, byte(i), 0x80}
		default:
			data = fmt.Appendf(nil, `{"type":"MODIFIED","object":{"metadata":{"name":"p%d","resourceVersion":"%d"},"data":{"k":"%s"}}}`+"\n", i%17, 1000+i, strings.Repeat("v", i%50))
		}
		in.Frames = append(in.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: data})
	}
	for _, in := range c.Interactions[:2] {
		in.End = &cassettes.End{At: time.Second, Reason: cassettes.EndEOF}
	}
	c.Interactions[2].End = &cassettes.End{At: time.Second, Reason: cassettes.EndReset, Error: "read: connection reset by peer"}
	return c
}

// Write writes c to path, one interaction after the other, with the
// writer's options opts.
func Write(t testing.TB, path string, c *cassettes.Cassette, opts cassettes.WriterOptions) {
	t.Helper()
	w, err := cassettes.Create(path, c.Header, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, c)
}

// Encode returns the bytes of c written as [Write] writes it.
func Encode(t testing.TB, c *cassettes.Cassette, opts cassettes.WriterOptions) []byte {
	t.Helper()
	var b bytes.Buffer
	w, err := cassettes.NewWriter(&b, c.Header, opts)
	if err != nil {
		t.Fatal(err)
	}
	writeAll(t, w, c)
	return b.Bytes()
}

// writeAll writes c's interactions to w, one after the other, and closes
// w.
func writeAll(t testing.TB, w *cassettes.Writer, c *cassettes.Cassette) {
	t.Helper()
	for _, in := range c.Interactions {
		if _, err := w.WriteInteraction(in); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// StartWatch starts, on w, a watch of the default namespace's ConfigMaps
// answered 200, for frames to follow, and returns its ID.
func StartWatch(t testing.TB, w *cassettes.Writer) int {
	t.Helper()
	id, err := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/namespaces/default/configmaps?watch=true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Response(id, cassettes.Response{Status: 200}); err != nil {
		t.Fatal(err)
	}
	return id
}

// WriteInterleaved writes c with its interactions' lines interleaved the
// way a recorder writes concurrent ones: frame by frame, round robin.
func WriteInterleaved(t testing.TB, path string, c *cassettes.Cassette, opts cassettes.WriterOptions) {
	t.Helper()
	opts.FlushInterval = time.Hour
	w, err := cassettes.Create(path, c.Header, opts)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int, len(c.Interactions))
	for k, in := range c.Interactions {
		if ids[k], err = w.Request(in.At, in.Request); err != nil {
			t.Fatal(err)
		}
		if in.Response != nil {
			w.Response(ids[k], *in.Response)
		}
	}
	for i := 0; ; i++ {
		more := false
		for k, in := range c.Interactions {
			if i < len(in.Frames) {
				more = true
				w.Frame(ids[k], in.Frames[i])
			}
		}
		if i%10 == 9 {
			w.Flush()
		}
		if !more {
			break
		}
	}
	for k, in := range c.Interactions {
		if in.End != nil {
			w.End(ids[k], *in.End)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// RawText decompresses a compressed file without dropping seek comments.
func RawText(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	dec, err := zstd.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	text, err := io.ReadAll(dec)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// EndOpen ends every interaction of c without an End as
// [cassettes.Repair] ends them in a file, stopped at its last frame's
// offset (0 without frames), and returns their IDs: what a cut
// recording read whole should read as once repaired.
func EndOpen(c *cassettes.Cassette) []int {
	var ended []int
	for _, in := range c.Interactions {
		if in.End != nil {
			continue
		}
		var at time.Duration
		if n := len(in.Frames); n > 0 {
			at = in.Frames[n-1].At
		}
		in.End = &cassettes.End{At: at, Reason: cassettes.EndStopped}
		ended = append(ended, in.ID)
	}
	return ended
}

// Entries returns how many entries (lines after the header) c is.
func Entries(c *cassettes.Cassette) int {
	n := 0
	for _, in := range c.Interactions {
		n += 1 + len(in.Frames)
		if in.Response != nil {
			n++
		}
		if in.End != nil {
			n++
		}
	}
	return n
}
