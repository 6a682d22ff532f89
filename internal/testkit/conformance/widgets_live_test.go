package conformance_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// gadgetCRD is a CustomResourceDefinition without printer columns: the
// server prints its resources' Name and Age.
const gadgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"gadgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","listKind":"GadgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,
   "schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`

const gadgets = "/apis/example.com/v1/namespaces/default/gadgets"

// richWidgetCRD is testdata/widgets-crd.yaml as JSON.
func richWidgetCRD(t *testing.T) string {
	t.Helper()
	y, err := os.ReadFile("testdata/widgets-crd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	return string(j)
}

// startWidgets starts the control plane with the CRDs of
// testdata/widgets-crd.yaml and [gadgetCRD], served, then seeds it with
// seed and records the CRDs, widgets and gadgets, as [startWorld] does.
func startWidgets(t *testing.T, seed []row) *world {
	t.Helper()
	w := newWorld(t, controlplanetest.Start(t))
	crds := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
	for _, def := range []string{richWidgetCRD(t), gadgetCRD} {
		if a := w.do(t, w.live, w.liveHost, row{method: "POST", path: crds, body: def}); a.Code != http.StatusCreated {
			t.Fatalf("creating a CRD: %d %v", a.Code, a.Body)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for _, p := range []string{widgets, gadgets} {
		// The server serves a CRD's resources once it has read it; the
		// control plane offers no event to wait on.
		for w.do(t, w.live, w.liveHost, row{method: "GET", path: p}).Code != http.StatusOK {
			select {
			case <-ctx.Done():
				t.Fatalf("%s was not served within a minute", p)
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	for _, s := range seed {
		if a := w.do(t, w.live, w.liveHost, s); a.Code >= 300 {
			t.Fatalf("seeding %s: %d %v", s.name, a.Code, a.Body)
		}
	}
	w.record(t, []string{crds, "/apis/example.com/v1/widgets", "/apis/example.com/v1/gadgets"},
		replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})
	return w
}

// widgetSeed is the recorded world of the widget tests: two widgets, one
// with a status, and a gadget.
var widgetSeed = []row{
	{name: "widget w0", method: "POST", path: widgets, body: widget("w0", `{"size":3,"replicas":2,"tags":["a"]}`)},
	{name: "widget w0 status", method: "PATCH", path: widgets + "/w0/status", ct: "merge",
		body: `{"status":{"ready":true,"replicas":1,"selector":"app=w0","phase":"Up"}}`},
	{name: "widget green", method: "POST", path: widgets, body: `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"green","labels":{"app":"g"}},"spec":{"size":7,"color":"green"}}`},
	{name: "gadget g0", method: "POST", path: gadgets, body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g0"},"spec":{"x":1}}`},
}

// watchTable is a streaming list in the Table form: its initial events
// and the bookmark that ends them, as kubectl's Accept asks.
const watchTable = "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"

// TestLiveCustomResourceTablesAsTheAPIServer asks the server and an
// overlay of its recording (which holds no Table form) for kubectl's
// Table of custom resources, recorded and written: the CRD's printer
// columns (a priority 1 column included, as -o wide shows it), or Name
// and Age without any, in lists, gets and the events of a watch (the
// column definitions in the first only, then a bookmark).
func TestLiveCustomResourceTablesAsTheAPIServer(t *testing.T) {
	w := startWidgets(t, widgetSeed)
	w.run(t, []row{
		{name: "table: the recorded widgets", method: "GET", path: widgets, accept: "table"},
		{name: "table: a recorded widget with a status", method: "GET", path: widgets + "/w0", accept: "table"},
		{name: "table: v1beta1", method: "GET", path: widgets + "/green", accept: "tablev1beta1"},
		{name: "table: the widgets of all namespaces", method: "GET", path: "/apis/example.com/v1/widgets", accept: "table"},
		{name: "table: create a widget, the default filled", method: "POST", path: widgets, body: widget("w1", `{"size":2}`)},
		{name: "table: the written widget", method: "GET", path: widgets + "/w1", accept: "table"},
		{name: "table: a widget's status written", method: "PATCH", path: widgets + "/w1/status", ct: "merge", body: `{"status":{"ready":false}}`},
		{name: "table: the list after the writes", method: "GET", path: widgets, accept: "table"},
		{name: "table: a label selector", method: "GET", path: widgets + "?labelSelector=app%3Dg", accept: "table"},
		{name: "table: a page", method: "GET", path: widgets + "?limit=1", accept: "table"},
		{name: "table: a watch's initial events and bookmark", method: "GET", path: widgets + watchTable, accept: "table"},
		{name: "table: gadgets print name and age", method: "GET", path: gadgets, accept: "table"},
		{name: "table: a gadget written", method: "POST", path: gadgets, body: `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"g1"}}`},
		{name: "table: the gadgets after", method: "GET", path: gadgets, accept: "table"},
		{name: "table: the gadgets' watch", method: "GET", path: gadgets + watchTable, accept: "table"},
		{name: "table: the widgets deleted", method: "DELETE", path: widgets},
		{name: "table: no widgets", method: "GET", path: widgets, accept: "table"},
	})
}

// TestLiveCustomResourceFieldSelectorsAsTheAPIServer selects custom
// resources by their CRD's selectableFields (a string and an integer),
// recorded and written, in lists, a watch and a deletecollection, and
// compares with the server, refusals of other fields included.
func TestLiveCustomResourceFieldSelectorsAsTheAPIServer(t *testing.T) {
	w := startWidgets(t, widgetSeed)
	w.run(t, []row{
		{name: "fields: a string field", method: "GET", path: widgets + "?fieldSelector=spec.color%3Dgreen"},
		{name: "fields: an integer field", method: "GET", path: widgets + "?fieldSelector=spec.size%3D3"},
		{name: "fields: not equal", method: "GET", path: widgets + "?fieldSelector=spec.color!%3Dgreen"},
		{name: "fields: two requirements", method: "GET", path: widgets + "?fieldSelector=spec.color%3Dgreen,spec.size%3D7"},
		{name: "fields: with metadata.name", method: "GET", path: widgets + "?fieldSelector=metadata.name%3Dw0,spec.color%3Dblue"},
		{name: "fields: all namespaces", method: "GET", path: "/apis/example.com/v1/widgets?fieldSelector=spec.color%3Dgreen"},
		{name: "fields: a field not selectable", method: "GET", path: widgets + "?fieldSelector=spec.tags%3Da"},
		{name: "fields: a status field not selectable", method: "GET", path: widgets + "?fieldSelector=status.phase%3DUp"},
		{name: "fields: a write", method: "POST", path: widgets, body: widget("w1", `{"size":3}`)},
		{name: "fields: the default selected", method: "GET", path: widgets + "?fieldSelector=spec.color%3Dblue"},
		{name: "fields: the written size selected", method: "GET", path: widgets + "?fieldSelector=spec.size%3D3"},
		{name: "fields: a watch's initial events", method: "GET", path: widgets + watchTable + "&fieldSelector=spec.size%3D3"},
		{name: "fields: in the Table form", method: "GET", path: widgets + "?fieldSelector=spec.color%3Dblue", accept: "table"},
		{name: "fields: a gadget has none", method: "GET", path: gadgets + "?fieldSelector=spec.x%3D1"},
		{name: "fields: deletecollection", method: "DELETE", path: widgets + "?fieldSelector=spec.size%3D3"},
		{name: "fields: what is left", method: "GET", path: widgets},
	})
}

// TestLiveCustomResourceScaleAsTheAPIServer reads and writes the scale
// subresource of custom resources (specReplicasPath .spec.replicas,
// statusReplicasPath .status.replicas, labelSelectorPath
// .status.selector) on the server and on an overlay of its recording: the
// autoscaling/v1 Scale answered, the object after, and the refusals.
func TestLiveCustomResourceScaleAsTheAPIServer(t *testing.T) {
	w := startWidgets(t, widgetSeed)
	scale := func(replicas int) string {
		return fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w0","namespace":"default"},"spec":{"replicas":%d}}`, replicas)
	}
	w.run(t, []row{
		{name: "scale: get a recorded widget's", method: "GET", path: widgets + "/w0/scale"},
		{name: "scale: get one without spec replicas", method: "GET", path: widgets + "/green/scale"},
		{name: "scale: get a missing widget's", method: "GET", path: widgets + "/none/scale"},
		{name: "scale: put", method: "PUT", path: widgets + "/w0/scale", body: scale(5)},
		{name: "scale: the widget after", method: "GET", path: widgets + "/w0"},
		{name: "scale: put with a stale resourceVersion", method: "PUT", path: widgets + "/w0/scale",
			body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"w0","resourceVersion":"1"},"spec":{"replicas":6}}`},
		{name: "scale: put another name", method: "PUT", path: widgets + "/w0/scale",
			body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"other"},"spec":{"replicas":6}}`},
		{name: "scale: put below the schema's minimum", method: "PUT", path: widgets + "/w0/scale", body: scale(-1)},
		{name: "scale: a merge patch", method: "PATCH", path: widgets + "/w0/scale", ct: "merge", body: `{"spec":{"replicas":3}}`},
		{name: "scale: a json patch", method: "PATCH", path: widgets + "/w0/scale", ct: "jsonpatch", body: `[{"op":"replace","path":"/spec/replicas","value":4}]`},
		{name: "scale: a merge patch of one without spec replicas", method: "PATCH", path: widgets + "/green/scale", ct: "merge", body: `{"spec":{"replicas":2}}`},
		{name: "scale: a merge patch that sets none", method: "PATCH", path: widgets + "/w1/scale", ct: "merge", body: `{"metadata":{"labels":{"a":"b"}}}`},
		{name: "scale: write w1", method: "POST", path: widgets, body: widget("w1", `{"size":2}`)},
		{name: "scale: a merge patch that sets none of w1", method: "PATCH", path: widgets + "/w1/scale", ct: "merge", body: `{"metadata":{"labels":{"a":"b"}}}`},
		{name: "scale: the widgets after", method: "GET", path: widgets},
		{name: "scale: a gadget has none", method: "GET", path: gadgets + "/g0/scale"},
		// A built-in kind under the same rule: its defaulted replicas are
		// its creator's, so the scale's writer gets an entry.
		{name: "scale: a deployment created without replicas", method: "POST", path: "/apis/apps/v1/namespaces/default/deployments",
			body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "scale: its scale put", method: "PUT", path: "/apis/apps/v1/namespaces/default/deployments/d/scale",
			body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"d"},"spec":{"replicas":3}}`},
		{name: "scale: the deployment after", method: "GET", path: "/apis/apps/v1/namespaces/default/deployments/d"},
	})
}
