package replaytest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// KWREC_RECORD=once records a missing cassette from the live cluster; the
// same call then replays it, offline.
func TestLiveRecordOnceRecordsThenReplays(t *testing.T) {
	cp := controlplanetest.Start(t)
	admin := kubernetes.NewForConfigOrDie(cp.Config)
	for _, n := range []string{"x", "y"} {
		if _, err := admin.CoreV1().ConfigMaps("default").Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "once.kwrec.zst")
	t.Setenv("KUBECONFIG", cp.Kubeconfig)
	t.Setenv(replaytest.EnvRecord, "once")

	t.Run("the first run records", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(replaytest.Config(t, path))
		if d := cmp.Diff([]string{"x", "y"}, names(t, cs)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("nothing recorded: %v", err)
	}
	if err := cp.Stop(); err != nil { // from here on there is no cluster
		t.Fatal(err)
	}
	t.Run("the second run replays", func(t *testing.T) {
		cs := kubernetes.NewForConfigOrDie(replaytest.Config(t, path))
		if d := cmp.Diff([]string{"x", "y"}, names(t, cs)); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
	})
}
