package mirror_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kwrec/kwrec/internal/controlplanetest"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// TestLiveMirrorEndsLikeTheReplay runs the controller on the real control
// plane while the script that made the recording runs again, and checks
// that the world ends as the replay (TestMirrorReplay) ends it: the same
// ConfigMaps, labels, annotations and data.
func TestLiveMirrorEndsLikeTheReplay(t *testing.T) {
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if err := setUp(ctx, cs, namespace); err != nil {
		t.Fatal(err)
	}
	mgr, err := newManager(cp.Config, namespace)
	if err != nil {
		t.Fatal(err)
	}
	mctx := startManager(t, mgr)
	if !mgr.GetCache().WaitForCacheSync(mctx) {
		t.Fatal("the cache did not sync")
	}
	if err := play(ctx, cs, namespace, 300*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	var replayed []object
	replaytest.Run(t, cassette, replaytest.BubbleOptions(), func(t *testing.T, r *replay.Replayer) {
		replayed = runController(t, r)
	})
	// Live, wait until the controller has caught up with the script.
	var live []object
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		var l corev1.ConfigMapList
		if err := mgr.GetAPIReader().List(ctx, &l, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		if live = objects(l.Items); cmp.Equal(replayed, live) || time.Now().After(deadline) {
			break
		}
	}
	if diff := cmp.Diff(replayed, live); diff != "" {
		t.Errorf("live final ConfigMaps differ from the replay's (-replay +live):\n%s", diff)
	}
}
