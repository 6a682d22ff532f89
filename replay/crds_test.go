package replay_test

import (
	"errors"
	"testing"

	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

func TestLoadCRDsReadsADirectoryAsEnvtestDoes(t *testing.T) {
	c, err := replay.LoadCRDs("testdata/crds/good")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := c.Names(), []string{"widgets.example.com", "gizmos.example.com"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("loaded %v, want %v", got, want)
	}
}

func TestLoadCRDsRefusesWhatTheServerRefuses(t *testing.T) {
	for _, tc := range []struct {
		name, path, want string
	}{
		{"a schema that is not structural gets the server's words", "testdata/crds/bad/not-structural.yaml",
			`testdata/crds/bad/not-structural.yaml: document 1: not a valid CustomResourceDefinition: CustomResourceDefinition.apiextensions.k8s.io "things.example.com" is invalid: spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields`},
		{"a misspelt field is refused as the server refuses it under strict validation", "testdata/crds/bad/typo.yaml",
			`testdata/crds/bad/typo.yaml: document 1: not a valid CustomResourceDefinition: CustomResourceDefinition in version "v1" cannot be handled as a CustomResourceDefinition: strict decoding error: unknown field "spec.version"`},
		{"another kind is named", "testdata/crds/bad/configmap.yaml",
			`testdata/crds/bad/configmap.yaml: document 1: not a valid CustomResourceDefinition: a ConfigMap of "v1", want kind CustomResourceDefinition of apiextensions.k8s.io/v1`},
		{"a missing path", "testdata/crds/none",
			`CRDs: stat testdata/crds/none: no such file or directory`},
		{"a definition given twice", "testdata/crds/good/widgets.yaml",
			`testdata/crds/good/widgets.yaml: document 1: not a valid CustomResourceDefinition: widgets.example.com is defined twice, here and in testdata/crds/good/widgets.yaml: document 1`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			paths := []string{tc.path}
			if tc.name == "a definition given twice" {
				paths = append(paths, tc.path)
			}
			c, err := replay.LoadCRDs(paths...)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			if c != nil {
				t.Errorf("a failed load returned definitions: %v", c.Names())
			}
			if tc.name != "a missing path" && !errors.Is(err, replay.ErrBadCRD) {
				t.Errorf("%v does not wrap ErrBadCRD", err)
			}
		})
	}
}

func TestCRDsGivenToAReplayAreItsWorldsDefinitions(t *testing.T) {
	crds, err := replay.LoadCRDs("testdata/crds/good")
	if err != nil {
		t.Fatal(err)
	}
	forEachSource(t, func(t *testing.T, src source) {
		// The recording's widgets.example.com keeps any field; the
		// manifest's replaces it.
		r := src.replayer(t, crdCassette(), replay.Options{Writes: replay.WritesOverlay, CRDs: crds})
		ctx := ctxT(t)
		dyn := dynamic.NewForConfigOrDie(r.Config())
		widgets := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}).Namespace("default")
		w := func(spec map[string]any) *unstructured.Unstructured {
			return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
				"metadata": map[string]any{"name": "w"}, "spec": spec}}
		}
		_, err := widgets.Create(ctx, w(map[string]any{"size": int64(0)}), metav1.CreateOptions{})
		if want := `Widget.example.com "w" is invalid: spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1`; err == nil || err.Error() != want {
			t.Errorf("size 0: %v, want %s", err, want)
		}
		got, err := widgets.Create(ctx, w(map[string]any{"size": int64(3), "color": "red"}), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		unstructured.SetNestedField(got.Object, "blue", "spec", "color")
		_, err = widgets.Update(ctx, got, metav1.UpdateOptions{})
		if want := `Widget.example.com "w" is invalid: spec: Invalid value: a red widget stays red`; err == nil || err.Error() != want {
			t.Errorf("red to blue: %v, want %s", err, want)
		}
		other, err := widgets.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "v"}, "spec": map[string]any{"size": int64(1)}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if c, _, _ := unstructured.NestedString(other.Object, "spec", "color"); c != "blue" {
			t.Errorf("color %q, want the default, blue", c)
		}
		gizmos := dyn.Resource(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gizmos"})
		if _, err := gizmos.Create(ctx, &unstructured.Unstructured{Object: map[string]any{"apiVersion": "example.com/v1", "kind": "Gizmo",
			"metadata": map[string]any{"name": "g"}, "anything": "kept"}}, metav1.CreateOptions{}); err != nil {
			t.Errorf("a gizmo, defined by the manifest alone: %v", err)
		}
		if len(r.Writes()) != 3 {
			t.Errorf("%d writes noted, want the code's 3 that went through (the definitions installed are not the code's)", len(r.Writes()))
		}
	})
}

func TestCRDsNeedWritesOverlay(t *testing.T) {
	crds, err := replay.LoadCRDs("testdata/crds/good")
	if err != nil {
		t.Fatal(err)
	}
	_, err = replay.New(crdCassette(), replay.Options{CRDs: crds})
	if want := "option CRDs needs WritesOverlay: the definitions are created in the replay's world, as envtest creates them"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
