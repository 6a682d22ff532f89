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
	"github.com/kwrec/kwrec/internal/cassettetest"
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
	cassettetest.WriteInterleaved(t, seg, c, cassettes.WriterOptions{SegmentSize: 256})
	want := readFile(t, plain)
	raw := cassettetest.RawText(t, seg)
	if n := len(seekLine.FindAll(raw, -1)); n < 20 {
		t.Fatalf("%d seek comments in the compressed form, want many", n)
	}
	tests := []struct {
		name string
		got  func() []byte
	}{
		{"Plain drops them", func() []byte { return plainText(t, readFile(t, seg)) }},
		{"Compress drops those of its input and Plain the ones it writes", func() []byte {
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(raw)); err != nil {
				t.Fatal(err)
			}
			return plainText(t, z.Bytes())
		}},
		{"the compressed text without its seek comments is the plain text", func() []byte {
			return seekLine.ReplaceAll(raw, nil)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.got(); !bytes.Equal(got, want) {
				t.Errorf("text differs from the plain Writer's:\n%s", cmp.Diff(string(want), string(got)))
			}
		})
	}
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
