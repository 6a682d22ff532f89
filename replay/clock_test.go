package replay_test

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	testclock "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/internal/timepoint"
	"github.com/kwrec/kwrec/replay"
)

// configmaps.kwrec's recorded changes, from its start: the list at 100
// (a=1, b=2) by 3ms, then c added (101) at 113ms, a modified (102) at
// 213ms, b deleted (103) at 313ms, d added (104) at 1.313s; the recording
// ends at 5.013s.

// listed lists the ConfigMaps of r as "rv: name=value ...".
func listed(t *testing.T, r *replay.Replayer) string {
	t.Helper()
	l, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var items []string
	for _, cm := range l.Items {
		items = append(items, cm.Name+"="+cm.Data["k"])
	}
	sort.Strings(items)
	return l.ResourceVersion + ": " + strings.Join(items, " ")
}

func TestAWorldClockReplayAnswersAListAsTheClusterWasAtItsTime(t *testing.T) {
	for _, tc := range []struct {
		name, at, want string
	}{
		{"at the start, the first list", "", "100: a=1 b=2"},
		{"after the first two changes", "250ms", "102: a=1b b=2 c=3"},
		{"just after a change named by its resourceVersion", "rv=103", "103: a=1b c=3"},
		{"as a time of day", "2026-12-01T00:00:00.5Z", "103: a=1b c=3"},
		{"at the end", "end", "104: a=1b c=3 d=4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fc := testclock.NewFakeClock(worldT0)
			r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, At: tc.at, Speed: 1, Clock: fc})
			if got := listed(t, r); got != tc.want {
				t.Fatalf("list = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAWorldClockListMovesOnWithTheWallClockAndNoWatch(t *testing.T) {
	fc := testclock.NewFakeClock(worldT0)
	r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, Speed: 1, Clock: fc})
	for _, step := range []struct {
		wall time.Duration
		want string
	}{
		{0, "100: a=1 b=2"},
		{150 * time.Millisecond, "101: a=1 b=2 c=3"},
		{200 * time.Millisecond, "103: a=1b c=3"},
		{time.Second, "104: a=1b c=3 d=4"},
	} {
		fc.Step(step.wall)
		if got := listed(t, r); got != step.want {
			t.Fatalf("after %v more: list = %q, want %q", step.wall, got, step.want)
		}
	}
}

func TestAWorldClockWatchSendsEachChangeWhenTheWorldGetsThere(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := testclock.NewFakeClock(worldT0)
		r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, At: "250ms", Speed: 1, Clock: fc})
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "102"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		waitWaiters(t, fc)
		if got := pending(w); got != nil {
			t.Fatalf("sent before the world got there: %v", got)
		}
		fc.Step(63 * time.Millisecond) // the world at 313ms
		if got := recv(t, w, 1); got[0].String() != "DELETED b@103=2" {
			t.Fatalf("got %v", got)
		}
		waitWaiters(t, fc)
		fc.Step(999 * time.Millisecond)
		synctest.Wait()
		if got := pending(w); got != nil {
			t.Fatalf("sent 1ms early: %v", got)
		}
		fc.Step(time.Millisecond)
		if got := recv(t, w, 1); got[0].String() != "ADDED d@104=4" {
			t.Fatalf("got %v", got)
		}
	})
}

// pending returns the events w has ready, nil for none.
func pending(w watch.Interface) []got {
	var out []got
	for {
		select {
		case ev := <-w.ResultChan():
			out = append(out, summarize(ev))
		default:
			return out
		}
	}
}

func TestPausedThenPlayedSoughtForwardAndBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := testclock.NewFakeClock(worldT0)
		r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, Paused: true, Speed: 1, Clock: fc})
		wc := r.WorldClock()
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		synctest.Wait()
		fc.Step(time.Hour)
		synctest.Wait()
		if got := pending(w); got != nil || wc.State().At != 0 {
			t.Fatalf("paused, yet sent %v, the world at %v", got, wc.State().At)
		}
		wc.Play()
		fc.Step(120 * time.Millisecond)
		if got := recv(t, w, 1); got[0].String() != "ADDED c@101=3" {
			t.Fatalf("after play: %v", got)
		}
		wc.Pause()
		if _, err := wc.Seek("1s"); err != nil {
			t.Fatal(err)
		}
		// Moved forward over two changes: both at once, in order, paused.
		if got := recv(t, w, 2); fmt.Sprint(got) != "[MODIFIED a@102=1b DELETED b@103=2]" {
			t.Fatalf("after a seek forward: %v", got)
		}
		if _, err := wc.Seek("100ms"); err != nil {
			t.Fatal(err)
		}
		got := waitClosed(t, w)
		if len(got) != 1 || got[0].Type != "ERROR" || !strings.Contains(got[0].Value, `"code":410`) {
			t.Fatalf("after a seek back: %v, want one 410 ERROR event and the end", got)
		}
		if got := listed(t, r); got != "100: a=1 b=2" {
			t.Fatalf("list after the seek back = %q", got)
		}
		// A client that saw the world ahead asks for what is now the
		// future: the server's 504, after which client-go lists from now.
		_, err = clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{ResourceVersion: "103"})
		if want := "Too large resource version: 103, current: 100"; err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("a list at 103 after the seek back: %v, want %q", err, want)
		}
	})
}

func TestAWorldClockPointOutsideTheRecordingIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name, at, want string
		is             error
	}{
		{"a duration past the end", "6s", "kwrec replay: outside the recording: 6s is 6s after its start (2026-12-01T00:00:00Z), and it lasts 5.013s (to 2026-12-01T00:00:05.013Z)", timepoint.ErrOutside},
		{"a time before the start", "2026-11-30T23:59:59Z", "kwrec replay: outside the recording: 2026-11-30T23:59:59Z is before its start (2026-12-01T00:00:00Z)", timepoint.ErrOutside},
		{"a resourceVersion never recorded", "rv=999", "kwrec replay: resourceVersion not recorded: rv=999: no recorded list or watch event has resourceVersion 999", timepoint.ErrUnknownRV},
		{"a typo", "5 s", `kwrec replay: bad point "5 s": want a duration from the recording's start (55m), an RFC 3339 time (2026-12-01T07:55:00Z), rv=RESOURCEVERSION or end`, timepoint.ErrBadPoint},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := replay.New(fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, At: tc.at})
			if err == nil || err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// worldT0 is when a world clock test's wall clock starts.
var worldT0 = time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)

func TestASeekBackDropsTheOverlaysWritesMadeAfterTheNewTime(t *testing.T) {
	fc := testclock.NewFakeClock(worldT0)
	r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{WorldClock: true, At: "250ms", Writes: replay.WritesOverlay, Clock: fc})
	cs := clientset(t, r.Config())
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "w"}, Data: map[string]string{"k": "w"}}
	created, err := cs.CoreV1().ConfigMaps("default").Create(t.Context(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Written at the world's now: after a's change (102), before b's
	// deletion (103), in the overlay's scaled resourceVersions.
	if got, want := created.ResourceVersion, "102001"; got != want {
		t.Fatalf("the write got resourceVersion %s, want %s", got, want)
	}
	if got := listed(t, r); got != "102001: a=1b b=2 c=3 w=w" {
		t.Fatalf("list after the write = %q", got)
	}
	wc := r.WorldClock()
	dropped, err := wc.Seek("end")
	if err != nil || dropped != nil {
		t.Fatalf("a seek forward dropped %v (%v)", dropped, err)
	}
	if got := listed(t, r); got != "104000: a=1b c=3 d=4 w=w" {
		t.Fatalf("list at the end = %q", got)
	}
	dropped, err = wc.Seek("150ms")
	if want := []string{"create configmaps default/w (resourceVersion 102001)"}; err != nil || !slices.Equal(dropped, want) {
		t.Fatalf("a seek back dropped %q (%v), want %q", dropped, err, want)
	}
	if got := listed(t, r); got != "101000: a=1 b=2 c=3" {
		t.Fatalf("list after the seek back = %q", got)
	}
}
