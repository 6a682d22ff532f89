package timeline

import (
	"net/http"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A replay on a world clock (replay.WorldClock) sets every timeline's now
// from the time the world is at, instead of from what its clients were
// served: RVAt says where a recorded time is, SetNow moves now there, and a
// watch's step says when it was recorded (Step.At).

// RVAt returns the resourceVersion the timeline had reached at recorded
// time at: that of the last change (a list or an event) recorded at or
// before it, else the oldest. It takes O(log n) once the timeline has
// indexed its events' times, at its first call.
func (t *Timeline) RVAt(at time.Duration) int64 {
	rv := t.oldest
	for _, s := range t.snaps {
		if s.at <= at && s.rv > rv {
			rv = s.rv
		}
	}
	t.mu.Lock()
	if t.ats == nil {
		t.ats = make([]time.Duration, t.events.Len())
		var latest time.Duration
		for i := range t.ats {
			latest = max(latest, t.at(t.events.At(i)))
			t.ats[i] = latest
		}
	}
	ats := t.ats
	t.mu.Unlock()
	// Events are in resourceVersion order; ats only grows, so the events
	// recorded by at are a prefix.
	if i := sort.Search(len(ats), func(i int) bool { return ats[i] > at }); i > 0 {
		rv = max(rv, t.events.rvAt(i-1))
	}
	return rv
}

// SetNow moves now to recorded time at ([Timeline.RVAt]), forward or
// back, and returns the writes it drops. Forward, it is
// [Timeline.Advance]. Back, the writes made after the last change
// recorded by at are dropped (a write is placed by the recorded changes
// around it, not by when it was made): the world is as it was then.
// Writes since the change now stands at stay when at is still before the
// next recorded change.
func (t *Timeline) SetNow(at time.Duration) (dropped []Event) {
	rv := t.RVAt(at)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.clocked = true
	if rv >= t.progress {
		t.advanceLocked(rv)
		return nil
	}
	if next := t.nextRecorded(rv); next == 0 || t.progress < next {
		return nil // still between the same recorded changes
	}
	t.progress = rv
	i := sort.Search(len(t.writes), func(i int) bool { return t.writes[i].RV() > rv })
	dropped = append(dropped, t.writes[i:]...)
	t.writes = t.writes[:i:i]
	if len(dropped) > 0 && t.changed != nil {
		close(t.changed)
		t.changed = nil
	}
	return dropped
}

// Span returns the latest time a change of the timeline was recorded at,
// from the recording's start.
func (t *Timeline) Span() time.Duration {
	var at time.Duration
	for _, s := range t.snaps {
		at = max(at, s.at)
	}
	t.RVAt(0) // indexes the events' times
	t.mu.Lock()
	defer t.mu.Unlock()
	if n := len(t.ats); n > 0 {
		at = max(at, t.ats[n-1])
	}
	return at
}

// AtOfRV returns when the change with recorded resourceVersion rv was
// recorded (a list at rv, or an event), false when none was.
func (t *Timeline) AtOfRV(rv int64) (time.Duration, bool) {
	rv = t.Served(rv)
	at, ok := time.Duration(0), false
	for _, s := range t.snaps {
		if s.rv == rv && (!ok || s.at < at) {
			at, ok = s.at, true
		}
	}
	if i := t.events.search(rv); i > 0 && t.events.rvAt(i-1) == rv {
		if a := t.at(t.events.At(i - 1)); !ok || a < at {
			at, ok = a, true
		}
	}
	return at, ok
}

// isClocked reports whether now is set by a world clock ([Timeline.SetNow]).
func (t *Timeline) isClocked() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.clocked
}

// tooNew returns the server's 504 for a request of resourceVersion rv
// newer than the timeline can answer, nil when it can: newer than
// anything recorded or written, or on a world clock newer than now (a
// client that saw the world before a seek back; kube-apiserver answers
// the same to a resourceVersion etcd has not reached, and client-go then
// lists again from now).
func (t *Timeline) tooNew(rv int64) error {
	current := t.Newest()
	if t.isClocked() {
		current = t.Progress()
	}
	if rv <= current {
		return nil
	}
	return statusErr(http.StatusGatewayTimeout, metav1.StatusReasonTimeout, 1, "Too large resource version: %d, current: %d", rv, current)
}
