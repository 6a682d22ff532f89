package e2e_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// writesNamespace is where the writes scenario runs, live and replayed.
const writesNamespace = "e2e-writes"

// writeStep is one kubectl command of [writeScript].
type writeStep struct {
	// args follow `kubectl -n NAMESPACE`.
	args []string
	// keep names a placeholder that the command's stdout fills in the
	// manifests of later steps; the stdout compared is the placeholder.
	keep string
}

// scriptManifests are the files the script applies and replaces, written
// to the directory kubectl runs in so that its messages name them alike.
// $RV_A is the resourceVersion of cm-a kept before the patches.
var scriptManifests = map[string]string{
	"app.yaml":     cmManifest("cm-app", "", `k: "1"`),
	"app2.yaml":    cmManifest("cm-app", "", `k: "2"`, `extra: "x"`),
	"ssa.yaml":     cmManifest("cm-ssa", "", `k: "1"`, `mine: "kubectl"`),
	"ssa2.yaml":    cmManifest("cm-ssa", "", `k: "2"`),
	"ssa-a.yaml":   cmManifest("cm-a", "", `v: "9"`),
	"stale.yaml":   cmManifest("cm-a", "$RV_A", `v: "stale"`),
	"replace.yaml": cmManifest("cm-a", "", `v: "replaced"`),
	"csr.yaml": `apiVersion: certificates.k8s.io/v1
kind: CertificateSigningRequest
metadata:
  name: csr-e2e
spec:
  signerName: example.com/e2e
  usages: ["digital signature"]
  request: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlISE1IQUNBUUF3RGpFTU1Bb0dBMVVFQXd3RFpUSmxNRmt3RXdZSEtvWkl6ajBDQVFZSUtvWkl6ajBEQVFjRApRZ0FFUTNGUnhIWTRmejVrWGNVbWdLY25xenBhQTRiYUthRE82dkxwRGo3cFQ3QXVIUVhNdkF2UGxLR0xReS9nCmt3OE1kMjFSNVZMdG5Cd0tkK1lFVjVBeTdhQUFNQW9HQ0NxR1NNNDlCQU1DQTBjQU1FUUNJQUhJOGRTTGpzUDUKbXpadVVaM2tRTnVMTk1wbkh4UTVDMUpGdVdqelFZRHlBaUJKcnFZZ01jQVprWEVHRm8yeExzRm5DZW13RXpJSgppV1BsSVRRZFlIN0NuZz09Ci0tLS0tRU5EIENFUlRJRklDQVRFIFJFUVVFU1QtLS0tLQo=
`,
}

func cmManifest(name, rv string, data ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n", name)
	if rv != "" {
		fmt.Fprintf(&b, "  resourceVersion: %q\n", rv)
	}
	b.WriteString("data:\n")
	for _, d := range data {
		b.WriteString("  " + d + "\n")
	}
	return b.String()
}

// writeScript is what the test runs live and through kwrec serve --writes
// overlay, at the recording's final state (cm-a, cm-c): every kind of
// write kubectl makes, the API server's refusals, and a read of the data
// after each change. It ends by creating zz-end, the watcher's cue.
var writeScript = []writeStep{
	{args: []string{"create", "configmap", "cm-new", "--from-literal=k=v1"}},
	{args: []string{"get", "cm", "cm-new", "-o", "jsonpath={.data}"}},
	{args: []string{"create", "configmap", "cm-new", "--from-literal=k=v2"}},

	{args: []string{"apply", "-f", "app.yaml"}},
	{args: []string{"get", "cm", "cm-app", "-o", "jsonpath={.data}"}},
	{args: []string{"apply", "-f", "app2.yaml"}},
	{args: []string{"apply", "-f", "app2.yaml"}},
	{args: []string{"get", "cm", "cm-app", "-o", "jsonpath={.data}"}},

	{args: []string{"apply", "--server-side", "-f", "ssa.yaml"}},
	{args: []string{"get", "cm", "cm-ssa", "-o", "jsonpath={.data}"}},
	{args: []string{"apply", "--server-side", "--field-manager", "other", "-f", "ssa2.yaml"}},
	{args: []string{"get", "cm", "cm-ssa", "-o", "jsonpath={.data}"}},
	{args: []string{"apply", "--server-side", "--field-manager", "other", "--force-conflicts", "-f", "ssa2.yaml"}},
	{args: []string{"get", "cm", "cm-ssa", "-o", "jsonpath={.data}"}},
	{args: []string{"get", "cm", "cm-ssa", "-o", "jsonpath={range .metadata.managedFields[*]}{.manager} {.operation} {.fieldsV1}{\"\\n\"}{end}"}},
	{args: []string{"apply", "--server-side", "-f", "ssa-a.yaml"}},

	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.metadata.resourceVersion}"}, keep: "$RV_A"},
	{args: []string{"patch", "cm", "cm-a", "--type", "merge", "-p", `{"data":{"m":"merge"}}`}},
	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.data}"}},
	{args: []string{"patch", "cm", "cm-a", "--type", "strategic", "-p", `{"metadata":{"labels":{"patched":"yes"}},"data":{"s":"strategic"}}`}},
	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.data} {.metadata.labels}"}},
	{args: []string{"patch", "cm", "cm-a", "--type", "json", "-p", `[{"op":"replace","path":"/data/v","value":"3"},{"op":"remove","path":"/data/m"}]`}},
	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.data}"}},
	{args: []string{"patch", "cm", "cm-a", "--type", "json", "-p", `[{"op":"test","path":"/data/v","value":"nope"}]`}},
	{args: []string{"patch", "cm", "cm-a", "--type", "merge", "-p", `{"data":{"s":"strategic"}}`}},
	{args: []string{"replace", "-f", "stale.yaml"}},
	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.data}"}},
	{args: []string{"replace", "-f", "replace.yaml"}},
	{args: []string{"get", "cm", "cm-a", "-o", "jsonpath={.data} {.metadata.labels}"}},

	{args: []string{"get", "cm", "cm-app", "-o", "yaml", "--show-managed-fields"}},
	{args: []string{"get", "cm", "cm-ssa", "-o", "yaml", "--show-managed-fields"}},
	{args: []string{"get", "cm", "cm-a", "-o", "yaml", "--show-managed-fields"}},

	{args: []string{"delete", "configmap", "cm-new"}},
	// On a 404 kubectl gets the namespace, to say which is missing.
	{args: []string{"get", "cm", "cm-new", "-o", "jsonpath={.data}"}},
	{args: []string{"delete", "configmap", "cm-c"}},
	{args: []string{"delete", "configmap", "cm-gone", "--ignore-not-found"}},
	{args: []string{"delete", "configmap", "cm-gone"}},
	{args: []string{"get", "cm", "-o", "name"}},
	// Server-side printing: the DATA column comes from the server's Table.
	{args: []string{"get", "cm"}},

	// A delete by label selector.
	{args: []string{"label", "cm", "cm-app", "tier=x"}},
	{args: []string{"delete", "cm", "-l", "tier=x"}},
	{args: []string{"get", "cm", "-l", "tier=x"}},

	// A resource the recording never saw, and its scale subresource.
	{args: []string{"create", "deployment", "web", "--image=busybox:1.36"}},
	{args: []string{"scale", "deployment", "web", "--replicas=3"}},
	{args: []string{"get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.metadata.generation}"}},
	{args: []string{"scale", "deployment", "web", "--replicas=2", "--current-replicas=5"}},
	{args: []string{"scale", "deployment", "web", "--replicas=1", "--current-replicas=3"}},
	{args: []string{"get", "deployment", "web", "-o", "jsonpath={.spec.replicas} {.spec.template.spec.containers[0].imagePullPolicy}"}},
	{args: []string{"delete", "deployment", "web"}},
	// A cluster-scoped resource and its approval subresource.
	{args: []string{"create", "-f", "csr.yaml"}},
	{args: []string{"certificate", "approve", "csr-e2e"}},
	{args: []string{"get", "csr", "csr-e2e", "-o", "jsonpath={.status.conditions[0].type} {.status.conditions[0].reason}"}},
	{args: []string{"certificate", "approve", "csr-e2e"}},
	{args: []string{"delete", "csr", "csr-e2e"}},

	{args: []string{"create", "configmap", "zz-end"}},
}

// kubectlRun is what one kubectl command did.
type kubectlRun struct {
	Exit           int
	Stdout, Stderr string
}

// TestLiveKubectlWritesThroughTheOverlayAsLive records a namespace's
// ConfigMaps being created, changed and deleted, then runs [writeScript]
// twice: live, right after the recording (so the live world is the
// recording's final state), and through `kwrec serve --writes overlay` of
// the cassette, once a watcher there has read the whole recording. Each
// command's exit status, stdout and stderr must be the live ones, with
// resourceVersions, uids, timestamps, ages and the server address aside;
// a concurrent `kubectl get -w --output-watch-events` there must print
// the script's events as live; --writes-out must keep every write applied;
// and kwrec serve's default strict mode must refuse a write with
// ErrNoMatch's text.
func TestLiveKubectlWritesThroughTheOverlayAsLive(t *testing.T) {
	start := time.Now()
	kwrec := buildKwrec(t)
	cp := controlplanetest.Start(t)
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cassette := filepath.Join(t.TempDir(), "writes.kwrec.zst")
	recordWritesScenario(t, ctx, cs, kwrec, cp.Kubeconfig, cassette)
	t.Logf("recorded in %v", time.Since(start).Round(time.Millisecond))

	dir := t.TempDir()
	// The live watcher lists the recording's final state.
	live, liveWatch := runWriteScript(t, ctx, dir, cp.Kubeconfig, []string{
		"ADDED configmap/cm-a", "ADDED configmap/cm-c"})
	t.Logf("live script done at %v", time.Since(start).Round(time.Millisecond))

	fx := &fixtures{kwrec: kwrec}
	writesOut := filepath.Join(t.TempDir(), "writes.kwrec")
	s := serve(t, fx, cassette, "--writes", "overlay", "--writes-out", writesOut)
	// The replay's watcher lists the recording's first state and reads
	// its changes: the script then starts at the recording's final state.
	replayed, replayedWatch := runWriteScript(t, ctx, dir, s.Kubeconfig, []string{
		"ADDED configmap/cm-a", "ADDED configmap/cm-b",
		"ADDED configmap/cm-c", "MODIFIED configmap/cm-a", "DELETED configmap/cm-b"})
	if stderr := s.Stop(t); strings.TrimSpace(stderr) != "" {
		t.Logf("kwrec serve --writes overlay stderr:\n%s", stderr)
	}
	t.Logf("replayed script done at %v", time.Since(start).Round(time.Millisecond))

	for i, step := range writeScript {
		t.Run(fmt.Sprintf("%02d kubectl %s", i+1, strings.Join(step.args, " ")), func(t *testing.T) {
			if d := cmp.Diff(live[i], replayed[i]); d != "" {
				t.Errorf("kubectl -n %s %s (-live +replayed):\n%s", writesNamespace, strings.Join(step.args, " "), d)
			}
		})
	}

	t.Run("the overlay's watcher prints the live events of the script", func(t *testing.T) {
		if d := cmp.Diff(liveWatch, replayedWatch); d != "" {
			t.Errorf("kubectl get configmaps -w --output-watch-events, the script's events (-live +replayed):\n%s", d)
		}
		for _, want := range []string{
			"ADDED configmap/cm-new", "ADDED configmap/cm-app", "MODIFIED configmap/cm-app",
			"ADDED configmap/cm-ssa", "MODIFIED configmap/cm-ssa", "MODIFIED configmap/cm-a",
			"DELETED configmap/cm-new", "DELETED configmap/cm-c", "ADDED configmap/zz-end",
		} {
			if !containsLine(replayedWatch, want) {
				t.Errorf("the overlay's watcher printed no %q; it printed:\n%s", want, strings.Join(replayedWatch, "\n"))
			}
		}
	})

	t.Run("kwrec show lists the writes kept by --writes-out", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, kwrec, "show", writesOut).CombinedOutput()
		if err != nil {
			t.Fatalf("kwrec show %s: %v\n%s", writesOut, err, out)
		}
		// Every write applied, in order; refused ones (409, the apply
		// conflict, the failed json patch test) and no-op ones are not
		// applied.
		cms := "/api/v1/namespaces/" + writesNamespace + "/configmaps"
		deps := "/apis/apps/v1/namespaces/" + writesNamespace + "/deployments"
		csrs := "/apis/certificates.k8s.io/v1/certificatesigningrequests"
		want := []string{
			"POST " + cms + " kubectl-create",
			"POST " + cms + " kubectl-client-side-apply",
			"PATCH " + cms + "/cm-app kubectl-client-side-apply",
			"PATCH " + cms + "/cm-ssa kubectl",
			"PATCH " + cms + "/cm-ssa other force",
			"PATCH " + cms + "/cm-a kubectl-patch",
			"PATCH " + cms + "/cm-a kubectl-patch",
			"PATCH " + cms + "/cm-a kubectl-patch",
			"PUT " + cms + "/cm-a kubectl-replace",
			"DELETE " + cms + "/cm-new",
			"DELETE " + cms + "/cm-c",
			"PATCH " + cms + "/cm-app kubectl-label",
			"DELETE " + cms + "/cm-app",
			"POST " + deps + " kubectl-create",
			// kubectl scale: a patch, then with --current-replicas an
			// update carrying the resourceVersion it checked (the failed
			// precondition writes nothing).
			"PATCH " + deps + "/web/scale",
			"PUT " + deps + "/web/scale",
			"DELETE " + deps + "/web",
			"POST " + csrs + " kubectl-create",
			// The second approve finds it approved and writes nothing.
			"PUT " + csrs + "/csr-e2e/approval",
			"DELETE " + csrs + "/csr-e2e",
			"POST " + cms + " kubectl-create",
		}
		if d := cmp.Diff(want, shownWrites(t, string(out))); d != "" {
			t.Errorf("the writes kwrec show lists (-want +got):\n%s\nkwrec show %s printed:\n%s", d, filepath.Base(writesOut), out)
		}
	})

	t.Run("strict mode refuses a write the recording does not hold", func(t *testing.T) {
		s := serve(t, fx, cassette)
		got := runKubectlStatus(ctx, dir, s.Kubeconfig, "delete", "configmap", "cm-a", "--ignore-not-found")
		if got.Exit == 0 || !strings.Contains(got.Stderr, replay.ErrNoMatch.Error()) {
			t.Errorf("kubectl delete configmap cm-a --ignore-not-found through kwrec serve (strict) = %+v, want a non-zero exit and %q on stderr",
				got, replay.ErrNoMatch.Error())
		}
	})
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}

// buildKwrec builds the kwrec binary into a temporary directory of t.
func buildKwrec(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kwrec")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/kwrec/kwrec/cmd/kwrec").CombinedOutput(); err != nil {
		t.Fatalf("building kwrec: %v\n%s", err, out)
	}
	return bin
}

// recordWritesScenario records [writesNamespace]'s ConfigMaps with `kwrec
// record configmaps` into cassette: cm-a and cm-b exist before; during the
// recording cm-c is created, cm-a updated and cm-b deleted.
func recordWritesScenario(t *testing.T, ctx context.Context, cs kubernetes.Interface, kwrec, kubeconfig, cassette string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: writesNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cm-a", "cm-b"} {
		if err := createCM(ctx, cs, writesNamespace, name); err != nil {
			t.Fatal(err)
		}
	}
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, kwrec, "record", "configmaps", "-n", writesNamespace, "--duration", "60s", "-o", cassette, "--kubeconfig", kubeconfig)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kwrec record prints nothing once its watch is open: give it time to
	// record discovery, list and watch.
	time.Sleep(3 * time.Second)
	cms := cs.CoreV1().ConfigMaps(writesNamespace)
	err := func() error {
		if err := createCM(ctx, cs, writesNamespace, "cm-c"); err != nil {
			return err
		}
		cm, err := cms.Get(ctx, "cm-a", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["v"] = "2"
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			return err
		}
		return cms.Delete(ctx, "cm-b", metav1.DeleteOptions{})
	}()
	// Let the last event reach the recorder, then stop it.
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	werr := cmd.Wait()
	if err != nil {
		t.Fatalf("the recorded changes: %v", err)
	}
	if werr != nil {
		t.Fatalf("kwrec record: %v\n%s", werr, stderr.String())
	}
}

// watchFormat prints a watch event as "TYPE configmap/NAME", the event type
// -o name leaves out.
const watchFormat = `jsonpath={.type} configmap/{.object.metadata.name}{"\n"}`

// runWriteScript runs [writeScript] in dir against kubeconfig, with
// `kubectl get configmaps -w --output-watch-events` watching from before
// the first command until it prints zz-end's creation. The script starts
// once the watcher has printed prefix, the state it starts at (a different
// prefix fails t). It returns each command's normalized run and the lines
// the watcher printed after the prefix.
func runWriteScript(t *testing.T, ctx context.Context, dir, kubeconfig string, prefix []string) ([]kubectlRun, []string) {
	t.Helper()
	watchCtx, stopWatch := context.WithTimeout(ctx, time.Minute)
	w := kubectlCmd(watchCtx, kubeconfig, "get", "configmaps", "-n", writesNamespace, "-w", "--output-watch-events", "-o", watchFormat)
	var watchOut, watchErr syncBuffer
	w.Stdout, w.Stderr = &watchOut, &watchErr
	if err := w.Start(); err != nil {
		stopWatch()
		t.Fatal(err)
	}
	defer func() {
		stopWatch()
		w.Wait()
	}()
	lines := func() []string { return strings.Split(strings.TrimRight(watchOut.String(), "\n"), "\n") }
	waitFor := func(what string, done func() bool) {
		for !done() {
			select {
			case <-watchCtx.Done():
				t.Fatalf("kubectl get -w printed no %s; stdout:\n%s\nstderr:\n%s", what, watchOut.String(), watchErr.String())
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	waitFor(fmt.Sprintf("%d lines", len(prefix)), func() bool { return strings.Count(watchOut.String(), "\n") >= len(prefix) })
	if d := cmp.Diff(prefix, lines()); d != "" {
		t.Fatalf("kubectl get -w before the script (-want +got):\n%s", d)
	}

	kept := map[string]string{}
	writeManifests(t, dir, kept)
	runs := make([]kubectlRun, len(writeScript))
	for i, step := range writeScript {
		r := runKubectlStatus(ctx, dir, kubeconfig, append([]string{"-n", writesNamespace}, step.args...)...)
		runs[i] = normalizeRun(r)
		if step.keep != "" {
			kept[step.keep] = r.Stdout
			runs[i].Stdout = step.keep
			writeManifests(t, dir, kept)
		}
	}
	waitFor("ADDED configmap/zz-end", func() bool { return containsLine(lines(), "ADDED configmap/zz-end") })
	return runs, lines()[len(prefix):]
}

// writeManifests writes [scriptManifests] into dir, placeholders replaced
// by their kept values.
func writeManifests(t *testing.T, dir string, kept map[string]string) {
	t.Helper()
	for name, text := range scriptManifests {
		for k, v := range kept {
			text = strings.ReplaceAll(text, k, v)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runKubectlStatus runs kubectl in dir and returns its exit status and
// output, whatever the status.
func runKubectlStatus(ctx context.Context, dir, kubeconfig string, args ...string) kubectlRun {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	cmd := kubectlCmd(ctx, kubeconfig, args...)
	cmd.Dir = dir
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := kubectlRun{}
	if err := cmd.Run(); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			r.Exit, r.Stderr = -1, err.Error()
			return r
		}
		r.Exit = ee.ExitCode()
	}
	r.Stdout, r.Stderr = stdout.String(), stderr.String()
	return r
}

// What legitimately differs between the live server and the replay: the
// replay's resourceVersions are the recorded ones times 1000 and its writes
// have their own uids and times.
var (
	rvField    = regexp.MustCompile(`(resourceVersion"?: ?)"\d+"`)
	uids       = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	timestamps = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z`)
	serverURL  = regexp.MustCompile(`https://127\.0\.0\.1:\d+`)
)

// normalizeRun sets aside in r what legitimately differs (see above), and
// ages.
func normalizeRun(r kubectlRun) kubectlRun {
	n := func(s string) string {
		s = rvField.ReplaceAllString(s, `${1}"<rv>"`)
		s = uids.ReplaceAllString(s, "<uid>")
		s = timestamps.ReplaceAllString(s, "<time>")
		s = serverURL.ReplaceAllString(s, "<server>")
		return agesAside(s)
	}
	return kubectlRun{Exit: r.Exit, Stdout: n(r.Stdout), Stderr: n(r.Stderr)}
}

// shownRequest matches a request line of kwrec show.
var shownRequest = regexp.MustCompile(`#\d+\s+(POST|PUT|PATCH|DELETE) (\S+)$`)

// shownWrites returns the requests kwrec show printed as "METHOD PATH
// FIELDMANAGER", with " force" for a forced apply.
func shownWrites(t *testing.T, show string) []string {
	var ws []string
	for _, line := range strings.Split(show, "\n") {
		m := shownRequest.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		u, err := url.Parse(m[2])
		if err != nil {
			t.Errorf("kwrec show: %q: %v", line, err)
			continue
		}
		w := strings.TrimSpace(m[1] + " " + u.Path + " " + u.Query().Get("fieldManager"))
		if u.Query().Get("force") == "true" {
			w += " force"
		}
		ws = append(ws, w)
	}
	return ws
}

func containsLine(lines []string, want string) bool {
	for _, l := range lines {
		if l == want {
			return true
		}
	}
	return false
}
