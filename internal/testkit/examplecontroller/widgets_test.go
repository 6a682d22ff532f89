package examplecontroller_test

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"sync/atomic"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// widgetKind is the custom resource of replay/testdata/crds/good.
var widgetKind = schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}

// widgetCRDs is the directory of the Widgets' CustomResourceDefinition, as
// a project keeps its config/crd/bases.
const widgetCRDs = "../../../replay/testdata/crds/good"

// readyWidgets is a controller of Widgets: it tags each one with its
// size class (and extra tags), then reports it ready with its replicas
// through the status subresource. The definition's schema allows at
// most three tags.
type readyWidgets struct {
	c     client.Client
	extra []string
	// refused counts the writes the server refused.
	refused *atomic.Int64
}

func (rw readyWidgets) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := &unstructured.Unstructured{}
	w.SetGroupVersionKind(widgetKind)
	if err := rw.c.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
	class := "small"
	if size >= 10 {
		class = "large"
	}
	want := append([]string{class}, rw.extra...)
	if tags, _, _ := unstructured.NestedStringSlice(w.Object, "spec", "tags"); !slices.Equal(tags, want) {
		if err := unstructured.SetNestedStringSlice(w.Object, want, "spec", "tags"); err != nil {
			return ctrl.Result{}, err
		}
		if err := rw.c.Update(ctx, w); err != nil {
			if apierrors.IsInvalid(err) {
				rw.refused.Add(1)
				return ctrl.Result{}, nil // not retried: it would be refused again
			}
			return ctrl.Result{}, err
		}
	}
	replicas, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
	if err := unstructured.SetNestedField(w.Object, map[string]any{"ready": true, "replicas": replicas}, "status"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, rw.c.Status().Update(ctx, w)
}

// TestAWidgetControllerRunsOnItsCRDs runs a controller-runtime manager of
// a custom resource on a replay given the resource's definitions from a
// directory (replaytest.CRDs): writes the definition's schema allows go
// through, status through the status subresource, and the world ends with
// every widget, recorded or created during the recording, ready and
// tagged; a controller that writes four tags gets the server's 422 on
// each widget (a fake client would have stored them).
func TestAWidgetControllerRunsOnItsCRDs(t *testing.T) {
	for _, tc := range []struct {
		name    string
		extra   []string
		want    []string
		refused int64
	}{
		{"tags within the schema", nil, []string{
			"big tags=[large] status=map[ready:true replicas:3] generation=2",
			"new tags=[small] status=map[ready:true replicas:2] generation=2",
			"small tags=[small] status=map[ready:true replicas:4] generation=3",
		}, 0},
		{"four tags, which the schema refuses", []string{"a", "b", "c"}, []string{
			"big tags=[] status=map[] generation=1",
			"new tags=[] status=map[] generation=1",
			"small tags=[] status=map[] generation=2",
		}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, refused := runWidgets(t, tc.extra)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("the widgets at the end (-want +got):\n%s", d)
			}
			if refused != tc.refused {
				t.Errorf("%d writes refused, want %d", refused, tc.refused)
			}
		})
	}
}

// runWidgets runs [readyWidgets] with extra tags on the widgets
// recording and returns the widgets it ends with and how many writes the
// server refused.
func runWidgets(t *testing.T, extra []string) (got []string, refused int64) {
	opts := replaytest.BubbleOptions()
	opts.CRDs = replaytest.CRDs(t, widgetCRDs)
	var n atomic.Int64
	replaytest.Run(t, "widgets.kwrec", opts, func(t *testing.T, r *replay.Replayer) {
		mgr, err := ctrl.NewManager(r.Config(), ctrl.Options{
			Metrics:                metricsserver.Options{BindAddress: "0"},
			HealthProbeBindAddress: "0",
			Cache:                  cache.Options{DefaultNamespaces: map[string]cache.Config{"shop": {}}},
			Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
		})
		if err != nil {
			t.Fatal(err)
		}
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(widgetKind)
		if err := ctrl.NewControllerManagedBy(mgr).For(w).Complete(readyWidgets{c: mgr.GetClient(), extra: extra, refused: &n}); err != nil {
			t.Fatal(err)
		}
		ctx := startManager(t, mgr)
		wctx, cancel := context.WithTimeout(ctx, watchdog)
		defer cancel()
		if !mgr.GetCache().WaitForCacheSync(wctx) {
			t.Fatal("the cache never synced")
		}
		r.Play()
		select {
		case <-r.Consumed():
		case <-wctx.Done():
			t.Fatalf("watchdog: the replay was not consumed in %v", watchdog)
		}
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(widgetKind.GroupVersion().WithKind("WidgetList"))
		if err := mgr.GetCache().List(ctx, l, client.InNamespace("shop")); err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			tags, _, _ := unstructured.NestedStringSlice(it.Object, "spec", "tags")
			st, _, _ := unstructured.NestedMap(it.Object, "status")
			got = append(got, fmt.Sprintf("%s tags=%v status=%v generation=%d", it.GetName(), tags, st, it.GetGeneration()))
		}
		sort.Strings(got)
	})
	return got, n.Load()
}
