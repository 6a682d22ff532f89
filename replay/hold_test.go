package replay_test

import (
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testclock "k8s.io/utils/clock/testing"
)

func TestHoldKeepsRecordedChangesBackUntilPlay(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, Hold: true})
		cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
		ctx := ctxT(t)
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100000"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if _, err := cms.Create(ctx, newCM("mine", "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// The write is not held: it comes before any recorded change.
		if diff := cmp.Diff([]string{"ADDED mine@100001=1"}, strs(recv(t, w, 1))); diff != "" {
			t.Errorf("while held (-want +got):\n%s", diff)
		}
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"a@90000", "b@95000", "mine@100001"}, names(l)); diff != "" {
			t.Errorf("list while held: the recorded start and the write (-want +got):\n%s", diff)
		}
		select {
		case <-r.Done():
			t.Fatal("done while held")
		default:
		}
		r.Play()
		want := []string{"ADDED c@101000=3", "MODIFIED a@102000=1b", "DELETED b@103000=2", "ADDED d@104000=4"}
		if diff := cmp.Diff(want, strs(recv(t, w, 4))); diff != "" {
			t.Errorf("after Play (-want +got):\n%s", diff)
		}
		waitDone(t, r)
	})
}

func TestConsumedWaitsForTheClientsToGoQuiet(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		synctest.Test(t, func(t *testing.T) {
			fc := testclock.NewFakeClock(time.Unix(0, 0))
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Clock: fc, Linger: time.Second})
			cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
			w, err := cms.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			recv(t, w, 4)
			waitDone(t, r)
			consumed := func() bool {
				select {
				case <-r.Consumed():
					return true
				default:
					return false
				}
			}
			waitWaiters(t, fc) // the linger timer (and the idle watch's)
			fc.Step(500 * time.Millisecond)
			if _, err := cms.List(ctxT(t), metav1.ListOptions{}); err != nil { // a request: the clients are not quiet yet
				t.Fatal(err)
			}
			fc.Step(500 * time.Millisecond)
			if consumed() {
				t.Fatal("consumed 500ms after the last request, want Linger (1s)")
			}
			waitWaiters(t, fc)
			fc.Step(500 * time.Millisecond)
			select {
			case <-r.Consumed():
			case <-time.After(20 * time.Second):
				t.Fatal("watchdog: not consumed 1s after the last request")
			}
		})
	})
}

func TestSettleSendsEachRecordedChangeOnceTheClientsAreIdle(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		synctest.Test(t, func(t *testing.T) {
			fc := testclock.NewFakeClock(time.Unix(0, 0))
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Clock: fc, Settle: time.Second})
			cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
			w, err := cms.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			for i, want := range []string{"ADDED c@101=3", "MODIFIED a@102=1b", "DELETED b@103=2", "ADDED d@104=4"} {
				waitWaiters(t, fc)
				select {
				case ev := <-w.ResultChan():
					t.Fatalf("change %d came before the clients were idle for Settle: %v", i+1, summarize(ev))
				default:
				}
				fc.Step(time.Second)
				if got := recv(t, w, 1)[0].String(); got != want {
					t.Errorf("change %d = %s, want %s", i+1, got, want)
				}
			}
		})
	})
}

func TestPendingSaysWhatKeepsTheReplayOpen(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		want := []string{cmPath + ": delivered up to resourceVersion 100 of 104"}
		if diff := cmp.Diff(want, replay.Pending(r)); diff != "" {
			t.Errorf("before any request (-want +got):\n%s", diff)
		}
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		recv(t, w, 4)
		waitDone(t, r)
		if p := replay.Pending(r); len(p) != 0 {
			t.Errorf("done, yet pending: %v", p)
		}
	})
}
