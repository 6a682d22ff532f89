package cassettes_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

func seeds(f *testing.F, compress bool) {
	files, _ := filepath.Glob("testdata/*.kwrec")
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		if compress {
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(b), cassettes.Form{Compressed: true}); err != nil {
				f.Fatal(err)
			}
			b = z.Bytes()
			// The Writer's compressed form, binary frames as "bytes".
			c, err := cassettes.Read(bytes.NewReader(b), p)
			if err != nil && !errors.Is(err, cassettes.ErrTruncated) {
				f.Fatal(err)
			}
			var w bytes.Buffer
			if err := cassettes.Write(&w, c, true); err != nil {
				f.Fatal(err)
			}
			f.Add(w.Bytes())
			// With object deltas, and their lines decompressed: the
			// Reader reads them in either form.
			d := cassettetest.Encode(f, c, cassettes.WriterOptions{Compress: true, Deltas: true, FlushInterval: time.Hour})
			f.Add(d)
			if dec, err := zstd.NewReader(bytes.NewReader(d)); err == nil {
				if text, err := io.ReadAll(dec); err == nil {
					f.Add(text)
				}
				dec.Close()
			}
		}
		f.Add(b)
	}
}

// check reads data and asserts the reader's contract: a known error kind,
// never a panic, and a readable re-write of whatever was accepted.
func check(t *testing.T, data []byte) {
	c, err := cassettes.Read(bytes.NewReader(data), "fuzz")
	if err != nil {
		var pe *cassettes.ParseError
		if !errors.As(err, &pe) {
			t.Fatalf("error %v is not a *ParseError", err)
		}
		// A truncated cassette comes back with what was read before the
		// cut, unless the cut came before the header was complete (found
		// by this fuzzer: the four zstd magic bytes alone).
		if !errors.Is(err, cassettes.ErrTruncated) || c == nil {
			return
		}
	}
	if c == nil {
		t.Fatal("nil cassette without an error")
	}
	var out bytes.Buffer
	if err := cassettes.Write(&out, c, false); err != nil {
		t.Fatalf("re-writing an accepted cassette: %v", err)
	}
	c2, err := cassettes.Read(&out, "rewrite")
	if err != nil && !errors.Is(err, cassettes.ErrTruncated) {
		t.Fatalf("re-reading a re-written cassette: %v\n%s", err, out.Bytes())
	}
	if len(c2.Interactions) != len(c.Interactions) {
		t.Fatalf("re-write kept %d of %d interactions", len(c2.Interactions), len(c.Interactions))
	}
}

func FuzzTextParser(f *testing.F) {
	seeds(f, false)
	f.Fuzz(check)
}

func FuzzCompressedReader(f *testing.F) {
	seeds(f, true)
	f.Fuzz(func(t *testing.T, data []byte) {
		check(t, data)
		// Plain must also never panic on the same bytes.
		if r, err := cassettes.Plain(bytes.NewReader(data)); err == nil {
			io.Copy(io.Discard, io.LimitReader(r, 1<<20))
			r.Close()
		}
	})
}
