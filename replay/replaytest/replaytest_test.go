package replaytest_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

func names(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{Limit: 500, ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Name)
	}
	return out
}

func TestConfigReplaysTestdataCassette(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(replaytest.Config(t, "configmaps.kwrec"))
	if d := cmp.Diff([]string{"a", "b"}, names(t, cs)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestConfigReadsCompressedCassettes(t *testing.T) {
	c, err := cassettes.Load("testdata/configmaps.kwrec")
	if err != nil {
		t.Fatal(err)
	}
	zst := filepath.Join(t.TempDir(), "configmaps.kwrec.zst")
	if err := cassettes.Save(zst, c); err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(replaytest.Config(t, zst))
	if d := cmp.Diff([]string{"a", "b"}, names(t, cs)); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestNewPassesOptions(t *testing.T) {
	r := replaytest.New(t, "configmaps.kwrec", replay.Options{Strict: true})
	_, err := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if !errors.Is(err, replay.ErrNoMatch) {
		t.Errorf("a strict replay of an unrecorded list: %v, want ErrNoMatch", err)
	}
}
