package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// TestLiveRecordAll records a control plane with record --all, as the
// CLI, and reads back which collections the cassette lists: every kind
// the test made (a custom resource, ConfigMaps, Secrets with their data
// redacted, Deployments) and the cluster's own, but Events and Leases
// only with --include.
func TestLiveRecordAll(t *testing.T) {
	kubeconfig := allObjects(t)
	for _, tc := range []struct {
		name    string
		args    []string
		want    []string
		notWant []string
		// skipped are lines stderr must hold, each in the header's skipped
		// list too after "kwrec: recording: skipped "; none: nothing skipped.
		skipped []string
	}{
		{
			name: "record --all records every kind but events and leases",
			want: []string{"/api/v1/configmaps", "/api/v1/secrets", "/apis/example.com/v1/widgets", "/apis/apps/v1/deployments",
				"/api/v1/namespaces", "/api/v1/serviceaccounts", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
			notWant: []string{"/api/v1/events", "/apis/events.k8s.io/v1/events", "/apis/coordination.k8s.io/v1/leases", "/api/v1/pods/log", "/api/v1/componentstatuses"},
		},
		{
			name:    "record --all --include events records events too",
			args:    []string{"--include", "events"},
			want:    []string{"/api/v1/configmaps", "/api/v1/events", "/apis/events.k8s.io/v1/events"},
			notWant: []string{"/apis/coordination.k8s.io/v1/leases"},
		},
		{
			name:    "record --all -n records that namespace's namespaced resources",
			args:    []string{"-n", "kwrec-all", "--exclude", "apps"},
			want:    []string{"/api/v1/namespaces/kwrec-all/configmaps", "/apis/example.com/v1/namespaces/kwrec-all/widgets"},
			notWant: []string{"/api/v1/namespaces", "/api/v1/configmaps", "/apis/apps/v1/namespaces/kwrec-all/deployments", "/apis/rbac.authorization.k8s.io/v1/clusterroles"},
		},
		{
			name:    "a resource that refuses the field selector is skipped, the others recorded",
			args:    []string{"-n", "kwrec-all", "--field-selector", "spec.nodeName=nowhere"},
			want:    []string{"/api/v1/namespaces/kwrec-all/pods"},
			notWant: []string{"/api/v1/namespaces/kwrec-all/configmaps", "/apis/apps/v1/namespaces/kwrec-all/deployments"},
			skipped: []string{
				`kwrec: recording: skipped configmaps: --field-selector refused (list): "spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`,
				"kwrec: recording: skipped secrets: --field-selector refused (list): field label not supported: spec.nodeName",
				`kwrec: recording: skipped deployments.apps: --field-selector refused (list): "spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`,
				"kwrec: recording: skipped widgets.example.com: --field-selector refused (list): field label not supported: spec.nodeName",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "all.kwrec")
			args := append([]string{"record", "--all", "--kubeconfig", kubeconfig, "-o", out}, tc.args...)
			code, stdout, stderr := kwrecUntilListed(t, args...)
			if code != 0 {
				t.Fatalf("kwrec %s exited with %d:\n%s%s", strings.Join(args, " "), code, stdout, stderr)
			}
			c, err := cassettes.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			if tc.skipped == nil && (strings.Contains(stderr, "skipped") || c.Header.Skipped != nil) {
				t.Errorf("an admin's record --all skipped %q:\n%s", c.Header.Skipped, stderr)
			}
			lines := strings.Split(stderr, "\n")
			// v1 Endpoints' deprecation comes with every request for them: once.
			const deprecated = "kwrec: warning: the server warns: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n"
			if n := strings.Count(stderr, deprecated); n != 1 {
				t.Errorf("stderr holds %q %d times, want once:\n%s", deprecated, n, stderr)
			}
			for _, want := range tc.skipped {
				if !slices.Contains(lines, want) {
					t.Errorf("stderr has no line %q:\n%s", want, stderr)
				}
				if s := strings.TrimPrefix(want, "kwrec: recording: skipped "); !slices.Contains(c.Header.Skipped, s) {
					t.Errorf("the header's skipped list %q does not hold %q", c.Header.Skipped, s)
				}
			}
			lists := recordedLists(t, c)
			for _, p := range tc.want {
				if _, ok := lists[p]; !ok {
					t.Errorf("no list of %s recorded; recorded: %s", p, strings.Join(mapKeys(lists), " "))
				}
			}
			for _, p := range tc.notWant {
				if _, ok := lists[p]; ok {
					t.Errorf("a list of %s was recorded; want none", p)
				}
			}
			if items := lists["/api/v1/secrets"]; items != nil {
				if !slices.Contains(items, "kwrec-all/password") {
					t.Errorf("the Secrets list holds %q, want kwrec-all/password in it", items)
				}
			}
			if b, err := os.ReadFile(out); err != nil {
				t.Fatal(err)
			} else if bytes.Contains(b, []byte("hunter2")) || bytes.Contains(b, []byte("aHVudGVyMi")) { // the text form: frames as JSON
				t.Errorf("%s holds the Secret's value; want it redacted", out)
			}
		})
	}
}

// allObjects starts a control plane holding one object of each kind the
// record --all tests look for (testdata/all), and returns its kubeconfig.
func allObjects(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH")
	}
	cp := controlplanetest.Start(t)
	kubectl(t, cp.Kubeconfig, "apply", "-f", "testdata/all/crd.yaml")
	kubectl(t, cp.Kubeconfig, "wait", "--for", "condition=established", "--timeout", "60s", "crd/widgets.example.com")
	kubectl(t, cp.Kubeconfig, "apply", "-f", "testdata/all/objects.yaml", "-f", "testdata/all/widget.yaml")
	return cp.Kubeconfig
}

// kubectl runs kubectl against kubeconfig and fails the test if it fails.
func kubectl(t *testing.T, kubeconfig string, args ...string) string {
	t.Helper()
	cmd := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kwrecUntilListed runs kwrec record in-process and stops it as Ctrl-C
// would once it says the initial state of every collection is recorded
// (or after two minutes, when the test fails).
func kwrecUntilListed(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var o bytes.Buffer
	e := &untilWriter{marker: "is recorded; watching", ready: cancel}
	done := make(chan int, 1)
	go func() { done <- runContext(ctx, args, streams{strings.NewReader(""), &o, e}) }()
	select {
	case code = <-done:
	case <-time.After(2 * time.Minute):
		cancel()
		code = <-done
		t.Errorf("kwrec %s: no line saying the initial state is recorded within two minutes", strings.Join(args, " "))
	}
	return code, o.String(), e.String()
}

// untilWriter is a goroutine-safe stderr that calls ready once a line
// holding marker is written.
type untilWriter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	marker string
	ready  func()
}

func (w *untilWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n, err := w.b.Write(p)
	if strings.Contains(w.b.String(), w.marker) {
		w.ready()
	}
	return n, err
}

func (w *untilWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// recordedLists returns, by URL path, the names (namespace/name) of the
// items of each JSON list a cassette recorded (the Table form and watches
// left out).
func recordedLists(t *testing.T, c *cassettes.Cassette) map[string][]string {
	t.Helper()
	lists := map[string][]string{}
	for _, in := range c.Interactions {
		u, err := url.Parse(in.Request.URL)
		if err != nil {
			t.Fatal(err)
		}
		if in.Request.Method != "GET" || u.Query().Get("watch") == "true" || strings.Contains(in.Request.Header.Get("Accept"), "as=Table") ||
			in.Response == nil || in.Response.Status != 200 {
			continue
		}
		var l struct {
			Kind  string `json:"kind"`
			Items []struct {
				Metadata struct{ Name, Namespace string } `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(in.Body(), &l); err != nil || !strings.HasSuffix(l.Kind, "List") {
			continue
		}
		names := []string{}
		for _, it := range l.Items {
			names = append(names, strings.TrimPrefix(it.Metadata.Namespace+"/"+it.Metadata.Name, "/"))
		}
		lists[u.Path] = append(lists[u.Path], names...)
	}
	return lists
}

func mapKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestLiveFlightRecordingCopiedMidWayReplays follows the README's flight
// recorder steps after the cluster side: the parts of a record --all
// --max-size recording are copied while it still writes (as kubectl cp
// does), kwrec lint --fix ends the last one where the copy did, and kwrec
// serve replays them to kubectl, the recorded objects there.
func TestLiveFlightRecordingCopiedMidWayReplays(t *testing.T) {
	kubeconfig := allObjects(t)
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ready := make(chan struct{})
	var o bytes.Buffer
	e := &untilWriter{marker: "is recorded; watching", ready: sync.OnceFunc(func() { close(ready) })}
	done := make(chan int, 1)
	args := []string{"record", "--all", "--kubeconfig", kubeconfig, "--max-size", "200KB", "-o", filepath.Join(dir, "cluster.kwrec.zst")}
	go func() { done <- runContext(ctx, args, streams{strings.NewReader(""), &o, e}) }()
	select {
	case <-ready:
	case code := <-done:
		t.Fatalf("kwrec %s exited with %d before recording the initial state:\n%s%s", strings.Join(args, " "), code, o.String(), e.String())
	case <-time.After(2 * time.Minute):
		t.Fatalf("kwrec %s: no line saying the initial state is recorded within two minutes:\n%s", strings.Join(args, " "), e.String())
	}
	// The recorder flushes every second: copy (and repair the copy) until
	// the copy holds the lists, as one copying a while later would have.
	var pattern string
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(200 * time.Millisecond) {
		pattern = copyParts(t, dir)
		if code, stdout, stderr := kwrecIn(t, "lint", "--fix", pattern); code != 0 {
			t.Fatalf("kwrec lint --fix exited with %d:\n%s%s", code, stdout, stderr)
		}
		if code, stdout, stderr := kwrecIn(t, "lint", pattern); code != 0 {
			t.Fatalf("kwrec lint after --fix exited with %d:\n%s%s", code, stdout, stderr)
		}
		c, err := cassettes.Load(pattern)
		if err != nil {
			t.Fatal(err)
		}
		lists := recordedLists(t, c)
		_, cm := lists["/api/v1/configmaps"]
		_, deploy := lists["/apis/apps/v1/deployments"]
		_, widgets := lists["/apis/example.com/v1/widgets"]
		if cm && deploy && widgets {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the copied recording holds no lists of ConfigMaps, Deployments and Widgets within a minute; it has %s", strings.Join(mapKeys(lists), " "))
		}
	}
	cancel()
	if code := <-done; code != 0 {
		t.Fatalf("kwrec record exited with %d:\n%s", code, e.String())
	}

	kc := filepath.Join(t.TempDir(), "replay.kubeconfig")
	sctx, stop := context.WithCancel(context.Background())
	served := make(chan int, 1)
	var so, se bytes.Buffer
	go func() {
		served <- runContext(sctx, []string{"serve", pattern, "--kubeconfig-out", kc}, streams{strings.NewReader(""), &so, &se})
	}()
	defer func() {
		stop()
		if code := <-served; code != 0 {
			t.Errorf("kwrec serve exited with %d:\n%s", code, se.String())
		}
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(kc); err == nil && st.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kwrec serve wrote no kubeconfig within a minute")
		}
	}
	for _, tc := range []struct{ resource, want string }{
		{"configmaps", "settings"},
		{"deployments", "web"},
		{"widgets", "gadget"},
	} {
		out := kubectl(t, kc, "get", tc.resource, "-n", "kwrec-all", "-o", "name")
		if !strings.Contains(out, "/"+tc.want+"\n") {
			t.Errorf("kubectl get %s against the replay printed %q, want %s in it", tc.resource, out, tc.want)
		}
	}
}

// copyParts copies the parts of the recording in dir, as they are, into a
// new directory, as kubectl cp would, and returns their pattern there.
func copyParts(t *testing.T, dir string) string {
	t.Helper()
	parts, err := filepath.Glob(filepath.Join(dir, "cluster-*.kwrec.zst"))
	if err != nil || len(parts) < 2 {
		t.Fatalf("parts %q (%v), want at least two of about 200KB", parts, err)
	}
	copied := t.TempDir()
	for _, p := range parts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(copied, filepath.Base(p)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(copied, "cluster-*.kwrec.zst")
}
