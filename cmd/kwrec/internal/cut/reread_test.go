package cut_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

func TestACutOfARecordingChangedSinceReadFails(t *testing.T) {
	for _, tc := range []struct {
		name, with string
		want       string
	}{{
		name: "a recording rewritten with fewer events fails at the first line that differs",
		with: "fewer",
		want: "recording changed since it was read: %s: line 10 is not what it was: read it again",
	}, {
		name: "a recording cut short fails where it ends",
		with: "short",
		want: "recording changed since it was read: %s ends after 8 entries, of the 13 read: read it again",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeVersions(t, 2, 3)
			rec, err := cut.Read(path)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cut.Cut(rec, point(t, "1ms"), point(t, ""))
			if err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(writeVersions(t, 2, 1))
			if err != nil {
				t.Fatal(err)
			}
			if tc.with == "short" {
				b, err = os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				b = b[:nthLine(b, 9)]
			}
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "out.kwrec")
			err = res.Save(out)
			want := out + ": " + fmt.Sprintf(tc.want, path)
			if !errors.Is(err, cut.ErrChanged) || err.Error() != want {
				t.Errorf("Save: %v, want %s (wrapping ErrChanged)", err, want)
			}
		})
	}
}

// nthLine returns the offset just after line n of b.
func nthLine(b []byte, n int) int {
	for i, c := range b {
		if c == '\n' {
			if n--; n == 0 {
				return i + 1
			}
		}
	}
	return len(b)
}
