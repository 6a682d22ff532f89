package replay_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay"
)

func TestOpenServesAWatchWhoseFramesSpanTheParts(t *testing.T) {
	frames, want := modifiedWatch(300, func(i int) string { return fmt.Sprintf("v%d", i) })
	c := watchCassette(cassettes.EndStopped, frames...)
	for _, tc := range []struct {
		name, ext string
		size      int64
	}{{"compressed", ".kwrec.zst", 500}, {"plain", ".kwrec", 4000}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			cassettetest.WriteInterleaved(t, filepath.Join(dir, "rec"+tc.ext), c, cassettes.WriterOptions{MaxSize: tc.size})
			parts, _ := filepath.Glob(filepath.Join(dir, "rec-*"))
			if len(parts) < 3 {
				t.Fatalf("%d parts, want at least 3", len(parts))
			}
			for _, name := range []string{filepath.Join(dir, "rec-*"+tc.ext), parts[0]} {
				r, err := replay.Open(name, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				cs := clientset(t, r.Config())
				w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(want, recv(t, w, len(want))); d != "" {
					t.Errorf("Open(%s): events (-recorded +replayed):\n%s", name, d)
				}
				w.Stop()
				r.Close()
			}
		})
	}
}
