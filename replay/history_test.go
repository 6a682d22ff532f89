package replay_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/replay"
)

// loadHistory writes testdata/name to a compressed file and loads it,
// closed when the test ends.
func loadHistory(t *testing.T, name string) *replay.History {
	t.Helper()
	h, err := replay.Load(writeCompressed(t, fixture(t, name)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	return h
}

// configMapNames lists the ConfigMaps of default as a replay answers now.
func configMapNames(t *testing.T, r *replay.Replayer) []string {
	t.Helper()
	l, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cm := range l.Items {
		names = append(names, cm.Name+"@"+cm.ResourceVersion)
	}
	return names
}

func TestReplaysOfOneHistoryKeepTheirOwnWorlds(t *testing.T) {
	h := loadHistory(t, "configmaps.kwrec")
	const n = 8
	var wg sync.WaitGroup
	worlds := make([][]string, n)
	for i := range n {
		wg.Go(func() {
			r, err := h.Replayer(replay.Options{Writes: replay.WritesOverlay})
			if err != nil {
				t.Error(err)
				return
			}
			defer r.Close()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("only-in-%d", i)}}
			if _, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Create(ctxT(t), cm, metav1.CreateOptions{}); err != nil {
				t.Error(err)
				return
			}
			worlds[i] = configMapNames(t, r)
		})
	}
	wg.Wait()
	for i, got := range worlds {
		// Each replay starts from the recorded list (a@90, b@95 at 100)
		// and sees its own create alone, at the first resourceVersion
		// after 100 of a timeline that takes writes.
		want := []string{"a@90000", "b@95000", fmt.Sprintf("only-in-%d@100001", i)}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("replay %d (-want +got):\n%s", i, d)
		}
	}
	// A replay of the same history without writes sees the recording's
	// resourceVersions, unscaled.
	r, err := h.Replayer(replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if d := cmp.Diff([]string{"a@90", "b@95"}, configMapNames(t, r)); d != "" {
		t.Errorf("a replay without writes (-want +got):\n%s", d)
	}
}

func TestEachReplayOfOneHistoryFiresItsOwnEdits(t *testing.T) {
	h := loadHistory(t, "configmaps.kwrec")
	edit, err := replay.ParseEdit("error:resource=configmaps,verb=list,nth=1,status=503")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		r, err := h.Replayer(replay.Options{Edits: []replay.Edit{edit}})
		if err != nil {
			t.Fatal(err)
		}
		_, err = clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{})
		if !apierrors.IsServiceUnavailable(err) {
			t.Errorf("replay %d: the first list got %v, want the injected 503", i, err)
		}
		if es := r.Edits(); len(es) != 1 || es[0].Fired != 1 {
			t.Errorf("replay %d: edits %+v, want the one edit fired once", i, es)
		}
		r.Close()
	}
}

func TestClosingAReplayerOfAHistoryLeavesTheHistoryOpen(t *testing.T) {
	h := loadHistory(t, "configmaps.kwrec")
	r, err := h.Replayer(replay.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	// Closing a Replayer of a history leaves the history open.
	if got := configMapNames(t, mustReplayer(t, h)); len(got) != 2 {
		t.Errorf("after one replay closed, another lists %v, want the 2 recorded", got)
	}
}

func mustReplayer(t *testing.T, h *replay.History) *replay.Replayer {
	t.Helper()
	r, err := h.Replayer(replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}
