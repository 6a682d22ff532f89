package replay_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay"
)

// TestOpenServesAWatchOfDeltaFramesFromAnyResourceVersion: a compressed
// watch whose events are deltas against their ConfigMaps' previous
// versions (43 versions each, past cassettes.MaxDeltaChain) replays as
// recorded, from its start and from resourceVersions in its middle,
// whose first frames' bases the replay has not read.
func TestOpenServesAWatchOfDeltaFramesFromAnyResourceVersion(t *testing.T) {
	frames, want := modifiedWatch(300, func(i int) string { return fmt.Sprintf("v%d-%x", i, i*7919) })
	path := filepath.Join(t.TempDir(), "w.kwrec.zst")
	cassettetest.Write(t, path, watchCassette(cassettes.EndStopped, frames...), cassettes.WriterOptions{Deltas: true, SegmentSize: 2048})
	if n := bytes.Count(cassettetest.RawText(t, path), []byte(`"delta":`)); n < 290 {
		t.Fatalf("%d delta frames of 300", n)
	}
	r, err := replay.Open(path, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cs := clientset(t, r.Config())
	for _, from := range []int{0, 150, 251, 299} {
		t.Run(fmt.Sprintf("after event %d", from), func(t *testing.T) {
			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: fmt.Sprint(100 + from)})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			rest := want[from:]
			if d := cmp.Diff(rest, recv(t, w, len(rest))); d != "" {
				t.Errorf("events (-recorded +replayed):\n%s", d)
			}
		})
	}
}
