package main

import (
	"bytes"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

// The bad-input table for the compressed form, which a txtar cannot hold
// (testdata/script/badinput.txtar has the text-form cases): cut and corrupt
// zstd streams and random bytes, each linted in-process with the exact line
// a user sees and exit status 1.

// kwrecIn runs the CLI in-process and returns its exit status and output.
func kwrecIn(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = run(args, streams{strings.NewReader(""), &o, &e})
	return code, o.String(), e.String()
}

// flushedCassette is a compressed cassette written the way the recorder
// writes one: a flush (a zstd block) after the header, after the request and
// response, and after each frame. marks[i] is the file size after flush i and
// lines[i] the text lines complete by then.
type flushedCassette struct {
	data  []byte
	marks []int
	lines []int
}

func writeFlushed(t *testing.T) flushedCassette {
	t.Helper()
	var buf bytes.Buffer
	h := cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC), Redactions: []string{}}
	w, err := cassettes.NewWriter(&buf, h, cassettes.WriterOptions{Compress: true, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	var fc flushedCassette
	flush := func(lines int) {
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		fc.marks = append(fc.marks, buf.Len())
		fc.lines = append(fc.lines, lines)
	}
	flush(1)
	id, err := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/namespaces/default/configmaps?watch=true"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Response(id, cassettes.Response{Status: 200}); err != nil {
		t.Fatal(err)
	}
	flush(3)
	for i := range 3 {
		ev := fmt.Sprintf(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"default","resourceVersion":"%d"}}}`+"\n", i, 10+i)
		if err := w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: []byte(ev)}); err != nil {
			t.Fatal(err)
		}
		flush(4 + i)
	}
	if err := w.End(id, cassettes.End{At: time.Second, Reason: cassettes.EndStopped}); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fc.data = buf.Bytes()
	return fc
}

func cutMsg(n, line int) string {
	return fmt.Sprintf("x.kwrec.zst: byte %d: compressed stream cut after line %d (a recorder killed mid-way?); everything before is readable: run `kwrec lint --fix` to keep it", n, line)
}

func TestLintReportsEachCompressedFaultAsOneLine(t *testing.T) {
	fc := writeFlushed(t)
	rnd := rand.New(rand.NewSource(8))
	random := make([]byte, 512)
	rnd.Read(random)
	random[0] = 'x' // not the zstd magic
	afterMagic := append([]byte{0x28, 0xb5, 0x2f, 0xfd}, random[:64]...)
	flipped := func(i int) []byte {
		b := bytes.Clone(fc.data)
		b[i] ^= 0xff
		return b
	}
	total := len(fc.data)
	for _, tc := range []struct {
		name string
		data []byte
		want string // the line lint prints
	}{
		{name: "random bytes are not a cassette", data: random,
			want: `x.kwrec.zst:1: not a kwrec cassette: line 1 must be the header {"kwrec":1,...} (see the cassettes package doc for the format)`},
		{name: "random bytes after the zstd magic are corrupt data", data: afterMagic,
			want: "x.kwrec.zst: byte 68: corrupt zstd data after line 0: reserved bit set on frame header"},
		{name: "only the zstd magic is a stream cut before its header", data: fc.data[:4],
			want: "x.kwrec.zst: byte 4: compressed stream cut inside the header line (a recorder killed before its first flush?): nothing can be recovered; re-record it"},
		{name: "a stream cut inside the header block", data: fc.data[:fc.marks[0]-10],
			want: fmt.Sprintf("x.kwrec.zst: byte %d: compressed stream cut inside the header line (a recorder killed before its first flush?): nothing can be recovered; re-record it", fc.marks[0]-10)},
		{name: "a stream cut right after the header block", data: fc.data[:fc.marks[0]],
			want: cutMsg(fc.marks[0], fc.lines[0])},
		{name: "a stream cut inside a block names the last complete line", data: fc.data[:fc.marks[1]+5],
			want: cutMsg(fc.marks[1]+5, fc.lines[1])},
		{name: "a stream cut one byte short", data: fc.data[:total-1],
			want: cutMsg(total-1, fc.lines[len(fc.lines)-1]+1)},
		{name: "a flipped byte in a block is corrupt data", data: flipped(fc.marks[1] + 5),
			// The offset is where the decoder stopped reading (the end of this
			// small file), not the damaged block: reported as unclear.
			want: fmt.Sprintf("x.kwrec.zst: byte %d: corrupt zstd data after line %d: block too small", total, fc.lines[1])},
		{name: "a flipped checksum byte is corrupt data", data: flipped(total - 2),
			want: fmt.Sprintf("x.kwrec.zst: byte %d: corrupt zstd data after line %d: CRC check failed", total, fc.lines[len(fc.lines)-1]+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.kwrec.zst")
			if err := os.WriteFile(path, tc.data, 0o644); err != nil {
				t.Fatal(err)
			}
			t.Chdir(filepath.Dir(path))
			code, stdout, stderr := kwrecIn(t, "lint", "x.kwrec.zst")
			if code != 1 {
				t.Errorf("exit status %d, want 1", code)
			}
			if want := "kwrec: 1 of 1 cassette(s) have problems\n"; stderr != want {
				t.Errorf("stderr %q, want %q", stderr, want)
			}
			got := strings.TrimSuffix(stdout, "\n")
			if got != tc.want {
				t.Errorf("lint printed\n\t%q\nwant\n\t%q", got, tc.want)
			}
		})
	}
}

// TestLintSaysWhatEveryCutLeaves cuts a small cassette of each form at every
// byte (cassettes' own sweep checks the reader's side: every cut is named,
// with its byte) and checks, in-process, that lint prints exactly what the
// reader says and lint --fix does what lint says: a whole cassette is left
// alone, a cut before the header is whole leaves the file untouched with
// "nothing can be recovered", any other cut is rewritten to everything
// readable before it, with the open interactions ended, and lints clean.
func TestLintSaysWhatEveryCutLeaves(t *testing.T) {
	z := writeFlushed(t).data
	pr, err := cassettes.Plain(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(pr); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{{"x.kwrec", plain.Bytes()}, {"x.kwrec.zst", z}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			name := filepath.Join(t.TempDir(), tc.name)
			var whole, repaired, lost int
			for n := 0; n <= len(tc.data); n++ {
				cut := tc.data[:n]
				c, rerr := cassettes.Read(bytes.NewReader(cut), name)
				if err := os.WriteFile(name, cut, 0o644); err != nil {
					t.Fatal(err)
				}
				msg := lintFile(name, false)
				switch {
				case rerr == nil && msg != "":
					t.Fatalf("cut at byte %d: a whole cassette, and lint says %q", n, msg)
				case rerr != nil && msg != rerr.Error():
					t.Fatalf("cut at byte %d: lint says\n\t%s\nthe reader\n\t%v", n, msg, rerr)
				case rerr != nil && !strings.Contains(msg, fmt.Sprintf(" byte %d: ", n)):
					t.Fatalf("cut at byte %d: lint does not name the byte: %s", n, msg)
				}
				fix := lintFile(name, true)
				after, err := os.ReadFile(name)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case rerr == nil || c == nil:
					if fix != msg || !bytes.Equal(after, cut) {
						t.Fatalf("cut at byte %d: lint --fix says %q (want %q) and changed the file: %v", n, fix, msg, !bytes.Equal(after, cut))
					}
					if rerr == nil {
						whole++
						continue
					}
					if !strings.HasSuffix(fix, ": nothing can be recovered; re-record it") {
						t.Fatalf("cut at byte %d: lint --fix does not say nothing can be recovered: %s", n, fix)
					}
					lost++
				default:
					kept := cassettetest.Entries(c)
					ended := cassettetest.EndOpen(c)
					want := fmt.Sprintf("%s: repaired: kept %d line(s), ended %d left open as stopped (%v)", name, kept, len(ended), rerr)
					if fix != want {
						t.Fatalf("cut at byte %d: lint --fix says\n\t%s\nwant\n\t%s", n, fix, want)
					}
					if msg := lintFile(name, false); msg != "" {
						t.Fatalf("cut at byte %d: the repaired cassette does not lint clean: %s", n, msg)
					}
					got, err := cassettes.Load(name)
					if err != nil {
						t.Fatalf("cut at byte %d: the repaired cassette: %v", n, err)
					}
					if !reflect.DeepEqual(c, got) {
						t.Fatalf("cut at byte %d: the repaired cassette is not what was readable before the cut, ended:\n%s", n, cmp.Diff(c, got))
					}
					repaired++
				}
			}
			t.Logf("%d bytes, %d prefixes: %d whole, %d repaired, %d with nothing to recover; %v", len(tc.data), len(tc.data)+1, whole, repaired, lost, time.Since(start).Round(time.Millisecond))
		})
	}
}
