package replay_test

import (
	"net/http"
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
