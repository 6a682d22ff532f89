package write

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// BenchmarkCustomResourceCreate measures the create of a custom resource
// whose definition (internal/testkit/conformance/testdata/widgets-crd.yaml)
// has a structural schema with a default, a minimum, an enum, maxItems
// and CEL rules: decode, prune, default, the strategy's validation (the
// schema and CEL), managedFields and encode, as the overlay runs it for
// each create. Issue #42 asks for under 1 ms.
//
//	go test -run XXX -bench CustomResourceCreate -count 10 ./replay/internal/write | benchstat -
func BenchmarkCustomResourceCreate(b *testing.B) {
	y, err := os.ReadFile("../../../internal/testkit/conformance/testdata/widgets-crd.yaml")
	if err != nil {
		b.Fatal(err)
	}
	def, err := yaml.YAMLToJSON(y)
	if err != nil {
		b.Fatal(err)
	}
	c, err := NewCustomResource(def, "v1")
	if err != nil {
		b.Fatal(err)
	}
	req := widget(VerbCreate, "")
	req.Custom, req.StatusSubresource, req.UserAgent = c, true, "kubectl/v1.37.2 (linux/amd64)"
	req.Body = []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w","labels":{"app":"w"}},"spec":{"size":3,"replicas":2,"tags":["a","b"]}}`)
	var e Engine
	bad := req
	bad.Body = []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"size":150}}`)
	if _, err := e.Apply(bad, nil, stamp("7")); err == nil || !strings.Contains(err.Error(), "size must be under 100") {
		b.Fatalf("the CEL rule does not run: %v", err) // the benchmark would measure less than a create
	}
	if _, err := e.Apply(req, nil, stamp("7")); err != nil {
		b.Fatal(err) // and the type converter is built before the timer
	}
	n := 0
	for b.Loop() {
		n++
		if _, err := e.Apply(req, nil, stamp(strconv.Itoa(n))); err != nil {
			b.Fatal(err)
		}
	}
}
