package cassettes_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

var recordedAt = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)

// record writes three watches to w, their frames interleaved, flushing
// every ten frames as the flush interval would: the watches start in the
// first part and end in the last.
func record(t *testing.T, w *cassettes.Writer) {
	t.Helper()
	var ids []int
	for i := 1; i <= 3; i++ {
		id, err := w.Request(time.Duration(i)*time.Millisecond, cassettes.Request{Method: "GET", URL: fmt.Sprintf("/api/v1/namespaces/ns%d/configmaps?watch=true", i)})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Response(id, cassettes.Response{Status: 200}); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	for i := 0; i < 300; i++ {
		data := fmt.Appendf(nil, `{"type":"MODIFIED","object":{"metadata":{"name":"c%d","resourceVersion":"%d"},"data":{"k":"%s"}}}`+"\n", i%17, 1000+i, strings.Repeat("v", i%50))
		if i%7 == 5 {
			data = []byte{0, 0, 0, 3, 0xff, byte(i), 0x80}
		}
		if err := w.Frame(ids[i%3], cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: data}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, id := range ids {
		if err := w.End(id, cassettes.End{At: time.Second, Reason: cassettes.EndStopped}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// unrotated is what record writes, in one file.
func unrotated(t *testing.T) *cassettes.Cassette {
	t.Helper()
	var b bytes.Buffer
	w, err := cassettes.NewWriter(&b, cassettes.Header{RecordedAt: recordedAt}, cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	record(t, w)
	c, err := cassettes.Read(&b, "unrotated")
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// rotated records into dir/rec.kwrec (parts of 4 KB) or dir/rec.kwrec.zst
// (1 KB) and returns the files dir/rec-* in order.
func rotated(t *testing.T, dir string, compress bool) []string {
	return rotatedWith(t, dir, cassettes.WriterOptions{Compress: compress})
}

// rotatedWith is rotated with the writer's options opts (MaxSize,
// FlushInterval and Clock set here).
func rotatedWith(t *testing.T, dir string, opts cassettes.WriterOptions) []string {
	t.Helper()
	name, size := filepath.Join(dir, "rec.kwrec"), int64(4000)
	if opts.Compress {
		name, size = name+".zst", 1000
	}
	opts.MaxSize, opts.FlushInterval, opts.Clock = size, time.Hour, clocktesting.NewFakeClock(recordedAt)
	w, err := cassettes.Create(name, cassettes.Header{RecordedAt: recordedAt}, opts)
	if err != nil {
		t.Fatal(err)
	}
	record(t, w)
	parts, err := filepath.Glob(filepath.Join(dir, "rec-*"))
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

func TestARotatedRecordingReadsAsOneAndEachPartOnlyAsAPart(t *testing.T) {
	want := unrotated(t)
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			parts := rotated(t, dir, compress)
			if len(parts) < 3 {
				t.Fatalf("%d parts (%v), want at least 3", len(parts), parts)
			}
			ext := ".kwrec"
			if compress {
				ext += ".zst"
			}
			for k, p := range parts {
				if want := cassettes.PartName(filepath.Join(dir, "rec"+ext), k+1); p != want {
					t.Errorf("part %d is %s, want %s", k+1, p, want)
				}
				if k == 0 {
					// Read without the others, the first part is a
					// recording cut in the middle.
					_, err := readAlone(t, p)
					wantErr := fmt.Sprintf("part 1 of a rotated recording ends with interaction(s) 1, 2, 3 still open, which go on in the next parts: read it with them (cassettes.Open, or kwrec show 'rec-*%s')", ext)
					if !errors.Is(err, cassettes.ErrTruncated) || !strings.HasSuffix(err.Error(), wantErr) {
						t.Errorf("Read(part 1) = %v, want truncated: ...%s", err, wantErr)
					}
					continue
				}
				_, err := cassettes.Load(p)
				wantErr := fmt.Sprintf("%s:1: part %d of a rotated recording: read it with the other parts, from part 1 (cassettes.Open, or kwrec show 'rec-*%s')", p, k+1, ext)
				if !errors.Is(err, cassettes.ErrPart) || err.Error() != wantErr {
					t.Errorf("Load(part %d) = %v, want %s", k+1, err, wantErr)
				}
			}
			for _, names := range [][]string{
				{filepath.Join(dir, "rec-*")},
				{parts[0]},
				reversed(parts),
			} {
				got, err := cassettes.Load(names...)
				if err != nil {
					t.Fatalf("Load(%v): %v", names, err)
				}
				if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("Load(%v) differs from the unrotated recording (-want +got):\n%s", names, diff)
				}
			}
		})
	}
}

// readAlone reads the cassette file path with [cassettes.Read], alone,
// whatever part of a recording it is.
func readAlone(t *testing.T, path string) (*cassettes.Cassette, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return cassettes.Read(f, path)
}

func reversed(s []string) []string {
	r := make([]string, len(s))
	for i, v := range s {
		r[len(s)-1-i] = v
	}
	return r
}

func TestPartsThatAreNotOneRecordingAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T, dir string, parts []string) []string
		want  string
	}{{
		name: "a missing middle part",
		setup: func(t *testing.T, dir string, parts []string) []string {
			os.Remove(parts[1])
			return []string{filepath.Join(dir, "rec-*.kwrec")}
		},
		want: "rec-0003.kwrec:1: part 3, but part 2 is missing",
	}, {
		name: "a missing first part",
		setup: func(t *testing.T, dir string, parts []string) []string {
			os.Remove(parts[0])
			return []string{filepath.Join(dir, "rec-*.kwrec")}
		},
		want: "rec-0002.kwrec:1: part 2, but part 1 is missing (a recording starts at part 1, or at a part kwrec record --keep rebased)",
	}, {
		name: "a pattern that finds only a later part",
		setup: func(t *testing.T, dir string, parts []string) []string {
			for _, p := range parts[2:] {
				os.Remove(p)
			}
			os.Remove(parts[0])
			return []string{filepath.Join(dir, "rec-*.kwrec")}
		},
		want: "rec-0002.kwrec:1: part 2, but part 1 is missing (a recording starts at part 1, or at a part kwrec record --keep rebased)",
	}, {
		name: "a part named twice",
		setup: func(t *testing.T, dir string, parts []string) []string {
			copyFile(t, parts[1], filepath.Join(dir, "copy.kwrec"))
			return append(parts, filepath.Join(dir, "copy.kwrec"))
		},
		want: "copy.kwrec:1: part 2 twice: rec-0002.kwrec is part 2 too",
	}, {
		name: "a part of another recording",
		setup: func(t *testing.T, dir string, parts []string) []string {
			other := t.TempDir()
			w, err := cassettes.Create(filepath.Join(other, "rec.kwrec"), cassettes.Header{RecordedAt: recordedAt.Add(time.Hour)}, cassettes.WriterOptions{MaxSize: 4000, FlushInterval: time.Hour})
			if err != nil {
				t.Fatal(err)
			}
			record(t, w)
			copyFile(t, filepath.Join(other, "rec-0002.kwrec"), parts[1])
			return []string{filepath.Join(dir, "rec-*.kwrec")}
		},
		want: "rec-0002.kwrec:1: part 2 of a recording made at 2026-12-01T08:00:00Z, not of the one rec-0001.kwrec starts (made at 2026-12-01T07:00:00Z)",
	}, {
		name: "a cassette that is not a part",
		setup: func(t *testing.T, dir string, parts []string) []string {
			var b bytes.Buffer
			if err := cassettes.Write(&b, &cassettes.Cassette{Header: cassettes.Header{RecordedAt: recordedAt}}, false); err != nil {
				t.Fatal(err)
			}
			os.WriteFile(filepath.Join(dir, "single.kwrec"), b.Bytes(), 0o644)
			return append(parts, filepath.Join(dir, "single.kwrec"))
		},
		want: "single.kwrec:1: not a part of a rotated recording (its header has no part number): name the parts of one recording only",
	}, {
		name: "a pattern that matches nothing",
		setup: func(t *testing.T, dir string, parts []string) []string {
			return []string{filepath.Join(dir, "nothing-*.kwrec")}
		},
		want: "nothing-*.kwrec: no file matches the pattern: file does not exist",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			names := tc.setup(t, dir, rotated(t, dir, false))
			_, err := cassettes.Load(names...)
			if err == nil {
				t.Fatal("Load succeeded")
			}
			if got := strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""); got != tc.want {
				t.Errorf("error:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestTheFirstPartLeavesPartsOfAnEarlierRecordingAside(t *testing.T) {
	dir := t.TempDir()
	// An earlier, longer recording to the same name left parts behind.
	w, err := cassettes.Create(filepath.Join(dir, "rec.kwrec"), cassettes.Header{RecordedAt: recordedAt.Add(-time.Hour)}, cassettes.WriterOptions{MaxSize: 1000, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	record(t, w)
	old, _ := filepath.Glob(filepath.Join(dir, "rec-*"))
	n := len(rotated(t, t.TempDir(), false))
	rotated(t, dir, false)
	if len(old) <= n {
		t.Fatalf("the earlier recording has %d parts, the later %d: want more", len(old), n)
	}
	var want []string
	for k := 1; k <= n; k++ {
		want = append(want, cassettes.PartName(filepath.Join(dir, "rec.kwrec"), k))
	}
	got, err := cassettes.Parts(want[0])
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Parts(first part) (-want +got):\n%s", diff)
	}
}

func TestRotateStartsAPartByTime(t *testing.T) {
	dir := t.TempDir()
	fc := clocktesting.NewFakeClock(recordedAt)
	var started []int // OnPart's calls, each once its part is on disk
	onPart := func(n int) {
		if _, err := os.Stat(filepath.Join(dir, fmt.Sprintf("rec-%04d.kwrec.zst", n))); err != nil {
			t.Errorf("OnPart(%d) before the part is on disk: %v", n, err)
		}
		started = append(started, n)
	}
	w, err := cassettes.Create(filepath.Join(dir, "rec.kwrec.zst"), cassettes.Header{RecordedAt: recordedAt}, cassettes.WriterOptions{Rotate: time.Minute, Clock: fc, FlushInterval: time.Hour, OnPart: onPart})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	fc.Step(59 * time.Second)
	w.Frame(id, cassettes.Frame{At: time.Second, Data: []byte(`{"type":"ADDED"}` + "\n")})
	fc.Step(time.Second) // part 1 is a minute old: the next line starts part 2
	w.Frame(id, cassettes.Frame{At: 2 * time.Second, Data: []byte(`{"type":"DELETED"}` + "\n")})
	w.End(id, cassettes.End{At: 3 * time.Second, Reason: cassettes.EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	parts, _ := filepath.Glob(filepath.Join(dir, "*"))
	want := []string{filepath.Join(dir, "rec-0001.kwrec.zst"), filepath.Join(dir, "rec-0002.kwrec.zst")}
	if diff := cmp.Diff(want, parts); diff != "" {
		t.Fatalf("files (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]int{2}, started); diff != "" {
		t.Errorf("OnPart calls (-want +got):\n%s", diff)
	}
	r, err := cassettes.Open(parts...)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var lines []string
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, fmt.Sprintf("%s:%d", kindOf(e), e.Line))
	}
	// The lines of part 2 are numbered in it, after its header.
	if diff := cmp.Diff([]string{"request:2", "response:3", "frame:4", "frame:2", "end:3"}, lines); diff != "" {
		t.Errorf("entries (-want +got):\n%s", diff)
	}
}

func TestPartName(t *testing.T) {
	for _, tc := range []struct {
		path string
		k    int
		want string
	}{
		{"rec.kwrec.zst", 1, "rec-0001.kwrec.zst"},
		{"dir/my.rec.kwrec", 12, "dir/my.rec-0012.kwrec"},
		{"rec.jsonl.zst", 2, "rec-0002.jsonl.zst"},
		{"rec", 10000, "rec-10000"},
	} {
		if got := cassettes.PartName(tc.path, tc.k); got != tc.want {
			t.Errorf("PartName(%q, %d) = %q, want %q", tc.path, tc.k, got, tc.want)
		}
	}
}

func TestNewWriterRefusesRotation(t *testing.T) {
	_, err := cassettes.NewWriter(io.Discard, cassettes.Header{}, cassettes.WriterOptions{MaxSize: 1})
	if want := "cassette: MaxSize and Rotate write several files: use Create"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func kindOf(e cassettes.Entry) string {
	switch {
	case e.Request != nil:
		return "request"
	case e.Response != nil:
		return "response"
	case e.Frame != nil:
		return "frame"
	}
	return "end"
}

func TestACutLastPartIsATruncatedRecording(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			dir := t.TempDir()
			parts := rotated(t, dir, compress)
			last := parts[len(parts)-1]
			cutEnd(t, last)
			c, err := cassettes.Load(filepath.Join(dir, "rec-*"))
			if !errors.Is(err, cassettes.ErrTruncated) || !strings.HasPrefix(err.Error(), last+":") {
				t.Fatalf("Load = %v, want truncated in %s", err, last)
			}
			if c == nil || len(c.Interactions) != 3 || len(c.Interactions[0].Frames) < 90 {
				t.Errorf("Load kept %v, want the three watches with nearly all their frames", c)
			}
		})
	}
}

func TestRepairRewritesACutLastPartAlone(t *testing.T) {
	tests := []struct {
		name   string
		write  func(t *testing.T, dir string) []string
		deltas bool // the repaired last part has delta lines
	}{
		{"text parts", func(t *testing.T, dir string) []string { return rotated(t, dir, false) }, false},
		{"compressed parts", func(t *testing.T, dir string) []string { return rotated(t, dir, true) }, false},
		{"compressed parts with object deltas", deltaParts, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			parts := tt.write(t, dir)
			if len(parts) < 3 {
				t.Fatalf("%d parts, want several", len(parts))
			}
			last := parts[len(parts)-1]
			cutEnd(t, last)
			form, err := cassettes.FormOf(last)
			if err != nil {
				t.Fatal(err)
			}
			earlier := map[string][]byte{}
			for _, p := range parts[:len(parts)-1] {
				earlier[p], _ = os.ReadFile(p)
			}
			// What a repair must give: everything readable, the open
			// interactions ended as Repair ends them.
			want, err := cassettes.Load(parts...)
			if !errors.Is(err, cassettes.ErrTruncated) {
				t.Fatalf("Load of the cut recording = %v, want truncated", err)
			}
			wantEnded := cassettetest.EndOpen(want)

			kept, ended, err := cassettes.Repair(parts...)
			if err != nil {
				t.Fatal(err)
			}
			if kept == 0 || !slices.Equal(ended, wantEnded) {
				t.Errorf("Repair kept %d entries, ended %v; want some, ended %v", kept, ended, wantEnded)
			}
			got, err := cassettes.Load(parts...)
			if err != nil {
				t.Fatalf("Load after the repair: %v", err)
			}
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("repaired recording differs (-want +got):\n%s", diff)
			}
			for p, b := range earlier {
				if now, _ := os.ReadFile(p); !bytes.Equal(now, b) {
					t.Errorf("%s changed; only the last part may", p)
				}
			}
			if f, _ := cassettes.FormOf(last); f != form {
				t.Errorf("last part rewritten as %+v, want %+v", f, form)
			}
			if tt.deltas {
				if n := len(deltaLine.FindAll(cassettetest.RawText(t, last), -1)); n < 10 {
					t.Errorf("the repaired last part has %d delta lines, want many", n)
				}
			}
			// Repaired, the recording is whole: a second repair has
			// nothing to do.
			if kept, ended, err := cassettes.Repair(parts...); kept != 0 || ended != nil || err != nil {
				t.Errorf("Repair of a whole recording = %d, %v, %v; want 0, nil, nil", kept, ended, err)
			}
		})
	}
}

func TestRepairRefusesACutBeforeTheLastPart(t *testing.T) {
	dir := t.TempDir()
	parts := rotatedWith(t, dir, cassettes.WriterOptions{Compress: true})
	cutEnd(t, parts[0])
	_, _, err := cassettes.Repair(parts...)
	want := fmt.Sprintf("(part 1 of %d: the parts after it cannot be read; keep the parts before it)", len(parts))
	if !errors.Is(err, cassettes.ErrTruncated) || !strings.HasSuffix(err.Error(), want) || !strings.HasPrefix(err.Error(), parts[0]+":") {
		t.Fatalf("Repair = %v, want truncated in %s ending %q", err, parts[0], want)
	}
}

// deltaParts records into dir/d.kwrec.zst, with object deltas and parts of
// 1 KB, a watch that starts in the first part and is cut in the last: the
// same three ConfigMaps changed again and again, so each part holds
// deltas against frames of its own and of the parts before it.
func deltaParts(t *testing.T, dir string) []string {
	t.Helper()
	w, err := cassettes.Create(filepath.Join(dir, "d.kwrec.zst"), cassettes.Header{RecordedAt: recordedAt},
		cassettes.WriterOptions{Deltas: true, MaxSize: 1000, FlushInterval: time.Hour, Clock: clocktesting.NewFakeClock(recordedAt)})
	if err != nil {
		t.Fatal(err)
	}
	id := cassettetest.StartWatch(t, w)
	words := strings.Repeat("the same words again and again ", 8)
	for i := range 400 {
		data := fmt.Appendf(nil, `{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c%d","namespace":"default","resourceVersion":"%d"},"data":{"n":"%d","text":"%s"}}}`+"\n", i%3, 1000+i, i, words)
		if err := w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: data}); err != nil {
			t.Fatal(err)
		}
		if i%10 == 9 {
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	parts, err := filepath.Glob(filepath.Join(dir, "d-*"))
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

// cutEnd cuts the last 10 bytes off the file at path, as a recorder
// killed mid-write leaves it.
func cutEnd(t *testing.T, path string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(path, st.Size()-10); err != nil {
		t.Fatal(err)
	}
}
