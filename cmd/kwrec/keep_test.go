package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// keptParts copies internal/cut's three-part recording to a temporary
// directory and returns the -o its parts are named from.
func keptParts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"} {
		b, err := os.ReadFile(filepath.Join("internal", "cut", "testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "rec.kwrec")
}

func TestRetentionDeletesTheOldestPartsAfterRebasingTheOldestKept(t *testing.T) {
	start := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		keep     int
		keepFor  time.Duration
		ages     []time.Duration // how long ago parts 1, 2 and 3 ended (part k+1 started)
		newest   int
		finished bool
		left     []string
		log      string
	}{{
		name:   "keep 2 while part 3 is written rebases part 2 and deletes part 1",
		keep:   2,
		newest: 3,
		left:   []string{"rec-0002.kwrec", "rec-0003.kwrec"},
		log:    "kwrec: keep: part 2 rebased (REC-0002.kwrec starts with the state at resourceVersion 100); deleted part 1\n",
	}, {
		name:   "keep 3 of 3 parts deletes nothing",
		keep:   3,
		newest: 3,
		left:   []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"},
	}, {
		name:    "keep-for 1h deletes the parts that ended before the last hour",
		keepFor: time.Hour,
		ages:    []time.Duration{2 * time.Hour, 30 * time.Minute},
		newest:  3,
		left:    []string{"rec-0002.kwrec", "rec-0003.kwrec"},
		log:     "kwrec: keep: part 2 rebased (REC-0002.kwrec starts with the state at resourceVersion 100); deleted part 1\n",
	}, {
		name:    "keep-for keeps the whole part before the one being written however old",
		keepFor: time.Hour,
		ages:    []time.Duration{3 * time.Hour, 2 * time.Hour},
		newest:  3,
		left:    []string{"rec-0002.kwrec", "rec-0003.kwrec"},
		log:     "kwrec: keep: part 2 rebased (REC-0002.kwrec starts with the state at resourceVersion 100); deleted part 1\n",
	}, {
		name:     "keep-for at the end of a recording may keep its last part alone",
		keepFor:  time.Hour,
		ages:     []time.Duration{3 * time.Hour, 2 * time.Hour, 0},
		newest:   3,
		finished: true,
		left:     []string{"rec-0003.kwrec"},
		log:      "kwrec: keep: part 3 rebased (REC-0003.kwrec starts with the state at resourceVersion 103); deleted parts 1-2\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := keptParts(t)
			var log bytes.Buffer
			r := newRetention(out, tc.keep, tc.keepFor, &log)
			clk := clocktesting.NewFakeClock(start)
			r.clock = clk
			// Parts end in order, the oldest first.
			for k := range tc.ages {
				clk.SetTime(start.Add(3*time.Hour - tc.ages[k]))
				r.ended[k+1] = clk.Now()
			}
			clk.SetTime(start.Add(3 * time.Hour))
			r.seen = tc.newest
			if err := r.apply(tc.newest, tc.finished); err != nil {
				t.Fatal(err)
			}
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "rec-*.kwrec"))
			var left []string
			for _, f := range m {
				left = append(left, filepath.Base(f))
			}
			if d := cmp.Diff(tc.left, left); d != "" {
				t.Errorf("parts left (-want +got):\n%s", d)
			}
			got := string(bytes.ReplaceAll(log.Bytes(), []byte(filepath.Join(filepath.Dir(out), "rec-")), []byte("REC-")))
			if got != tc.log {
				t.Errorf("log:\n%s\nwant:\n%s", got, tc.log)
			}
			// What is left is whole: it replays from its oldest part.
			if msg := lintKept(m); msg != "" {
				t.Errorf("the kept parts are not whole: %s", msg)
			}
		})
	}
}

func TestRetentionWaitsForTheOldestEndedPartToAgePastKeepFor(t *testing.T) {
	start := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		keepFor time.Duration
		seen    int           // the part being written
		age     time.Duration // how long ago part 1 ended
		want    time.Duration
		ok      bool
	}{
		{"a part that ended 30m ago under --keep-for 1h expires in 30m", time.Hour, 3, 30 * time.Minute, 30*time.Minute + time.Millisecond, true},
		{"a part already past --keep-for expires at once", time.Hour, 3, 2 * time.Hour, time.Millisecond, true},
		{"the newest whole part never expires", time.Hour, 2, 2 * time.Hour, 0, false},
		{"without --keep-for nothing expires", 0, 3, 2 * time.Hour, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRetention("rec.kwrec", 0, tc.keepFor, new(bytes.Buffer))
			clk := clocktesting.NewFakeClock(start)
			r.clock = clk
			r.ended[1] = start
			r.seen = tc.seen
			clk.SetTime(start.Add(tc.age))
			got, ok := r.untilExpiry()
			if got != tc.want || ok != tc.ok {
				t.Errorf("untilExpiry() = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}
