package cassettes_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
)

// A cut cassette is what a recorder killed at any moment leaves: any prefix
// of the file. These tests cut a small cassette of each form at every byte
// and check that the reader names every cut (ErrTruncated, the file and the
// byte offset) and returns everything complete before it.
//
// Complete, for a prefix of length n:
//   - plain: n is the whole file, or the prefix ends on a line end (just
//     after a newline, or just before one: a last line without its newline
//     is whole when it parses) after the header line, with no interaction
//     left open. Such a prefix is a shorter, valid cassette: nothing tells
//     it from one recorded for less time.
//   - compressed: n is the whole file, or n is where a later zstd frame
//     starts (a seek comment's zstd=C) and no interaction is open at its
//     text offset. A cut anywhere else cuts a zstd frame.
//
// Every other prefix is cut. Before the header line is whole (an empty file,
// a cut inside the zstd magic or the header line) nothing can be recovered.

// cutCassette writes a cassette the way the recorder does, flushing after
// every line: a list, a watch with frames, a get in the middle of the watch,
// the watch stopped. Compressed, its zstd frames hold about 1 KiB of text.
func cutCassette(t testing.TB, compress bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	h := cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), Server: "v1.37.2", Redactions: []string{"header:Authorization"}}
	w, err := cassettes.NewWriter(&buf, h, cassettes.WriterOptions{Compress: compress, Deltas: compress, FlushInterval: time.Hour, SegmentSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err == nil {
			err = w.Flush()
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	must(nil)
	list, err := w.Request(0, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?limit=500"})
	must(err)
	must(w.Response(list, cassettes.Response{Status: 200, Latency: 2 * time.Millisecond}))
	must(w.Frame(list, cassettes.Frame{Data: []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"200"},"items":[]}` + "\n")}))
	must(w.End(list, cassettes.End{Reason: cassettes.EndEOF}))
	watch, err := w.Request(5*time.Millisecond, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?resourceVersion=200&watch=true"})
	must(err)
	must(w.Response(watch, cassettes.Response{Status: 200, Latency: time.Millisecond}))
	for i := range 16 {
		// Five ConfigMaps, each changed: the compressed form writes
		// their later versions as deltas.
		ev := fmt.Sprintf(`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"default","resourceVersion":"%d"},"data":{"k":"v%d"}}}`+"\n", i%5, 201+i, i)
		must(w.Frame(watch, cassettes.Frame{At: time.Duration(i) * 10 * time.Millisecond, Data: []byte(ev)}))
		if i == 8 {
			get, err := w.Request(50*time.Millisecond, cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/namespaces/default/configmaps/cm-1"})
			must(err)
			must(w.Response(get, cassettes.Response{Status: 200}))
			must(w.Frame(get, cassettes.Frame{Data: []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-1"}}` + "\n")}))
			must(w.End(get, cassettes.End{Reason: cassettes.EndEOF}))
		}
	}
	must(w.End(watch, cassettes.End{At: time.Second, Reason: cassettes.EndStopped}))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// cutText is the text a prefix of a cassette file holds, read without the
// cassette reader: the prefix itself, or for the compressed form what a
// zstd decoder's Read gives before the prefix ends. (Its WriteTo gives more
// at a cut inside a frame's 4-byte checksum: the frame's last block, which
// Read holds back until the checksum is verified. The reader uses Read.)
func cutText(t testing.TB, prefix []byte) []byte {
	t.Helper()
	if !cassettes.IsCompressed(prefix) {
		return prefix
	}
	dec, err := zstd.NewReader(bytes.NewReader(prefix), zstd.WithDecoderConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Close()
	var text bytes.Buffer
	io.Copy(&text, struct{ io.Reader }{dec}) // up to the cut: the error is the cut
	return text.Bytes()
}

// openAt returns, for each byte of text, how many interactions are open
// once every line before it has been read, and the end of the header line.
func openAt(t testing.TB, text []byte) (open []int, headerEnd int) {
	t.Helper()
	open = make([]int, len(text)+1)
	n, start := 0, 0
	headerEnd = -1
	for i := range text {
		open[i] = n
		if text[i] != '\n' {
			continue
		}
		line := bytes.TrimSpace(text[start:i])
		if headerEnd < 0 {
			headerEnd = i
		} else if len(line) > 0 && line[0] != '#' {
			var keys map[string]json.RawMessage
			if err := json.Unmarshal(line, &keys); err != nil {
				t.Fatalf("line at %d: %v", start, err)
			}
			if _, ok := keys["request"]; ok {
				n++
			}
			if _, ok := keys["end"]; ok {
				n--
			}
		}
		start = i + 1
	}
	open[len(text)] = n
	return open, headerEnd
}

// wholePrefixes returns the lengths n for which the first n bytes of data
// are a whole cassette (see the rules at the top of this file).
func wholePrefixes(t testing.TB, data []byte) map[int]bool {
	whole := map[int]bool{len(data): true}
	if cassettes.IsCompressed(data) {
		text := cutText(t, data)
		open, _ := openAt(t, text)
		for _, p := range seekPoints(t, text) {
			whole[p[0]] = open[p[1]] == 0
		}
		return whole
	}
	open, headerEnd := openAt(t, data)
	for n := headerEnd; n < len(data); n++ {
		switch {
		case data[n-1] == '\n':
			whole[n] = open[n] == 0
		case data[n] == '\n':
			// The last line, whole but for its newline.
			whole[n] = open[n+1] == 0
		}
	}
	return whole
}

var seekRE = regexp.MustCompile(`(?m)^# kwrec:seek zstd=(\d+) text=(\d+)$`)

// seekPoints returns the (zstd, text) offsets of text's seek comments.
func seekPoints(t testing.TB, text []byte) [][2]int {
	var ps [][2]int
	for _, m := range seekRE.FindAllSubmatch(text, -1) {
		c, _ := strconv.Atoi(string(m[1]))
		x, _ := strconv.Atoi(string(m[2]))
		ps = append(ps, [2]int{c, x})
	}
	if len(ps) < 2 {
		t.Fatalf("%d seek comments; the test needs a cassette of several zstd frames", len(ps))
	}
	return ps
}

// beforeCut is what a cut at n must leave readable: the cassette of the
// whole lines of the text before the cut (the last one may lack its
// newline), nil before the header line is whole.
func beforeCut(t testing.TB, data []byte, n int) *cassettes.Cassette {
	t.Helper()
	text := cutText(t, data[:n])
	if !cassettes.IsCompressed(data) && n < len(data) && data[n] == '\n' {
		text = data[:n+1]
	}
	text = text[:bytes.LastIndexByte(text, '\n')+1]
	if len(text) == 0 {
		return nil
	}
	c, err := cassettes.Read(bytes.NewReader(text), "whole lines")
	if err != nil && !errors.Is(err, cassettes.ErrTruncated) {
		t.Fatalf("the whole lines before byte %d do not read: %v", n, err)
	}
	return c
}

func TestEveryCutNamesItselfAndKeepsWhatCameBefore(t *testing.T) {
	for _, tc := range []struct {
		name     string
		compress bool
	}{{"cassette.kwrec", false}, {"cassette.kwrec.zst", true}} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			data := cutCassette(t, tc.compress)
			wholeAt := wholePrefixes(t, data)
			var whole, cut, lost int
			for n := 0; n <= len(data); n++ {
				c, err := cassettes.Read(bytes.NewReader(data[:n]), tc.name)
				if wholeAt[n] {
					if err != nil {
						t.Fatalf("a whole cassette of %d bytes: %v", n, err)
					}
					whole++
					continue
				}
				var pe *cassettes.ParseError
				if !errors.Is(err, cassettes.ErrTruncated) || !errors.As(err, &pe) {
					t.Fatalf("cut at byte %d: error %v, want a ParseError wrapping ErrTruncated", n, err)
				}
				if pe.Offset != int64(n) || pe.File != tc.name {
					t.Fatalf("cut at byte %d: error names file %q, byte %d: %v", n, pe.File, pe.Offset, err)
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, tc.name) || !strings.Contains(msg, fmt.Sprintf(" byte %d: ", n)) {
					t.Fatalf("cut at byte %d: message does not name the file and the byte: %s", n, msg)
				}
				want := beforeCut(t, data, n)
				if want == nil {
					if c != nil || !strings.HasSuffix(msg, ": nothing can be recovered; re-record it") {
						t.Fatalf("cut at byte %d, before the header is whole: got a cassette (%v) or a message not saying nothing can be recovered: %s", n, c != nil, msg)
					}
					lost++
					continue
				}
				if !strings.Contains(msg, "kwrec lint --fix") {
					t.Fatalf("cut at byte %d: message does not say how to keep what is readable: %s", n, msg)
				}
				if !reflect.DeepEqual(want, c) {
					t.Fatalf("cut at byte %d: what is returned is not every whole line before the cut (-want +got):\n%s", n, cmp.Diff(want, c))
				}
				cut++
			}
			if whole < 1 || cut < 1000 || lost < 4 {
				t.Errorf("%d whole prefixes, %d cuts before the header: the cassette does not exercise the rules", whole, lost)
			}
			t.Logf("%d bytes, %d prefixes: %d whole, %d cut and recoverable, %d cut before the header; %v", len(data), len(data)+1, whole, cut, lost, time.Since(start).Round(time.Millisecond))
		})
	}
}

func TestACutNamesWhereAndWhat(t *testing.T) {
	plain := cutCassette(t, false)
	z := cutCassette(t, true)
	ps := seekPoints(t, cutText(t, z))
	frame := bytes.Index(plain, []byte(`{"frame":2,"at":"20ms"`)) // line 10
	get := bytes.Index(plain, []byte(`{"request":3`))             // line 17
	for _, tc := range []struct {
		name   string
		file   string
		data   []byte
		want   string
		wantIs error // besides ErrTruncated
	}{
		{"an empty file is cut at byte 0 and not a cassette", "x.kwrec", nil,
			"x.kwrec: byte 0: empty file (a cassette cut before its first byte, or not a cassette): nothing can be recovered; re-record it", cassettes.ErrNotCassette},
		{"a cut inside the zstd magic", "x.kwrec.zst", z[:2],
			"x.kwrec.zst: byte 2: cut inside the zstd magic (the first 4 bytes of a compressed cassette): nothing can be recovered; re-record it", nil},
		{"a cut compressed stream before the header line is whole", "x.kwrec.zst", z[:30],
			"x.kwrec.zst: byte 30: compressed stream cut inside the header line (a recorder killed before its first flush?): nothing can be recovered; re-record it", nil},
		{"a cut inside the header's first key", "x.kwrec", plain[:5],
			"x.kwrec:1: byte 5: cut inside the header line: nothing can be recovered; re-record it", nil},
		{"a cut inside the header line", "x.kwrec", plain[:60],
			"x.kwrec:1: byte 60: cut inside the header line: nothing can be recovered; re-record it", nil},
		{"a cut inside a frame line", "x.kwrec", plain[:frame+30],
			fmt.Sprintf("x.kwrec:10: byte %d: the last line is cut (no newline and not a complete entry); everything before it is readable: run `kwrec lint --fix` to keep it", frame+30), nil},
		{"a cut between lines with a watch open", "x.kwrec", plain[:get],
			fmt.Sprintf("x.kwrec:16: byte %d: cassette ends with interaction(s) 2 still open (no end line): the recording was cut; run `kwrec lint --fix` to end them as stopped", get), nil},
		{"a cut inside a compressed frame line", "x.kwrec.zst", z[:ps[0][0]-3],
			fmt.Sprintf("x.kwrec.zst: byte %d: compressed stream cut after line 9 (a recorder killed mid-way?); everything before is readable: run `kwrec lint --fix` to keep it", ps[0][0]-3), nil},
		{"a cut between zstd segments with a watch open", "x.kwrec.zst", z[:ps[0][0]],
			fmt.Sprintf("x.kwrec.zst:10: byte %d: cassette ends with interaction(s) 2 still open (no end line): the recording was cut; run `kwrec lint --fix` to end them as stopped", ps[0][0]), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := cassettes.Read(bytes.NewReader(tc.data), tc.file)
			if !errors.Is(err, cassettes.ErrTruncated) || (tc.wantIs != nil && !errors.Is(err, tc.wantIs)) {
				t.Errorf("error %v does not wrap ErrTruncated and %v", err, tc.wantIs)
			}
			if err == nil || err.Error() != tc.want {
				t.Errorf("error\n\t%v\nwant\n\t%s", err, tc.want)
			}
		})
	}
}

func TestALastLineWithoutNewlineReadsTheSameCompressed(t *testing.T) {
	text := bytes.TrimSuffix(cutCassette(t, false), []byte("\n"))
	var z bytes.Buffer
	if err := cassettes.Compress(&z, bytes.NewReader(text), cassettes.Form{Compressed: true}); err != nil {
		t.Fatal(err)
	}
	want, err := cassettes.Read(bytes.NewReader(text), "x")
	if err != nil {
		t.Fatalf("plain: %v", err)
	}
	got, err := cassettes.Read(&z, "x")
	if err != nil {
		t.Fatalf("compressed: %v; a whole zstd stream is not cut", err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-plain +compressed):\n%s", diff)
	}
}
