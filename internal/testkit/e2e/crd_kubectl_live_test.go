package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// crdNamespace is where the custom resource scenarios run.
const crdNamespace = "e2e-widgets"

// widgetsCRD is the definition the scenarios use: a default, an enum, a
// minimum, maxItems, a required field, CEL rules (one on oldSelf), status
// and scale subresources, printer columns and a selectable field.
var widgetsCRD = filepath.Join("..", "..", "..", "replay", "testdata", "crds", "good", "widgets.yaml")

// widgetManifests are the files the widget script applies.
var widgetManifests = map[string]string{
	"bogus.yaml":   widgetManifest("w-bogus", "size: 2", "bogus: x"),
	"prune.yaml":   widgetManifest("w-prune", "size: 2", "bogus: x"),
	"default.yaml": widgetManifest("w-default", "size: 3"),
	"min.yaml":     widgetManifest("w-min", "size: 0"),
	"enum.yaml":    widgetManifest("w-enum", "size: 1", "color: purple"),
	"tags.yaml":    widgetManifest("w-tags", "size: 1", "tags: [a, b, c, d]"),
	"nosize.yaml":  widgetManifest("w-nosize", "color: green"),
	"cel.yaml":     widgetManifest("w-cel", "size: 150"),
	"red.yaml":     widgetManifest("w-red", "size: 1", "color: red"),
}

func widgetManifest(name string, spec ...string) string {
	return fmt.Sprintf("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: %s\nspec:\n  %s\n", name, strings.Join(spec, "\n  "))
}

// widgetRead prints what a write left of a widget.
const widgetRead = `jsonpath={.spec} {.status} {.metadata.generation}`

// widgetScript is the eleven writes of Widgets by kubectl, each
// followed by a read of what it left: strict field validation, pruning
// with its warning, a default, the schema's minimum, enum, maxItems and
// required, a CEL rule and a transition rule on oldSelf, and the status
// subresource against the main resource; then the definition's printer
// columns, scale subresource and selectable field.
var widgetScript = [][]string{
	{"apply", "-f", "bogus.yaml"},
	{"get", "widget", "w-bogus", "-o", widgetRead},
	{"apply", "--validate=warn", "-f", "prune.yaml"},
	{"get", "widget", "w-prune", "-o", widgetRead},
	{"create", "-f", "default.yaml"},
	{"get", "widget", "w-default", "-o", widgetRead},
	{"create", "-f", "min.yaml"},
	{"create", "-f", "enum.yaml"},
	{"create", "-f", "tags.yaml"},
	{"create", "-f", "nosize.yaml"},
	{"create", "-f", "cel.yaml"},
	{"patch", "widget", "w0", "--subresource", "status", "--type", "merge", "-p", `{"status":{"ready":true}}`},
	{"get", "widget", "w0", "-o", widgetRead},
	{"patch", "widget", "w0", "--type", "merge", "-p", `{"spec":{"size":2},"status":{"ready":false}}`},
	{"get", "widget", "w0", "-o", widgetRead},
	{"patch", "widget", "w0", "--subresource", "status", "--type", "merge", "-p", `{"spec":{"size":5},"status":{"replicas":1}}`},
	{"get", "widget", "w0", "-o", widgetRead},
	{"create", "-f", "red.yaml"},
	{"patch", "widget", "w-red", "--type", "merge", "-p", `{"spec":{"color":"blue"}}`},
	{"get", "widget", "w-red", "-o", widgetRead},
	{"get", "widgets", "-o", "name"},
	// Printer columns, a priority one with -o wide, the scale
	// subresource, a selectable field and short names.
	{"get", "widgets"},
	{"get", "wd", "-o", "wide"},
	{"scale", "widget", "w0", "--replicas=3"},
	{"get", "widget", "w0", "-o", widgetRead},
	{"get", "widgets", "--field-selector", "spec.color=red", "-o", "name"},
	{"get", "widgets", "--field-selector", "spec.shade=red"},
}

// TestLiveWidgetWritesAnswerAsLive runs [widgetScript] on the control
// plane with the Widgets CRD, and through kwrec serve --writes overlay of
// a `kwrec record widgets` of the same starting state (one widget, w0):
// once with the definition given by --crds, once with the recording
// alone (the definition kwrec record recorded). Every command's exit
// status, stdout and stderr must be the live ones.
func TestLiveWidgetWritesAnswerAsLive(t *testing.T) {
	kwrec := buildKwrec(t)
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	mustKubectl(t, ctx, cp.Kubeconfig, "apply", "-f", widgetsCRD)
	mustKubectl(t, ctx, cp.Kubeconfig, "wait", "--for", "condition=Established", "crd/widgets.example.com")
	mustKubectl(t, ctx, cp.Kubeconfig, "create", "namespace", crdNamespace)
	w0 := filepath.Join(t.TempDir(), "w0.yaml")
	if err := os.WriteFile(w0, []byte(widgetManifest("w0", "size: 1", "tags: [a]")), 0o600); err != nil {
		t.Fatal(err)
	}
	mustKubectl(t, ctx, cp.Kubeconfig, "-n", crdNamespace, "create", "-f", w0)
	cassette := filepath.Join(t.TempDir(), "widgets.kwrec.zst")
	recordUntilWatching(t, ctx, kwrec, cp.Kubeconfig, cassette, "widgets", "-n", crdNamespace)

	live := runScript(t, ctx, cp.Kubeconfig, widgetManifests, widgetScript)
	fx := &fixtures{kwrec: kwrec}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"with --crds", []string{"--writes", "overlay", "--crds", widgetsCRD}},
		{"with the recording alone", []string{"--writes", "overlay"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serve(t, fx, cassette, tc.args...)
			replayed := runScript(t, ctx, s.Kubeconfig, widgetManifests, widgetScript)
			for i, r := range replayed {
				if r.Exit == -1 { // kubectl was killed at its timeout
					t.Errorf("kubectl %s got no answer; kwrec serve's goroutines:\n%s", strings.Join(widgetScript[i], " "), s.Quit(t))
					break
				}
			}
			if stderr := s.Stop(t); strings.TrimSpace(stderr) != "" {
				t.Logf("kwrec serve stderr:\n%s", stderr)
			}
			for i, args := range widgetScript {
				if d := cmp.Diff(live[i], replayed[i]); d != "" {
					t.Errorf("kubectl %s (-live +replayed):\n%s", strings.Join(args, " "), d)
				}
			}
		})
	}
}

// runScript writes manifests to a directory and runs script there, in
// crdNamespace, against kubeconfig; it returns each command's normalized
// run.
func runScript(t *testing.T, ctx context.Context, kubeconfig string, manifests map[string]string, script [][]string) []kubectlRun {
	return runScriptUntil(t, ctx, kubeconfig, manifests, script, nil)
}

// runScriptUntil is runScript where the steps until names are run again,
// for up to half a minute, until their run meets it: what the API server
// does asynchronously (its discovery, OpenAPI and printer columns follow a
// CRD a moment after it is Established) is compared once done.
func runScriptUntil(t *testing.T, ctx context.Context, kubeconfig string, manifests map[string]string, script [][]string, until map[int]func(kubectlRun) bool) []kubectlRun {
	t.Helper()
	dir := t.TempDir()
	for name, m := range manifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	runs := make([]kubectlRun, len(script))
	for i, args := range script {
		deadline := time.Now().Add(30 * time.Second)
		for {
			runs[i] = normalizeRun(runKubectlStatus(ctx, dir, kubeconfig, append([]string{"-n", crdNamespace}, args...)...))
			if until[i] == nil || until[i](runs[i]) || time.Now().After(deadline) {
				break
			}
			select {
			case <-ctx.Done():
				return runs
			case <-time.After(250 * time.Millisecond):
			}
		}
	}
	return runs
}

// mustKubectl runs kubectl and fails t if it fails.
func mustKubectl(t *testing.T, ctx context.Context, kubeconfig string, args ...string) string {
	t.Helper()
	out, err := runKubectl(ctx, kubeconfig, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// recordUntilWatching runs `kwrec record ARGS -o cassette` until it says
// the initial state is recorded and it watches, then stops it.
func recordUntilWatching(t *testing.T, ctx context.Context, kwrec, kubeconfig, cassette string, args ...string) {
	t.Helper()
	cmd := exec.CommandContext(ctx, kwrec, append(append([]string{"record"}, args...), "-o", cassette, "--kubeconfig", kubeconfig)...)
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for !strings.Contains(stderr.String(), "is recorded; watching") {
		select {
		case <-ctx.Done():
			cmd.Process.Kill()
			t.Fatalf("kwrec record never said it watches; stderr:\n%s", stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("kwrec record: %v\n%s", err, stderr.String())
	}
}

// lifecycleManifests are the files [lifecycleScript] applies.
var lifecycleManifests = map[string]string{
	"crd.yaml": gadgetsCRD(""),
	"crd2.yaml": gadgetsCRD(`    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
`),
	"gadget.yaml": "apiVersion: example.com/v1\nkind: Gadget\nmetadata:\n  name: g1\nspec:\n  size: 2\n",
	"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s1\ndata:\n  a: YQ==\nstringData:\n  b: bee\n  a: overrides\n",
	"list.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: l1}
  data: {k: "1"}
- apiVersion: v1
  kind: ConfigMap
  metadata: {name: l2}
`,
}

// gadgetsCRD is a definition with short names and a category, and extra
// lines at the end of its version.
func gadgetsCRD(extra string) string {
	short := "[gd]"
	if extra != "" {
		short = "[gd, gdt]"
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget, shortNames: ` + short + `, categories: [all]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            description: What a gadget is.
            properties:
              size: {type: integer, minimum: 1, description: How big it is.}
` + extra
}

// lifecycleScript creates a CustomResourceDefinition with kubectl, uses
// it (short names, explain, api-resources), applies an update to the
// definition itself and uses its new short name and printer column,
// deletes it; and creates a Secret with stringData and a List.
var lifecycleScript = [][]string{
	{"apply", "-f", "crd.yaml"},
	{"wait", "--for", "condition=Established", "crd/gadgets.example.com"},
	{"get", "crd", "gadgets.example.com", "-o", "jsonpath={.status.acceptedNames} {.status.conditions[*].type} {.status.storedVersions} {.metadata.generation}"},
	{"api-resources", "--api-group=example.com"},
	{"explain", "gadget.spec"},
	{"create", "-f", "gadget.yaml"},
	{"get", "gd"},
	{"get", "all", "-o", "name"},
	{"apply", "-f", "crd2.yaml"},
	{"get", "crd", "gadgets.example.com", "-o", "jsonpath={.spec.names.shortNames} {.status.acceptedNames.shortNames} {.metadata.generation}"},
	{"get", "gdt"},
	{"explain", "gadgets.spec.size"},
	{"apply", "-f", "secret.yaml"},
	{"get", "secret", "s1", "-o", "jsonpath={.data} {.type}"},
	{"create", "-f", "list.yaml"},
	{"get", "configmaps", "l1", "l2", "-o", "jsonpath={.items[*].data}"},
	{"delete", "crd", "gadgets.example.com"},
	{"get", "gadgets"},
}

// lifecycleUntil are the steps of [lifecycleScript] that follow what
// the API server does a moment after a CRD changes, and what each waits
// for (by index).
var lifecycleUntil = map[int]func(kubectlRun) bool{
	3:  func(r kubectlRun) bool { return strings.Contains(r.Stdout, "gadgets") }, // api-resources
	4:  func(r kubectlRun) bool { return r.Exit == 0 },                           // explain
	6:  func(r kubectlRun) bool { return r.Exit == 0 },                           // get gd
	7:  func(r kubectlRun) bool { return strings.Contains(r.Stdout, "gadget") },  // get all
	10: func(r kubectlRun) bool { return strings.Contains(r.Stdout, "SIZE") },    // get gdt, the new column
	11: func(r kubectlRun) bool { return r.Exit == 0 },                           // explain
	17: func(r kubectlRun) bool { return r.Exit != 0 },                           // get gadgets, deleted
}

// TestLiveKubectlCRDLifecycleAsLive runs [lifecycleScript] on the control
// plane and through kwrec serve --writes overlay of a `kwrec record` of
// the same namespace: every command's exit status, stdout and stderr
// must be the live ones.
func TestLiveKubectlCRDLifecycleAsLive(t *testing.T) {
	kwrec := buildKwrec(t)
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	mustKubectl(t, ctx, cp.Kubeconfig, "create", "namespace", crdNamespace)
	mustKubectl(t, ctx, cp.Kubeconfig, "-n", crdNamespace, "create", "configmap", "before")
	cassette := filepath.Join(t.TempDir(), "cms.kwrec.zst")
	recordUntilWatching(t, ctx, kwrec, cp.Kubeconfig, cassette, "configmaps", "-n", crdNamespace)

	live := runScriptUntil(t, ctx, cp.Kubeconfig, lifecycleManifests, lifecycleScript, lifecycleUntil)
	s := serve(t, &fixtures{kwrec: kwrec}, cassette, "--writes", "overlay")
	replayed := runScriptUntil(t, ctx, s.Kubeconfig, lifecycleManifests, lifecycleScript, lifecycleUntil)
	if stderr := s.Stop(t); strings.TrimSpace(stderr) != "" {
		t.Logf("kwrec serve stderr:\n%s", stderr)
	}
	for i, args := range lifecycleScript {
		if d := cmp.Diff(live[i], replayed[i]); d != "" {
			t.Errorf("kubectl %s (-live +replayed):\n%s", strings.Join(args, " "), d)
		}
	}
}
