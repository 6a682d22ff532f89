package cassettes_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

var seekLine = regexp.MustCompile(`(?m)^# kwrec:seek zstd=\d+ text=\d+\n`)

func plainText(t *testing.T, data []byte) []byte {
	t.Helper()
	pr, err := cassettes.Plain(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	b, err := io.ReadAll(pr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSeekCommentsDescribeOnlyTheCompressedBytes(t *testing.T) {
	dir := t.TempDir()
	c := cassettetest.Generated()
	plain, seg := filepath.Join(dir, "c.kwrec"), filepath.Join(dir, "c.kwrec.zst")
	cassettetest.WriteInterleaved(t, plain, c, cassettes.WriterOptions{})
	cassettetest.WriteInterleaved(t, seg, c, cassettes.WriterOptions{SegmentSize: 256, Deltas: true})
	whole := filepath.Join(dir, "whole.kwrec.zst")
	cassettetest.WriteInterleaved(t, whole, c, cassettes.WriterOptions{SegmentSize: 256})
	raw := cassettetest.RawText(t, seg)
	if n := len(seekLine.FindAll(raw, -1)); n < 20 {
		t.Fatalf("%d seek comments in the compressed form, want many", n)
	}
	if n := bytes.Count(raw, []byte(`"delta":`)); n < 20 {
		t.Fatalf("%d delta frames in the compressed form, want many", n)
	}
	// The compressed form writes binary frames in the "bytes" form, plain
	// text in base64: the two texts differ there, and read the same. Its
	// text without seek comments and with every frame whole is the
	// text of the compressed form without deltas.
	want := seekLine.ReplaceAll(cassettetest.RawText(t, whole), nil)
	tests := []struct {
		name string
		got  func() []byte
	}{
		{"Plain drops them", func() []byte { return plainText(t, readFile(t, seg)) }},
		{"Compress drops those of its input and Plain the ones it writes", func() []byte {
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(raw), cassettes.Form{Compressed: true}); err != nil {
				t.Fatal(err)
			}
			return plainText(t, z.Bytes())
		}},
		{"Compress drops the seek comments of its input", func() []byte {
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(seekLine.ReplaceAll(raw, nil)), cassettes.Form{Compressed: true}); err != nil {
				t.Fatal(err)
			}
			return plainText(t, z.Bytes())
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(); !bytes.Equal(got, want) {
				t.Errorf("text differs from the compressed text without seek comments:\n%s", cmp.Diff(string(want), string(got)))
			}
		})
	}
	t.Run("the compressed text reads as the plain text", func(t *testing.T) {
		p, err := cassettes.Load(plain)
		if err != nil {
			t.Fatal(err)
		}
		z, err := cassettes.Read(bytes.NewReader(readFile(t, seg)), "compressed")
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(p, z); d != "" {
			t.Errorf("cassettes differ (-plain +compressed):\n%s", d)
		}
	})
	if got := plainText(t, raw); !bytes.Equal(got, raw) {
		t.Errorf("Plain changed a plain-text input")
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
