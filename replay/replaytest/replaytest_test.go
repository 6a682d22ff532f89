package replaytest_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
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

// RecordOnce replays a cassette that exists: no cluster is asked for.
func TestRecordOnceReplaysACassetteThatExists(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "none"))
	t.Setenv(replaytest.EnvRecord, "once")
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

func TestAWatchLoopWithoutADeadlineEndsOnceTheCassetteIsConsumed(t *testing.T) {
	cs := kubernetes.NewForConfigOrDie(replaytest.Config(t, "configmaps.kwrec"))
	// The README's shape: a watch and a loop over its events, with no
	// deadline of its own. (The test binary's -timeout is the watchdog.)
	w, err := cs.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "100"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	var last watch.Event
	for ev := range w.ResultChan() {
		got = append(got, string(ev.Type))
		last = ev
	}
	want := []string{"ADDED", "MODIFIED", "DELETED", "ADDED", "ERROR"}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("events (-want +got):\n%s", d)
	}
	if err := apierrors.FromObject(last.Object); !replay.IsExhausted(err) || !strings.Contains(err.Error(), "the cassette is consumed") {
		t.Errorf("the last event: %v, want ErrExhausted saying the cassette is consumed", err)
	}
}

func TestCheckWritesComparesWithTheGoldenFile(t *testing.T) {
	r := replaytest.Controller(t, "configmaps.kwrec")
	r.Play()
	cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "w-", Namespace: "default"}, Data: map[string]string{"k": "v"}}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Patch(t.Context(), "a", types.MergePatchType, []byte(`{"metadata":{"annotations":{"seen":"yes"}}}`), metav1.PatchOptions{FieldManager: "test"}); err != nil {
		t.Fatal(err)
	}
	replaytest.CheckWrites(t, r, "two-writes")
	got := replaytest.FormatWrites(r.Writes())
	for _, volatile := range []string{"resourceVersion", "uid", "creationTimestamp", "managedFields"} {
		if strings.Contains(got, volatile) {
			t.Errorf("the normalized writes keep %s:\n%s", volatile, got)
		}
	}
}
