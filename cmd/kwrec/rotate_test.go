package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseSizeTakesDecimalAndBinaryUnits(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		ok   bool
	}{
		{"", 0, true},
		{"1048576", 1 << 20, true},
		{"100MB", 100e6, true},
		{"100M", 100e6, true},
		{"1GiB", 1 << 30, true},
		{"500Mi", 500 << 20, true},
		{"1.5kB", 1500, true},
		{"2KB", 2000, true},
		{"lots", 0, false},
		{"0", 0, false},
		{"-1MB", 0, false},
		{"1MiBB", 0, false},
		{"1PB", 0, false},
	} {
		got, err := parseSize(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d, ok %v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestARecorderRemovesTheTemporaryFilesAStoppedOneLeft: the hidden
// temporary files of this recording's parts go, each named; the parts,
// another recording's files and anything else stay.
func TestARecorderRemovesTheTemporaryFilesAStoppedOneLeft(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		files     []string
		removed   []string
	}{
		{"a part started before its header and a state being written go", "rec.kwrec.zst",
			[]string{".rec-0003.kwrec.zst.tmp123", ".rec-0002.kwrec.zst.tmp9", "rec-0001.kwrec.zst", "rec-0002.kwrec.zst"},
			[]string{".rec-0002.kwrec.zst.tmp9", ".rec-0003.kwrec.zst.tmp123"}},
		{"another recording's temporary files stay", "rec.kwrec.zst",
			[]string{".rec-a-0001.kwrec.zst.tmp1", ".other-0001.kwrec.zst.tmp1", ".rec-0001.kwrec.tmp1", "rec-0001.kwrec.zst.tmp1"},
			nil},
		{"a plain text recording's parts", "rec.kwrec",
			[]string{".rec-0001.kwrec.tmp5", ".rec-0001.kwrec.zst.tmp5"},
			[]string{".rec-0001.kwrec.tmp5"}},
		{"a name with glob characters", "r[1]*.kwrec.zst",
			[]string{".r[1]*-0004.kwrec.zst.tmp7", ".r1x-0004.kwrec.zst.tmp7"},
			[]string{".r[1]*-0004.kwrec.zst.tmp7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range tc.files {
				if err := os.WriteFile(filepath.Join(dir, f), []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			var log strings.Builder
			removeLeftovers(filepath.Join(dir, tc.out), &log)
			var want, wantLog []string
			for _, f := range tc.files {
				if slices.Contains(tc.removed, f) {
					wantLog = append(wantLog, "kwrec: removed "+filepath.Join(dir, f)+", a temporary file left by a recorder that was stopped\n")
					continue
				}
				want = append(want, f)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, e := range entries {
				got = append(got, e.Name())
			}
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Errorf("left %q, want %q", got, want)
			}
			slices.Sort(wantLog)
			if log.String() != strings.Join(wantLog, "") {
				t.Errorf("said %q, want %q", log.String(), strings.Join(wantLog, ""))
			}
		})
	}
}
