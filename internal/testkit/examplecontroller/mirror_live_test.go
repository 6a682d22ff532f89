package examplecontroller_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
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
	// Live, wait until the controller has caught up with the script:
	// checked again at each change the manager's cache sees, until the
	// minute of ctx is up.
	inf, err := mgr.GetCache().GetInformer(ctx, &corev1.ConfigMap{})
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify() },
		UpdateFunc: func(any, any) { notify() },
		DeleteFunc: func(any) { notify() },
	})
	if err != nil {
		t.Fatal(err)
	}
	defer inf.RemoveEventHandler(reg)
	var live []object
	for {
		var l corev1.ConfigMapList
		if err := mgr.GetCache().List(ctx, &l, client.InNamespace(namespace)); err != nil {
			t.Fatal(err)
		}
		if live = objects(l.Items); cmp.Equal(replayed, live) {
			break
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
		}
		break
	}
	if diff := cmp.Diff(replayed, live); diff != "" {
		t.Errorf("live final ConfigMaps differ from the replay's (-replay +live):\n%s", diff)
	}
}
