package conformance_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// widgetCRD is a CustomResourceDefinition with a structural schema of
// each kind the server checks: a required integer with a minimum, an enum
// with a default, an array with maxItems, a CEL rule, and a status
// subresource.
const widgetCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","scope":"Namespaced",
  "names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"subresources":{"status":{}},
   "schema":{"openAPIV3Schema":{"type":"object","properties":{
    "spec":{"type":"object","required":["size"],
     "x-kubernetes-validations":[{"rule":"self.size < 100","message":"size must be under 100"}],
     "properties":{
      "size":{"type":"integer","minimum":1},
      "color":{"type":"string","enum":["blue","red","green"],"default":"blue"},
      "tags":{"type":"array","maxItems":3,"items":{"type":"string"}},
      "ports":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],
       "items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"port":{"type":"integer"}}}},
      "labels":{"type":"object","x-kubernetes-map-type":"granular","additionalProperties":{"type":"string"}},
      "owner":{"type":"object","x-kubernetes-map-type":"atomic","properties":{"name":{"type":"string"},"team":{"type":"string"}}}}},
    "status":{"type":"object","properties":{"phase":{"type":"string"}}}}}}}]}}`

const widgets = "/apis/example.com/v1/namespaces/default/widgets"

func widget(name, spec string) string {
	return `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
}

// TestLiveCustomResourcesAnswerAsTheAPIServer writes custom resources of
// a CRD with a structural schema to the server and to an overlay of its
// recording (the CRD recorded with one Widget), and compares the answers:
// pruning of unknown fields (a Warning, or under Strict a 400), defaults,
// the schema's and the CEL rule's 422s, and the status subresource.
func TestLiveCustomResourcesAnswerAsTheAPIServer(t *testing.T) {
	w := newWorld(t, controlplanetest.Start(t))
	if a := w.do(t, w.live, w.liveHost, row{name: "crd", method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: widgetCRD}); a.Code != http.StatusCreated {
		t.Fatalf("creating the CRD: %d %v", a.Code, a.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for w.do(t, w.live, w.liveHost, row{method: "GET", path: widgets}).Code != http.StatusOK {
		select {
		case <-ctx.Done():
			t.Fatal("the CRD was not served within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	if a := w.do(t, w.live, w.liveHost, row{method: "POST", path: widgets, body: widget("w0", `{"size":3}`)}); a.Code != http.StatusCreated {
		t.Fatalf("creating w0: %d %v", a.Code, a.Body)
	}
	w.record(t, []string{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/apis/example.com/v1/widgets"},
		replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})
	w.run(t, []row{
		{name: "cr: create, the default filled", method: "POST", path: widgets, body: widget("w1", `{"size":2}`)},
		{name: "cr: get it", method: "GET", path: widgets + "/w1"},
		{name: "cr: an unknown field under Strict", method: "POST", path: widgets + "?fieldValidation=Strict", body: widget("w2", `{"size":2,"bogus":1}`)},
		{name: "cr: an unknown field under Warn, pruned", method: "POST", path: widgets, body: widget("w3", `{"size":2,"bogus":1}`)},
		{name: "cr: an unknown field under Ignore, pruned", method: "POST", path: widgets + "?fieldValidation=Ignore", body: widget("w4", `{"size":2,"bogus":1}`)},
		{name: "cr: below the minimum", method: "POST", path: widgets, body: widget("w5", `{"size":0}`)},
		{name: "cr: not in the enum", method: "POST", path: widgets, body: widget("w6", `{"size":2,"color":"purple"}`)},
		{name: "cr: too many items", method: "POST", path: widgets, body: widget("w7", `{"size":2,"tags":["a","b","c","d"]}`)},
		{name: "cr: a required field missing", method: "POST", path: widgets, body: widget("w8", `{"color":"red"}`)},
		{name: "cr: the CEL rule", method: "POST", path: widgets, body: widget("w9", `{"size":150}`)},
		{name: "cr: the CEL rule and a schema error", method: "POST", path: widgets, body: widget("w10", `{"size":150,"color":"purple"}`)},
		{name: "cr: a merge patch below the minimum", method: "PATCH", path: widgets + "/w1", body: `{"spec":{"size":0}}`, ct: "merge"},
		{name: "cr: a merge patch with an unknown field under Strict", method: "PATCH", path: widgets + "/w1?fieldValidation=Strict", body: `{"spec":{"bogus":1}}`, ct: "merge"},
		{name: "cr: a merge patch of the recorded one", method: "PATCH", path: widgets + "/w0", body: `{"spec":{"size":4,"tags":["x"]}}`, ct: "merge"},
		{name: "cr: status through the main resource is ignored", method: "PATCH", path: widgets + "/w0", body: `{"status":{"phase":"Main"}}`, ct: "merge"},
		{name: "cr: status through its subresource", method: "PATCH", path: widgets + "/w0/status", body: `{"status":{"phase":"Ready"}}`, ct: "merge"},
		{name: "cr: spec through the status subresource is ignored", method: "PATCH", path: widgets + "/w0/status", body: `{"spec":{"size":9}}`, ct: "merge"},
		{name: "cr: what the writes left", method: "GET", path: widgets + "/w0"},
		{name: "cr: a json patch to an invalid value", method: "PATCH", path: widgets + "/w0", body: `[{"op":"replace","path":"/spec/size","value":-1}]`, ct: "jsonpatch"},
		// Server-side apply merges by the schema: a list map by its keys,
		// a granular map by key, an atomic struct whole.
		{name: "cr: apply by a", method: "PATCH", path: widgets + "/wa?fieldManager=a", ct: "apply",
			body: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: wa\nspec:\n  size: 2\n  ports: [{name: http, port: 80}]\n  labels: {x: a}\n  owner: {name: ann}\n"},
		{name: "cr: apply by b of another list item and map key", method: "PATCH", path: widgets + "/wa?fieldManager=b", ct: "apply",
			body: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: wa\nspec:\n  ports: [{name: https, port: 443}]\n  labels: {y: b}\n"},
		{name: "cr: apply by b of a's atomic struct conflicts", method: "PATCH", path: widgets + "/wa?fieldManager=b", ct: "apply",
			body: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: wa\nspec:\n  owner: {team: blue}\n"},
		{name: "cr: apply by a dropping its list item", method: "PATCH", path: widgets + "/wa?fieldManager=a", ct: "apply",
			body: "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: wa\nspec:\n  size: 2\n  labels: {x: a}\n  owner: {name: ann}\n"},
		{name: "cr: what the applies left", method: "GET", path: widgets + "/wa"},
		{name: "cr: delete", method: "DELETE", path: widgets + "/w1"},
		{name: "cr: the list", method: "GET", path: widgets},
		{name: "cr: deletecollection of none", method: "DELETE", path: widgets + "?labelSelector=none%3Dnone"},
		{name: "cr: deletecollection of all", method: "DELETE", path: widgets},
		{name: "cr: the list after", method: "GET", path: widgets},
	})
}
