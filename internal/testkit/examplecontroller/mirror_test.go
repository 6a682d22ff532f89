package examplecontroller_test

import (
	"context"
	"encoding/json"
	"net/url"
	"path"
	"sort"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kwrec/kwrec/internal/testkit/examplecontroller"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

func init() { log.SetLogger(logr.Discard()) }

// watchdog bounds every wait of these tests, in bubble time: a replay
// that never ends fails when the bubble's clock reaches it, at once.
const watchdog = time.Hour

// TestMirrorReplay runs the controller on the recording in a synctest
// bubble as replaytest.ControllerOptions replay it (speed 0, each
// recorded change sent once the controller has been idle for
// replaytest.Settle of bubble time): its writes are the golden
// testdata/mirror.writes, every recorded change of a mirror=true
// ConfigMap was mirrored, and the world ends as the script wants it (see
// wantFinal).
func TestMirrorReplay(t *testing.T) {
	replaytest.Run(t, cassette, replaytest.BubbleOptions(), func(t *testing.T, r *replay.Replayer) {
		final := runController(t, r)
		replaytest.CheckWrites(t, r, "mirror")
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(everyChange(), mirrored(t, r)); diff != "" {
			t.Errorf("the data each mirror was applied with (-want +got):\n%s", diff)
		}
	})
}

// TestMirrorWithoutSettle replays at speed 0 with Hold but no Settle:
// once Play releases them, the recorded changes reach the informer
// faster than the controller reconciles, the workqueue folds the changes
// of one ConfigMap into one reconcile, and which intermediate versions a
// reconcile sees depends on the scheduler. The world still ends as the
// script wants it.
func TestMirrorWithoutSettle(t *testing.T) {
	opts := replaytest.BubbleOptions()
	opts.Settle = 0
	replaytest.Run(t, cassette, opts, func(t *testing.T, r *replay.Replayer) {
		final := runController(t, r)
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
		t.Logf("mirrored: %v", mirrored(t, r))
	})
}

// TestMirrorOpen is a manager on a plain replay.Open of the recording
// (kwrec record configmaps) in Overlay mode at speed 0, without Hold: it
// starts and ends in the script's final world, but its informer has run
// through the recording before the controller's handlers are registered,
// so it reconciles the final state only: alpha at a=3, never epsilon
// (deleted) or gamma (unlabelled). Reconciling every recorded change
// takes Hold, Play and Settle (TestMirrorReplay).
func TestMirrorOpen(t *testing.T) {
	// Linger: consumed once the controller, which starts reconciling up
	// to 100 ms after its cache syncs, has been idle for a second (of
	// bubble time).
	replaytest.Run(t, cassette, replay.Options{Writes: replay.WritesOverlay, Linger: time.Second}, func(t *testing.T, r *replay.Replayer) {
		mgr, err := newManager(r.Config(), namespace)
		if err != nil {
			t.Fatal(err)
		}
		ctx := startManager(t, mgr)
		final := waitFinal(t, ctx, mgr, r)
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
		want := map[string][]string{"alpha": {`{"a":"3"}`}, "delta": {`{"d":"1"}`}}
		if diff := cmp.Diff(want, mirrored(t, r)); diff != "" {
			t.Errorf("the data each mirror was applied with (-want +got):\n%s", diff)
		}
	})
}

// everyChange is what mirrored returns when the controller reconciled
// every recorded change of a mirror=true ConfigMap.
func everyChange() map[string][]string {
	return map[string][]string{
		"alpha":   {`{"a":"1"}`, `{"a":"2"}`, `{"a":"3"}`},
		"delta":   {`{"d":"1"}`},
		"epsilon": {`{"e":"1"}`},
		"gamma":   {`{"g":"1"}`},
	}
}

// TestMirrorRetriesAConflict injects a 409 on the controller's first
// Update of a ConfigMap: the reconcile fails, the workqueue retries it,
// and the world ends as without the conflict.
func TestMirrorRetriesAConflict(t *testing.T) {
	e, err := replay.ParseEdit("error:resource=configmaps,verb=update,nth=1,status=409")
	if err != nil {
		t.Fatal(err)
	}
	opts := replaytest.BubbleOptions()
	opts.Edits = []replay.Edit{e}
	replaytest.Run(t, cassette, opts, func(t *testing.T, r *replay.Replayer) {
		final := runController(t, r)
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
		fired := false
		for _, er := range r.Edits() {
			fired = fired || er.Fired > 0
		}
		if !fired {
			t.Errorf("the 409 never fired: %+v", r.Edits())
		}
	})
}

// runController runs the controller on r until the replay is consumed,
// and returns the ConfigMaps its cache ends with.
func runController(t *testing.T, r *replay.Replayer) []object {
	t.Helper()
	mgr, err := newManager(r.Config(), namespace)
	if err != nil {
		t.Fatal(err)
	}
	ctx := startManager(t, mgr)
	wctx, wcancel := context.WithTimeout(ctx, watchdog)
	defer wcancel()
	if !mgr.GetCache().WaitForCacheSync(wctx) {
		t.Fatal("watchdog: the cache did not sync")
	}
	// Every goroutine but this one blocked: the controller has
	// reconciled the recorded start.
	synctest.Wait()
	r.Play()
	return waitFinal(t, ctx, mgr, r)
}

// waitFinal waits until r is consumed and returns the ConfigMaps mgr's
// cache ends with.
func waitFinal(t *testing.T, ctx context.Context, mgr ctrl.Manager, r *replay.Replayer) []object {
	t.Helper()
	wctx, wcancel := context.WithTimeout(ctx, watchdog)
	defer wcancel()
	select {
	case <-r.Consumed():
	case <-wctx.Done():
		t.Fatalf("watchdog: the replay was not consumed in %v", watchdog)
	}
	// The cache has seen every event: the recorded ones and the
	// controller's writes. (A list through the replay now would fail:
	// ErrorWhenExhausted answers nothing once consumed.)
	var l corev1.ConfigMapList
	if err := mgr.GetCache().List(ctx, &l, client.InNamespace(namespace)); err != nil {
		t.Fatal(err)
	}
	return objects(l.Items)
}

// startManager starts mgr until t ends, and returns its context.
func startManager(t *testing.T, mgr ctrl.Manager) context.Context {
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return ctx
}

// newManager returns a manager running the controller on cfg, with its
// cache limited to namespace ns and no listeners.
func newManager(cfg *rest.Config, ns string) (ctrl.Manager, error) {
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		return nil, err
	}
	return mgr, examplecontroller.Setup(mgr)
}

// object is what the tests compare of a ConfigMap: what the script and
// the controller set, not what the server does.
type object struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
	Data        map[string]string
}

func objects(cms []corev1.ConfigMap) []object {
	var out []object
	for _, cm := range cms {
		o := object{Name: cm.Name, Labels: cm.Labels, Annotations: cm.Annotations, Data: cm.Data}
		if len(o.Labels) == 0 {
			o.Labels = nil // none, recorded as {} or left out
		}
		out = append(out, o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// wantFinal is the world once the script has run and the controller has
// caught up: alpha and delta mirrored, gamma's mirror gone with its
// label, epsilon's with it, beta never mirrored.
func wantFinal() []object {
	src := func(name, mirrorLabel string, data map[string]string) object {
		o := object{Name: name, Data: data}
		if mirrorLabel != "" {
			o.Labels = map[string]string{"mirror": mirrorLabel}
		}
		if mirrorLabel == "true" {
			o.Annotations = map[string]string{examplecontroller.Mirrored: examplecontroller.Hash(data)}
		}
		return o
	}
	dst := func(name string, data map[string]string) object {
		return object{Name: name + examplecontroller.MirrorSuffix, Labels: map[string]string{examplecontroller.MirrorOf: name}, Data: data}
	}
	return []object{
		src("alpha", "true", map[string]string{"a": "3"}),
		dst("alpha", map[string]string{"a": "3"}),
		src("beta", "", map[string]string{"b": "1"}),
		src("delta", "true", map[string]string{"d": "1"}),
		dst("delta", map[string]string{"d": "1"}),
		src("gamma", "false", map[string]string{"g": "1"}),
	}
}

// mirrored returns, per source, the data of each apply of its mirror, in
// order: the data versions the controller reconciled.
func mirrored(t *testing.T, r *replay.Replayer) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, w := range r.Writes() {
		u, err := url.Parse(w.Request.URL)
		if err != nil {
			t.Fatal(err)
		}
		if w.Request.Method != "PATCH" || !strings.HasSuffix(u.Path, examplecontroller.MirrorSuffix) {
			continue
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(w.Request.Body, &cm); err != nil {
			t.Fatal(err)
		}
		d, _ := json.Marshal(cm.Data)
		src := strings.TrimSuffix(path.Base(u.Path), examplecontroller.MirrorSuffix)
		out[src] = append(out[src], string(d))
	}
	return out
}
