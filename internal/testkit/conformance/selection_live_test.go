package conformance_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// TestLiveSelectorWatchesSeeObjectsMoveAlike watches ConfigMaps with a
// label selector, live and on the overlay of the recording, while the
// same writes move one into the selection and one out, change the one
// outside, and delete the one inside: both send the same events, the
// moves as ADDED and DELETED (the DELETED with the last version that
// matched).
func TestLiveSelectorWatchesSeeObjectsMoveAlike(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	const ns = "selection"
	w, live := recordTwoConfigMaps(t, ctx, controlplanetest.Start(t), ns)
	overlay := kubernetes.NewForConfigOrDie(w.replayer.Config())
	want := moveAndWatch(t, ctx, live, ns)
	got := moveAndWatch(t, ctx, overlay, ns)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("a selector watch's events, live versus overlay (-live +overlay):\n%s", d)
	}
	t.Logf("live and overlay: %v", want)
}

// moveAndWatch watches ns's ConfigMaps labelled app=demo from now while it
// moves "out" in and "in" out, changes "in", and deletes "out", and
// returns the watch's events as type, name and data.
func moveAndWatch(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	cms := cs.CoreV1().ConfigMaps(ns)
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "app=demo", ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	moveOnly(t, ctx, cs, ns)
	var out []string
	for len(out) < 3 {
		select {
		case ev, ok := <-wt.ResultChan():
			if !ok {
				t.Fatalf("the watch ended after %v", out)
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM {
				t.Fatalf("event %s of a %T (%+v) after %v", ev.Type, ev.Object, ev.Object, out)
			}
			out = append(out, fmt.Sprintf("%s %s k=%s", ev.Type, cm.Name, cm.Data["k"]))
		case <-ctx.Done():
			t.Fatalf("3 events wanted, got %v", out)
		}
	}
	return out
}

// recordTwoConfigMaps makes the namespace ns on cp with two ConfigMaps, "in" (label app=demo) and "out" (no label), and
// records their collection for an overlay replay (w.replayer). It returns
// the world and a client of the live server.
func recordTwoConfigMaps(t *testing.T, ctx context.Context, cp *controlplanetest.ControlPlane, ns string) (*world, kubernetes.Interface) {
	t.Helper()
	w := newWorld(t, cp)
	live := kubernetes.NewForConfigOrDie(w.cfg)
	if _, err := live.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, cm := range []*corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "in", Labels: map[string]string{"app": "demo"}}, Data: map[string]string{"k": "1"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "out"}, Data: map[string]string{"k": "1"}},
	} {
		if _, err := live.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.record(t, []string{"/api/v1/namespaces/" + ns + "/configmaps"}, replay.Options{Writes: replay.WritesOverlay})
	return w, live
}
