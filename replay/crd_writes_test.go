package replay_test

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// crdCassette records one list of CustomResourceDefinitions: widgets in
// example.com, namespaced, with a status subresource. No widget was ever
// recorded.
func crdCassette() *cassettes.Cassette {
	crd := `{"kind":"CustomResourceDefinitionList","apiVersion":"apiextensions.k8s.io/v1","metadata":{"resourceVersion":"300"},"items":[` +
		`{"metadata":{"name":"widgets.example.com","resourceVersion":"250"},"spec":{"group":"example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",` +
		`"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}]}`
	return &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{{
		ID:       1,
		Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions?limit=500", Header: http.Header{"Accept": {"application/json"}}},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
		Frames:   []cassettes.Frame{{Data: []byte(crd)}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}}}
}

func TestACustomResourceDefinedInTheCassetteTakesWrites(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, crdCassette(), replay.Options{Writes: replay.WritesOverlay})
		cfg := r.Config()
		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		res, err := dc.ServerResourcesForGroupVersion("example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range res.APIResources {
			names = append(names, a.Name)
		}
		if len(names) != 2 || names[0] != "widgets" || names[1] != "widgets/status" || !res.APIResources[0].Namespaced {
			t.Fatalf("discovery of example.com/v1: %v, want namespaced widgets and widgets/status", res.APIResources)
		}
		widgets := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
		ctx := ctxT(t)
		w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w"}, "spec": map[string]any{"size": int64(1)}, "status": map[string]any{"ready": true}}}
		got, err := widgets.Create(ctx, w, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.GetGeneration() != 1 {
			t.Errorf("generation %d after create, want 1", got.GetGeneration())
		}
		if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "status"); found {
			t.Errorf("a create set status, which the status subresource owns: %v", got.Object["status"])
		}
		unstructured.SetNestedField(got.Object, true, "status", "ready")
		st, err := widgets.UpdateStatus(ctx, got, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ready, _, _ := unstructured.NestedBool(st.Object, "status", "ready"); !ready || st.GetGeneration() != 1 {
			t.Errorf("after the status update: ready %v generation %d, want true and 1", ready, st.GetGeneration())
		}
		unstructured.SetNestedField(st.Object, int64(2), "spec", "size")
		up, err := widgets.Update(ctx, st, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if up.GetGeneration() != 2 {
			t.Errorf("generation %d after a spec change, want 2", up.GetGeneration())
		}
	})
}

// gadgetsCRD is a CustomResourceDefinition the code under test creates:
// names, categories, a schema with a minimum, status and scale.
const gadgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"gadgets.example.com"},
"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"gadgets","singular":"gadget","kind":"Gadget","shortNames":["gd"],"categories":["all"]},
"versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{},"scale":{"specReplicasPath":".spec.replicas","statusReplicasPath":".status.replicas"}},
"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","minimum":1},"replicas":{"type":"integer"}}},"status":{"type":"object","properties":{"replicas":{"type":"integer"}}}}}}}]}}`

func TestACustomResourceDefinitionWrittenIsServed(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, crdCassette(), replay.Options{Writes: replay.WritesOverlay})
		cfg := r.Config()
		ctx := ctxT(t)
		crds := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		var def unstructured.Unstructured
		if err := def.UnmarshalJSON([]byte(gadgetsCRD)); err != nil {
			t.Fatal(err)
		}
		created, err := crds.Create(ctx, &def, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if st, _, _ := unstructured.NestedStringSlice(created.Object, "status", "storedVersions"); created.GetGeneration() != 1 || len(st) != 1 || st[0] != "v1" {
			t.Errorf("created: generation %d, storedVersions %v; want 1 and [v1]", created.GetGeneration(), st)
		}
		if conds, found, _ := unstructured.NestedSlice(created.Object, "status", "conditions"); found {
			t.Errorf("the create's answer has conditions %v; the server's has none yet", conds)
		}
		got, err := crds.Get(ctx, "gadgets.example.com", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
		var states []string
		for _, c := range conds {
			m := c.(map[string]any)
			states = append(states, fmt.Sprint(m["type"], "=", m["status"], "/", m["reason"]))
		}
		if want := "[NamesAccepted=True/NoConflicts Established=True/InitialNamesAccepted]"; fmt.Sprint(states) != want {
			t.Errorf("conditions %v, want %s", states, want)
		}
		if kind, _, _ := unstructured.NestedString(got.Object, "status", "acceptedNames", "kind"); kind != "Gadget" {
			t.Errorf("acceptedNames.kind %q, want Gadget", kind)
		}

		dc := discovery.NewDiscoveryClientForConfigOrDie(cfg)
		res, err := dc.ServerResourcesForGroupVersion("example.com/v1")
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, a := range res.APIResources {
			names = append(names, fmt.Sprint(a.Name, a.ShortNames, a.Categories))
		}
		if want := "[gadgets[gd] [all] gadgets/status[] [] gadgets/scale[] [] widgets[] [] widgets/status[] []]"; fmt.Sprint(names) != want {
			t.Errorf("discovery of example.com/v1: %v, want %s", names, want)
		}
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			t.Fatal(err)
		}
		gv, ok := paths["apis/example.com/v1"]
		if !ok {
			t.Fatalf("the OpenAPI v3 index has no apis/example.com/v1")
		}
		doc, err := gv.Schema("application/json")
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(doc, []byte(`"com.example.v1.Gadget"`)) || !bytes.Contains(doc, []byte(`"minimum":1`)) {
			t.Errorf("the OpenAPI v3 document of example.com/v1 lacks the Gadget schema: %.300s", doc)
		}

		gadgets := dynamic.NewForConfigOrDie(cfg).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}).Namespace("default")
		g := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gadget",
			"metadata": map[string]any{"name": "g"}, "spec": map[string]any{"size": int64(0)}}}
		_, err = gadgets.Create(ctx, g, metav1.CreateOptions{})
		if want := `Gadget.example.com "g" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`; err == nil || err.Error() != want {
			t.Errorf("a gadget of size 0: %v, want %s", err, want)
		}
	})
}

func TestAnInvalidCustomResourceDefinitionGetsTheServersError(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, crdCassette(), replay.Options{Writes: replay.WritesOverlay})
		crds := dynamic.NewForConfigOrDie(r.Config()).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
		var def unstructured.Unstructured
		if err := def.UnmarshalJSON([]byte(strings.Replace(gadgetsCRD, `"name":"gadgets.example.com"`, `"name":"gizmos.example.com"`, 1))); err != nil {
			t.Fatal(err)
		}
		_, err := crds.Create(ctxT(t), &def, metav1.CreateOptions{})
		want := `CustomResourceDefinition.apiextensions.k8s.io "gizmos.example.com" is invalid: metadata.name: Invalid value: "gizmos.example.com": must be spec.names.plural+"."+spec.group`
		if err == nil || err.Error() != want {
			t.Errorf("got %v, want %s", err, want)
		}
	})
}

// widgetsCassette records a list of widgets in default (one, w0) and,
// when withCRD, a GET of their definition, as kwrec record records it:
// spec.size must be at least 1.
func widgetsCassette(withCRD bool) *cassettes.Cassette {
	list := `{"kind":"WidgetList","apiVersion":"example.com/v1","metadata":{"resourceVersion":"300"},"items":[` +
		`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w0","namespace":"default","resourceVersion":"290"},"spec":{"size":1}}]}`
	c := &cassettes.Cassette{Header: cassettes.Header{Version: 1}}
	if withCRD {
		crd := `{"kind":"CustomResourceDefinition","apiVersion":"apiextensions.k8s.io/v1","metadata":{"name":"widgets.example.com","resourceVersion":"250"},` +
			`"spec":{"group":"example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",` +
			`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"integer","minimum":1}}}}}}}]}}`
		c.Interactions = append(c.Interactions, &cassettes.Interaction{
			Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com", Header: http.Header{"Accept": {"application/json"}}},
			Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
			Frames:   []cassettes.Frame{{Data: []byte(crd)}},
			End:      &cassettes.End{Reason: cassettes.EndEOF},
		})
	}
	c.Interactions = append(c.Interactions, &cassettes.Interaction{
		Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/apis/example.com/v1/namespaces/default/widgets?limit=500", Header: http.Header{"Accept": {"application/json"}}},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
		Frames:   []cassettes.Frame{{Data: []byte(list)}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	})
	for i, in := range c.Interactions {
		in.ID = i + 1
	}
	return c
}

func TestARecordedGETOfADefinitionGivesItsSchema(t *testing.T) {
	for _, tc := range []struct {
		name    string
		withCRD bool
		want    string
		told    []string
	}{
		{"with the definition recorded, a widget of size 0 is refused", true,
			`Widget.example.com "w1" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`, nil},
		{"without it, the widget is kept as written, and the replay says so once", false, "",
			[]string{"widgets.example.com has no CustomResourceDefinition in the recording or the CRDs given: its objects are kept as written, with no pruning, defaults or validation (give its manifest with --crds)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			var told []string
			r, err := replay.New(widgetsCassette(tc.withCRD), replay.Options{Writes: replay.WritesOverlay, Logf: func(format string, args ...any) {
				mu.Lock()
				defer mu.Unlock()
				told = append(told, fmt.Sprintf(format, args...))
			}})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			widgets := dynamic.NewForConfigOrDie(r.Config()).Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
			for _, name := range []string{"w1", "w2"} {
				_, err := widgets.Create(ctxT(t), &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
					"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": int64(0)}}}, metav1.CreateOptions{})
				got := ""
				if err != nil {
					got = err.Error()
				}
				if want := strings.ReplaceAll(tc.want, "w1", name); got != want {
					t.Errorf("create %s: %q, want %q", name, got, want)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if fmt.Sprint(told) != fmt.Sprint(tc.told) {
				t.Errorf("told %q, want %q", told, tc.told)
			}
		})
	}
}
