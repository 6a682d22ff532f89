package timeline_test

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/internal/timeline"
)

// state summarises a list at query as key@rv.
func state(t *testing.T, tl *timeline.Timeline, query string) []string {
	t.Helper()
	q, _ := url.ParseQuery(query)
	sel, _ := tl.Selector(q, "", nil)
	l, err := tl.List(q, sel)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, o := range l.Items {
		out = append(out, fmt.Sprintf("%s@%d", o.Key, o.RV))
	}
	return out
}

func commit(t *testing.T, tl *timeline.Timeline, typ, name string, base int64) int64 {
	t.Helper()
	rv, stored, err := tl.Commit(typ, "default/"+name, "", base, []byte(cm(name, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`"resourceVersion":"%d"`, rv); !strings.Contains(string(stored), want) {
		t.Errorf("stored bytes %s lack %s", stored, want)
	}
	return rv
}

func TestWritesGetResourceVersionsBetweenTheRecordedOnes(t *testing.T) {
	tl := buildWith(t, true)
	if got, want := tl.Last(), int64(102_000); got != want {
		t.Fatalf("Last = %d, want the recorded 102 scaled by %d: %d", got, timeline.RVScale, want)
	}
	// Now is the list (100): a write goes right after it.
	if rv := commit(t, tl, "ADDED", "w", 0); rv != 100_001 {
		t.Errorf("first write at %d, want 100001", rv)
	}
	if rv := commit(t, tl, "MODIFIED", "w", 100_001); rv != 100_002 {
		t.Errorf("second write at %d, want 100002", rv)
	}
	if diff := cmp.Diff([]string{"default/a@90000", "default/w@100002"}, state(t, tl, "")); diff != "" {
		t.Errorf("list now (-want +got):\n%s", diff)
	}
	// The recorded events still come, in order, after the writes.
	if diff := cmp.Diff([]string{"default/a@102000", "default/b@101000", "default/w@100002"}, state(t, tl, "resourceVersion=102000")); diff != "" {
		t.Errorf("list at the last recorded resourceVersion (-want +got):\n%s", diff)
	}
}

func TestAWriteOnAStaleVersionIsRefused(t *testing.T) {
	tl := buildWith(t, true)
	tl.Advance(102_000) // a client saw MODIFIED a@102
	_, _, err := tl.Commit("MODIFIED", "default/a", "", 90_000, []byte(cm("a", 0)))
	if !errors.Is(err, timeline.ErrStale) {
		t.Fatalf("write computed from a@90000 after a@102000: err = %v, want ErrStale", err)
	}
	if rv := commit(t, tl, "MODIFIED", "a", 102_000); rv != 102_001 {
		t.Errorf("write from the current version at %d, want 102001", rv)
	}
}

func TestARecordedChangeAfterAWriteWins(t *testing.T) {
	tl := buildWith(t, true)
	// The code changes a before the recorded MODIFIED a@102 is served.
	commit(t, tl, "MODIFIED", "a", 90_000)
	if o, _ := tl.Current("default/a"); o.RV != 100_001 {
		t.Fatalf("current a@%d, want the write 100001", o.RV)
	}
	tl.Advance(102_000)
	if o, _ := tl.Current("default/a"); o.RV != 102_000 {
		t.Errorf("current a@%d after the recorded change, want 102000", o.RV)
	}
	_, _, err := tl.Commit("MODIFIED", "default/a", "", 100_001, []byte(cm("a", 0)))
	if !errors.Is(err, timeline.ErrStale) {
		t.Errorf("a write from the overwritten version: err = %v, want ErrStale", err)
	}
}

func TestAWrittenObjectOutlivesRecordedEventsOfOthers(t *testing.T) {
	tl := buildWith(t, true)
	commit(t, tl, "ADDED", "mine", 0)
	if diff := cmp.Diff([]string{"default/a@102000", "default/b@101000", "default/mine@100001"}, state(t, tl, "resourceVersion=102000")); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	commit(t, tl, "DELETED", "mine", 100_001)
	if diff := cmp.Diff([]string{"default/a@90000"}, state(t, tl, "")); diff != "" {
		t.Errorf("after the delete (-want +got):\n%s", diff)
	}
}

func TestAWatchSendsWritesInResourceVersionOrder(t *testing.T) {
	tl := buildWith(t, true)
	q, _ := url.ParseQuery("resourceVersion=100000&watch=true")
	sel, _ := tl.Selector(q, "", nil)
	ss, from, err := tl.Watch(q, sel)
	if err != nil {
		t.Fatal(err)
	}
	f := tl.Follow(from, sel)
	w := commit(t, tl, "ADDED", "w", 0) // 100001: before b@101000
	var got []string
	for _, s := range ss {
		if s.Kind != timeline.StepEvent {
			continue
		}
		for {
			ev, ok, _ := f.Next(s.RV)
			if !ok {
				break
			}
			got = append(got, fmt.Sprintf("%s %s@%d", ev.Type, ev.Obj.Key, ev.RV()))
		}
		got = append(got, fmt.Sprintf("%s %s@%d", s.Ev.Type, s.Ev.Obj.Key, s.Ev.RV()))
		if s.RV == 101_000 {
			// After b is out, a write goes after it.
			if rv := commit(t, tl, "MODIFIED", "w", w); rv != 101_001 {
				t.Errorf("write after b at %d, want 101001", rv)
			}
		}
	}
	if _, ok, _ := f.Next(0); ok {
		t.Error("a write left after the recorded steps")
	}
	want := []string{"ADDED default/w@100001", "ADDED default/b@101000", "MODIFIED default/w@101001", "MODIFIED default/a@102000"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestWritesBetweenTwoRecordedEventsAreBounded(t *testing.T) {
	tl := buildWith(t, true)
	base := int64(0)
	for i := 1; i < timeline.RVScale; i++ {
		rv, _, err := tl.Commit("MODIFIED", "default/w", "", base, []byte(cm("w", 0)))
		if err != nil {
			t.Fatalf("write %d: %v", i, err)
		}
		base = rv
	}
	_, _, err := tl.Commit("MODIFIED", "default/w", "", base, []byte(cm("w", 0)))
	want := "no resourceVersion left for a write: 999 writes since resourceVersion 100000, the most that fit before the next recorded event (101000)"
	if !errors.Is(err, timeline.ErrNoRoom) || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
}

func TestATimelineWithoutWritesRefusesThem(t *testing.T) {
	tl := build(t)
	_, _, err := tl.Commit("ADDED", "default/w", "", 0, []byte(cm("w", 0)))
	if err == nil || err.Error() != "the timeline of /api/v1/namespaces/default/configmaps takes no writes" {
		t.Errorf("err = %v", err)
	}
}
