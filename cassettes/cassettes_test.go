package cassettes_test

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

func TestHandWrittenFixturesReadAsTheSpecSays(t *testing.T) {
	tests := []struct {
		name  string
		file  string
		check func(t *testing.T, c *cassettes.Cassette)
	}{
		{"the doc example holds a list and a watch with an inserted ERROR event", "list-then-watch.kwrec", func(t *testing.T, c *cassettes.Cassette) {
			if len(c.Interactions) != 2 {
				t.Fatalf("%d interactions, want 2", len(c.Interactions))
			}
			w := c.Interactions[1]
			if w.At != 5*time.Millisecond || w.Response.Latency != time.Millisecond || len(w.Frames) != 3 {
				t.Fatalf("watch at %v latency %v frames %d, want 5ms 1ms 3", w.At, w.Response.Latency, len(w.Frames))
			}
			want := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 200 (201)","reason":"Expired","code":410}}` + "\n"
			if got := string(w.Frames[1].Data); got != want {
				t.Errorf("frame 2 = %q, want %q", got, want)
			}
			if w.End.Reason != cassettes.EndStopped || w.End.At != 90*time.Second {
				t.Errorf("end = %+v, want stopped at 1m30s", *w.End)
			}
			if c.Header.Server != "v1.37.2" || !c.Header.RecordedAt.Equal(time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)) {
				t.Errorf("header = %+v", c.Header)
			}
		}},
		{"interleaved interactions keep their own frames, reset errors and text frames", "error-and-reset.kwrec", func(t *testing.T, c *cassettes.Cassette) {
			if len(c.Interactions) != 3 {
				t.Fatalf("%d interactions, want 3", len(c.Interactions))
			}
			if c.Interactions[0].Response.Status != 410 {
				t.Errorf("status %d, want 410", c.Interactions[0].Response.Status)
			}
			v := c.Interactions[2]
			if v.Response != nil || v.End.Reason != cassettes.EndReset || !strings.Contains(v.End.Error, "connection refused") {
				t.Errorf("interaction 3 = %+v %+v, want a reset before any response", v.Response, v.End)
			}
			w := c.Interactions[1]
			if got := string(w.Frames[1].Data); got != "plain chunk with a \"quote\" and a newline\n" {
				t.Errorf("text frame = %q", got)
			}
			if c.Header.Labels["scenario"] != "errors" {
				t.Errorf("labels = %v", c.Header.Labels)
			}
		}},
		{"a base64 frame holds the exact binary bytes", "protobuf-watch.kwrec", func(t *testing.T, c *cassettes.Cassette) {
			got := c.Interactions[0].Frames[0].Data
			want := []byte{0, 0, 0, 5, 0x6b, 0x08, 0x00, 0xff, 0xff}
			if !bytes.Equal(got, want) {
				t.Errorf("frame = % x, want % x", got, want)
			}
			if c.Interactions[0].End.Reason != cassettes.EndTimeout {
				t.Errorf("end = %v", c.Interactions[0].End.Reason)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.check(t, cassettetest.Load(t, filepath.Join("testdata", tt.file)))
		})
	}
}

func canonical(t testing.TB, c *cassettes.Cassette, compress bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := cassettes.Write(&b, c, compress); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestReadWriteReadGivesEqualCassettes(t *testing.T) {
	for _, f := range cassettetest.Fixtures {
		for _, compress := range []bool{false, true} {
			t.Run(f, func(t *testing.T) {
				c := cassettetest.Load(t, filepath.Join("testdata", f))
				out := canonical(t, c, compress)
				c2, err := cassettes.Read(bytes.NewReader(out), f)
				if err != nil {
					t.Fatal(err)
				}
				// Save writes each interaction's lines together, so IDs are
				// renumbered in request order; the content is equal.
				if diff := cmp.Diff(c, c2, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("read → write → read changed the cassette (-first +second):\n%s", diff)
				}
				if again := canonical(t, c2, false); !bytes.Equal(again, canonical(t, c, false)) {
					t.Errorf("the canonical text form is not stable")
				}
			})
		}
	}
}

func TestTextCompressedTextIsByteIdentical(t *testing.T) {
	for _, f := range append(cassettetest.Fixtures, "cut.kwrec") {
		t.Run(f, func(t *testing.T) {
			text, err := os.ReadFile(filepath.Join("testdata", f))
			if err != nil {
				t.Fatal(err)
			}
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(text), cassettes.Form{Compressed: true}); err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(z.Bytes()[:4], text[:4]) {
				t.Fatal("compressed form looks like the text form")
			}
			pr, err := cassettes.Plain(&z)
			if err != nil {
				t.Fatal(err)
			}
			back, err := io.ReadAll(pr)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, text) {
				t.Errorf("text → compressed → text differs:\n%s", cmp.Diff(string(text), string(back)))
			}
		})
	}
}

func TestSaveIsAtomicAndPicksTheFormByExtension(t *testing.T) {
	dir := t.TempDir()
	c := cassettetest.Load(t, "testdata/list-then-watch.kwrec")
	for _, name := range []string{"a.kwrec", "a.kwrec.zst"} {
		p := filepath.Join(dir, name)
		if err := cassettes.Save(p, c); err != nil {
			t.Fatal(err)
		}
		raw, _ := os.ReadFile(p)
		compressed := bytes.HasPrefix(raw, []byte{0x28, 0xb5, 0x2f, 0xfd})
		if compressed != strings.HasSuffix(name, ".zst") {
			t.Errorf("%s: compressed = %v", name, compressed)
		}
		if diff := cmp.Diff(c, cassettetest.Load(t, p), cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: %s", name, diff)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 2 {
		t.Errorf("temporary files left behind: %v", entries)
	}
	// A failed save leaves the old file as it was.
	bad := &cassettes.Cassette{Interactions: []*cassettes.Interaction{{Request: cassettes.Request{Method: "GET", URL: "/x"},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: "exploded"}}}}
	p := filepath.Join(dir, "a.kwrec")
	before, _ := os.ReadFile(p)
	want := p + `: cassette: end of interaction 1: invalid reason "exploded"`
	if err := cassettes.Save(p, bad); err == nil || err.Error() != want {
		t.Fatalf("saving an invalid end reason: %v, want %s", err, want)
	}
	after, _ := os.ReadFile(p)
	if !bytes.Equal(before, after) {
		t.Error("a failed save changed the file")
	}
}

func TestMalformedCassettesFailWithAnErrorNamingTheLine(t *testing.T) {
	const hdr = `{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[]}` + "\n"
	const req = `{"request":1,"at":"0s","method":"GET","url":"/api/v1/pods"}` + "\n"
	const resp = `{"response":1,"latency":"1ms","status":200}` + "\n"
	tests := []struct {
		name    string
		input   string
		wantErr error
		wantMsg string
	}{
		{"an empty file is not a cassette", "", cassettes.ErrNotCassette,
			"bad: byte 0: empty file (a cassette cut before its first byte, or not a cassette): nothing can be recovered; re-record it"},
		{"random bytes are not a cassette", "\x00\x01garbage\x7f\n", cassettes.ErrNotCassette,
			`bad:1: not a kwrec cassette: line 1 must be the header {"kwrec":1,...} (see the cassettes package doc for the format)`},
		{"a go-vcr YAML file is not a kwrec cassette", "---\nversion: 2\n", cassettes.ErrNotCassette,
			`bad:1: not a kwrec cassette: line 1 must be the header {"kwrec":1,...} (see the cassettes package doc for the format)`},
		{"an unknown version is refused", `{"kwrec":7,"recordedAt":"2026-12-01T00:00:00Z"}` + "\n", cassettes.ErrUnsupportedVersion,
			"bad:1: cassette format version 7 is not supported (this kwrec reads version 1); re-record the cassette or use a kwrec that reads version 7"},
		{"a later version's header key does not hide its version", `{"kwrec":2,"recordedAt":"2027-06-01T00:00:00Z","dictionary":"KLUv"}` + "\n", cassettes.ErrUnsupportedVersion,
			"bad:1: cassette format version 2 is not supported (this kwrec reads version 1); re-record the cassette or use a kwrec that reads version 2"},
		{"a typo in a header key is named", `{"kwrec":1,"recordAt":"2026-12-01T00:00:00Z"}` + "\n", cassettes.ErrSyntax,
			`bad:1: bad header: unknown field "recordAt"; expected {"kwrec":1,"recordedAt":"RFC 3339 time",...}`},
		{"a request without a url", hdr + `{"request":1,"at":"0s","method":"GET"}` + "\n", cassettes.ErrSyntax,
			`bad:2: request 1 needs "method" and "url"`},
		{"a bad duration", hdr + `{"request":1,"at":"5 seconds","method":"GET","url":"/"}` + "\n", cassettes.ErrSyntax,
			`bad:2: bad "at" "5 seconds"; expected a duration such as "1.5s" or "250ms"`},
		{"a missing offset", hdr + `{"request":1,"method":"GET","url":"/"}` + "\n", cassettes.ErrSyntax,
			`bad:2: missing "at"; expected a duration such as "1.5s" or "250ms"`},
		{"a negative offset", hdr + req + `{"response":1,"latency":"-1ms","status":200}` + "\n", cassettes.ErrSyntax,
			`bad:3: negative "latency" "-1ms"; offsets and latencies are never negative`},
		{"decreasing frame offsets", hdr + req + resp + `{"frame":1,"at":"2s","text":"a"}` + "\n" + `{"frame":1,"at":"1s","text":"b"}` + "\n", cassettes.ErrSyntax,
			"bad:5: frame of interaction 1 at 1s is before the previous frame (2s); frame offsets never decrease"},
		{"decreasing request offsets", hdr + `{"request":1,"at":"1s","method":"GET","url":"/"}` + "\n" + `{"request":2,"at":"0s","method":"GET","url":"/"}` + "\n", cassettes.ErrSyntax,
			"bad:3: request 2 at 0s starts before the previous request (1s); request offsets never decrease"},
		{"an invalid JSON event", hdr + req + resp + `{"frame":1,"at":"0s","json":{"type":"ADDED",}}` + "\n", cassettes.ErrSyntax,
			"bad:4: invalid line: invalid character '}' looking for beginning of object key string; expected one JSON object per line"},
		{"a typo in a field", hdr + req + `{"response":1,"latency":"1ms","staus":200}` + "\n", cassettes.ErrSyntax,
			`bad:3: invalid line: unknown field "staus"; expected one JSON object per line`},
		{"a status out of range", hdr + req + `{"response":1,"latency":"1ms","status":2000}` + "\n", cassettes.ErrSyntax,
			"bad:3: response 1: status 2000 is not an HTTP status; expected 100-999"},
		{"a frame before its response", hdr + req + `{"frame":1,"at":"0s","text":"x"}` + "\n", cassettes.ErrSyntax,
			"bad:3: frame for interaction 1 before its response line"},
		{"a frame of an unknown interaction", hdr + `{"frame":4,"at":"0s","text":"x"}` + "\n", cassettes.ErrSyntax,
			"bad:2: frame for interaction 4, which has no request line before it"},
		{"a frame with two bodies", hdr + req + resp + `{"frame":1,"at":"0s","text":"x","base64":"eA=="}` + "\n", cassettes.ErrSyntax,
			`bad:4: frame of interaction 1 needs exactly one of "json", "text" or "base64"`},
		{"bad base64", hdr + req + resp + `{"frame":1,"at":"0s","base64":"!!"}` + "\n", cassettes.ErrSyntax,
			"bad:4: frame of interaction 1: bad base64: illegal base64 data at input byte 0"},
		{"an unknown end reason", hdr + req + resp + `{"end":1,"at":"0s","reason":"exploded"}` + "\n", cassettes.ErrSyntax,
			`bad:4: end of interaction 1: reason "exploded" is not one of eof, timeout, reset, stopped`},
		{"a line after the end", hdr + req + resp + `{"end":1,"at":"0s","reason":"eof"}` + "\n" + `{"frame":1,"at":"0s","text":"x"}` + "\n", cassettes.ErrSyntax,
			"bad:5: frame for interaction 1 after its end line"},
		{"a duplicate request number", hdr + req + req, cassettes.ErrSyntax,
			"bad:3: request 1 appears twice (first on line 2); number each interaction once"},
		{"a line of two kinds", hdr + `{"request":1,"frame":1,"at":"0s","method":"GET","url":"/"}` + "\n", cassettes.ErrSyntax,
			`bad:2: a line must have exactly one of "request", "response", "frame" or "end" (the interaction number)`},
		{"interaction zero", hdr + `{"request":0,"at":"0s","method":"GET","url":"/"}` + "\n", cassettes.ErrSyntax,
			"bad:2: interaction number 0; interactions are numbered from 1"},
		{"an interaction left open is a cut recording", hdr + req + resp, cassettes.ErrTruncated,
			"bad:3: byte 168: cassette ends with interaction(s) 1 still open (no end line): the recording was cut; run `kwrec lint --fix` to end them as stopped"},
		{"a cut last line", hdr + req + `{"response":1,"lat`, cassettes.ErrTruncated,
			"bad:3: byte 142: the last line is cut (no newline and not a complete entry); everything before it is readable: run `kwrec lint --fix` to keep it"},
		{"truncated zstd", "zstd-cut", cassettes.ErrTruncated, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := []byte(tt.input)
			if tt.input == "zstd-cut" {
				// The writer flushes after the header, so the header
				// survives a cut of the last block.
				z := canonical(t, cassettetest.Load(t, "testdata/list-then-watch.kwrec"), true)
				in = z[:len(z)-20]
			}
			c, err := cassettes.Read(bytes.NewReader(in), "bad")
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error = %v, want one wrapping %v", err, tt.wantErr)
			}
			if tt.wantMsg != "" && err.Error() != tt.wantMsg {
				t.Errorf("error =\n\t%s\nwant\n\t%s", err, tt.wantMsg)
			}
			if errors.Is(err, cassettes.ErrTruncated) && c == nil && !strings.Contains(err.Error(), "nothing can be recovered") {
				t.Error("a truncated cassette returned nothing; everything before the cut must be returned")
			}
		})
	}
}

func TestACutCompressedCassetteKeepsEverythingBeforeTheCut(t *testing.T) {
	c := cassettetest.Load(t, "testdata/list-then-watch.kwrec")
	z := canonical(t, c, true)
	for cut := len(z) - 1; cut > 20; cut -= 7 {
		got, err := cassettes.Read(bytes.NewReader(z[:cut]), "cut.zst")
		if !errors.Is(err, cassettes.ErrTruncated) && !errors.Is(err, cassettes.ErrSyntax) && !errors.Is(err, cassettes.ErrNotCassette) {
			t.Fatalf("cut at %d: error %v, want truncated", cut, err)
		}
		if got != nil && len(got.Interactions) > len(c.Interactions) {
			t.Fatalf("cut at %d: more interactions than recorded", cut)
		}
		var pe *cassettes.ParseError
		if errors.As(err, &pe) && errors.Is(err, cassettes.ErrTruncated) && pe.Offset < 0 && pe.Line == 0 {
			t.Fatalf("cut at %d: error %v names neither offset nor line", cut, err)
		}
	}
}

// lockedBuffer is a bytes.Buffer safe for the writer's flush goroutine;
// wrote receives a signal after each Write.
type lockedBuffer struct {
	mu    sync.Mutex
	b     bytes.Buffer
	wrote chan struct{}
}

func newLockedBuffer() *lockedBuffer { return &lockedBuffer{wrote: make(chan struct{}, 1)} }

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	select {
	case l.wrote <- struct{}{}:
	default:
	}
	return l.b.Write(p)
}

func (l *lockedBuffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]byte(nil), l.b.Bytes()...)
}

func TestWriterStreamsAndHeaderNotes(t *testing.T) {
	out := newLockedBuffer()
	w, err := cassettes.NewWriter(out, cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Redactions: []string{"header:Authorization"}}, cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	a, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/w1", Header: http.Header{"Accept": {"application/json"}}})
	b, _ := w.Request(time.Millisecond, cassettes.Request{Method: "GET", URL: "/w2"})
	if err := w.Frame(a, cassettes.Frame{Data: []byte("x")}); err == nil || err.Error() != "cassette: frame for interaction 1 before its response" {
		t.Errorf("a frame before the response: %v, want the error saying so", err)
	}
	w.Response(b, cassettes.Response{Status: 200})
	w.Response(a, cassettes.Response{Status: 200})
	w.Frame(b, cassettes.Frame{At: 2 * time.Millisecond, Data: []byte(`{"type":"ADDED","object":{}}` + "\n")})
	w.Frame(a, cassettes.Frame{At: 3 * time.Millisecond, Data: []byte{0xff, 0x00}})
	w.End(b, cassettes.End{At: 4 * time.Millisecond, Reason: cassettes.EndEOF})
	if got := w.Open(); len(got) != 1 || got[0] != a {
		t.Errorf("open = %v, want [%d]", got, a)
	}
	w.End(a, cassettes.End{At: 5 * time.Millisecond, Reason: cassettes.EndStopped})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	want := `{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":["header:Authorization"]}
{"request":1,"at":"0s","method":"GET","url":"/w1","header":{"Accept":["application/json"]}}
{"request":2,"at":"1ms","method":"GET","url":"/w2"}
{"response":2,"latency":"0s","status":200}
{"response":1,"latency":"0s","status":200}
{"frame":2,"at":"2ms","json":{"type":"ADDED","object":{}}}
{"frame":1,"at":"3ms","base64":"/wA="}
{"end":2,"at":"4ms","reason":"eof"}
{"end":1,"at":"5ms","reason":"stopped"}
`
	if diff := cmp.Diff(want, string(out.Bytes())); diff != "" {
		t.Errorf("text form (-want +got):\n%s", diff)
	}
}

func TestRepairEndsCutInteractionsAndKeepsTheirFrames(t *testing.T) {
	const header = `{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[]}
`
	const kept = `{"request":1,"at":"0s","method":"GET","url":"/api/v1/pods?watch=true"}
{"response":1,"latency":"1ms","status":200}
{"frame":1,"at":"7ms","json":{"type":"ADDED","object":{}}}
{"request":2,"at":"1s","method":"GET","url":"/api/v1/pods"}
`
	for _, name := range []string{"cut.kwrec", "cut.kwrec.zst"} {
		t.Run(name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), name)
			text := header + kept + `{"response":2,"lat`
			if strings.HasSuffix(name, ".zst") {
				var z bytes.Buffer
				if err := cassettes.Compress(&z, strings.NewReader(text), cassettes.Form{Compressed: true}); err != nil {
					t.Fatal(err)
				}
				text = z.String()
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			n, ended, err := cassettes.Repair(p)
			if err != nil {
				t.Fatal(err)
			}
			if n != 4 || !slices.Equal(ended, []int{1, 2}) {
				t.Errorf("Repair kept %d entries and ended %v, want 4 and [1 2]", n, ended)
			}
			want := header + kept + `{"end":1,"at":"7ms","reason":"stopped"}
{"end":2,"at":"0s","reason":"stopped"}
`
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			got, f, err := cassettes.ReadText(bytes.NewReader(b))
			if err != nil || f.Compressed != strings.HasSuffix(name, ".zst") {
				t.Errorf("repaired in the form %+v: %v", f, err)
			}
			if diff := cmp.Diff(want, string(got)); diff != "" {
				t.Errorf("repaired text (-want +got):\n%s", diff)
			}
			if n, ended, err := cassettes.Repair(p); n != 0 || ended != nil || err != nil {
				t.Errorf("Repair of a whole cassette = %d, %v, %v; want 0, nil, nil", n, ended, err)
			}
		})
	}
}

func TestACompactCassetteReadsBackTheSame(t *testing.T) {
	c := cassettetest.Generated()
	plain := cassettetest.Encode(t, c, cassettes.WriterOptions{Compress: true})
	compact := cassettetest.Encode(t, c, cassettes.WriterOptions{Compress: true, Compact: true})
	a, err := cassettes.Read(bytes.NewReader(plain), "plain")
	if err != nil {
		t.Fatal(err)
	}
	b, err := cassettes.Read(bytes.NewReader(compact), "compact")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("compact reads back differently (-default +compact):\n%s", diff)
	}
}

func TestTheSkippedListRoundTripsAndIsWrittenOnlyWhenSomethingWasSkipped(t *testing.T) {
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		skipped []string
		line    string
	}{
		{"a recording that skipped nothing has no skipped key, so an older kwrec reads it", nil,
			`{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[]}`},
		{"a recording that skipped resources names each with its reason", []string{"secrets: forbidden (list)", "pods: the server refuses --field-selector spec.nodeName=n1"},
			`{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[],"skipped":["secrets: forbidden (list)","pods: the server refuses --field-selector spec.nodeName=n1"]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var buf bytes.Buffer
			h := cassettes.Header{RecordedAt: at, Redactions: []string{}, Skipped: tc.skipped}
			w, err := cassettes.NewWriter(&buf, h, cassettes.WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.line+"\n", buf.String()); diff != "" {
				t.Errorf("header line (-want +got):\n%s", diff)
			}
			r, err := cassettes.NewReader(&buf, "h.kwrec")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.skipped, r.Header().Skipped); diff != "" {
				t.Errorf("Skipped read back (-want +got):\n%s", diff)
			}
		})
	}
}
