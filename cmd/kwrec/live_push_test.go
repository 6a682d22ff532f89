package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/internal/timepoint"
)

// workloadControllers are the kube-controller-manager controllers the
// roots-only push relies on.
const workloadControllers = "deployment-controller,replicaset-controller,cronjob-controller,job-controller"

// recording is a kwrec record --all running in process.
type recording struct {
	out    string
	cancel context.CancelFunc
	done   chan int
	stderr *untilWriter
}

// startRecording starts kwrec record --all -o out with args against
// kubeconfig and returns once its initial state is recorded.
func startRecording(t *testing.T, kubeconfig, out string, args ...string) *recording {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	r := &recording{out: out, cancel: cancel, done: make(chan int, 1),
		stderr: &untilWriter{marker: "is recorded; watching", ready: sync1(func() { close(ready) })}}
	all := append([]string{"record", "--all", "--kubeconfig", kubeconfig, "-o", out}, args...)
	go func() { r.done <- runContext(ctx, all, streams{strings.NewReader(""), &bytes.Buffer{}, r.stderr}) }()
	select {
	case <-ready:
	case code := <-r.done:
		t.Fatalf("kwrec %s exited with %d before recording:\n%s", strings.Join(all, " "), code, r.stderr)
	case <-time.After(2 * time.Minute):
		cancel()
		t.Fatalf("kwrec %s: the initial state is not recorded after two minutes:\n%s", strings.Join(all, " "), r.stderr)
	}
	return r
}

// stop stops the recording and fails t unless it saved.
func (r *recording) stop(t *testing.T) {
	t.Helper()
	r.cancel()
	if code := <-r.done; code != 0 {
		t.Fatalf("kwrec record --all -o %s exited with %d:\n%s", r.out, code, r.stderr)
	}
}

// sync1 makes f safe to call more than once: it runs the first time.
func sync1(f func()) func() {
	done := false
	return func() {
		if !done {
			done = true
			f()
		}
	}
}

// pushKwrec runs kwrec push with args, returning its exit status and
// output.
func pushKwrec(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var o, e bytes.Buffer
	code = runContext(t.Context(), append([]string{"push"}, args...), streams{strings.NewReader(""), &o, &e})
	return code, o.String(), e.String()
}

// waitPods waits until namespace ns holds n Pods.
func waitPods(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string, n int) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		l, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == n, nil
	})
	if err != nil {
		t.Fatalf("namespace %s never held %d Pods: %v", ns, n, err)
	}
}

// makeState makes what the recording of cp starts with: the namespace
// shop, a CRD and a custom resource in shop (record --all watches the
// resources the server has when it starts).
func makeState(t *testing.T, cp *controlplanetest.ControlPlane) {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	makeCRD(t, cp)
	kubectl(t, cp.Kubeconfig, "apply", "-f", "testdata/push/widget.yaml")
}

// makeCRD makes the CRD of widgets.example.com and waits until it is
// established.
func makeCRD(t *testing.T, cp *controlplanetest.ControlPlane) {
	t.Helper()
	kubectl(t, cp.Kubeconfig, "apply", "-f", "testdata/all/crd.yaml")
	kubectl(t, cp.Kubeconfig, "wait", "--for", "condition=established", "--timeout", "60s", "crd/widgets.example.com")
}

// makeWorkload drives cp as the recording: a Deployment scaled
// 1 → 5 → 2, each step once the controllers have made its Pods, and a
// CronJob.
func makeWorkload(t *testing.T, cp *controlplanetest.ControlPlane) {
	t.Helper()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	const ns = "shop"
	labels := map[string]string{"app": "web"}
	pod := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}, RestartPolicy: corev1.RestartPolicyOnFailure}}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: pod}}
	d.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyAlways
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "nightly"},
		Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: pod}}}}
	if _, err := cs.BatchV1().CronJobs(ns).Create(ctx, cj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitPods(ctx, t, cs, ns, 1)
	for _, n := range []int32{5, 2} {
		time.Sleep(3 * time.Second) // the recorded pace: three seconds between steps
		s, err := cs.AppsV1().Deployments(ns).GetScale(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = n
		if _, err := cs.AppsV1().Deployments(ns).UpdateScale(ctx, "web", s, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		waitPods(ctx, t, cs, ns, int(n))
	}
	waitSettled(ctx, t, cs, ns)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, endMarker(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The end marker is a ConfigMap in shop that the workload makes last,
// once the controllers are done: a recording that holds it holds the
// whole workload (see [waitRecorded]). It is part of the recorded world:
// pushed as any ConfigMap (a root, no status), found by kwrec diff on
// both sides alike, and of a kind the counts leave out.
const (
	endMarkerName = "kwrec-test-marker"
	// endMarkerJSON is in the marker's JSON watch event and nowhere
	// else: the Table watches record --all keeps beside it carry no data.
	endMarkerJSON = `"data":{"kwrec-test":"end"}`
)

func endMarker() *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: endMarkerName}, Data: map[string]string{"kwrec-test": "end"}}
}

// waitSettled waits until the controllers are done with namespace ns:
// every Deployment and ReplicaSet has seen its last spec and counts its
// replicas as its spec asks. No write of theirs follows.
func waitSettled(ctx context.Context, t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		ds, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, d := range ds.Items {
			if d.Status.ObservedGeneration != d.Generation || d.Status.Replicas != *d.Spec.Replicas || d.Status.UpdatedReplicas != *d.Spec.Replicas {
				return false, nil
			}
		}
		rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, rs := range rss.Items {
			if rs.Status.ObservedGeneration != rs.Generation || rs.Status.Replicas != *rs.Spec.Replicas {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("the controllers never settled namespace %s: %v", ns, err)
	}
}

// waitRecorded waits until the recording being written at path holds
// the end marker's watch event. The recorder flushes every second; the
// marker is the last write of its recording, and the events before it,
// on other watches, reach the recorder within milliseconds of theirs:
// by the time the marker is on disk, they are in the recorder, which
// writes them when it stops.
func waitRecorded(ctx context.Context, t *testing.T, path string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		f, err := os.Open(path)
		if err != nil {
			return false, nil
		}
		defer f.Close()
		text, _, _ := cassettes.ReadText(f)
		return bytes.Contains(text, []byte(endMarkerJSON)), nil
	})
	if err != nil {
		t.Fatalf("%s never recorded the ConfigMap %s: %v", path, endMarkerName, err)
	}
}

// census reads a recording whole as a census.
func census(t *testing.T, path string) (*push.Census, *cut.Script, *cut.Recording) {
	t.Helper()
	rec, err := cut.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rec.Script(timepoint.Point{}, timepoint.Point{})
	if err != nil {
		t.Fatal(err)
	}
	return push.NewCensus(s), s, rec
}

// TestLivePush pushes one recording of a control plane with the
// workload controllers (a Deployment scaled 1 → 5 → 2 and a CronJob)
// into fresh control planes: roots only into one with the controllers,
// everything into one without, and faulty pushes.
func TestLivePush(t *testing.T) {
	src := controlplanetest.Start(t)
	src.StartControllers(t, workloadControllers)
	makeState(t, src)
	dir := t.TempDir()
	source, sourceShop := filepath.Join(dir, "source.kwrec"), filepath.Join(dir, "source-shop.kwrec")
	rec := startRecording(t, src.Kubeconfig, source)
	recShop := startRecording(t, src.Kubeconfig, sourceShop, "-n", "shop") // for kwrec diff: the namespace alone
	makeWorkload(t, src)
	waitRecorded(t.Context(), t, source)
	waitRecorded(t.Context(), t, sourceShop)
	rec.stop(t)
	recShop.stop(t)

	t.Run("roots only: the target's controllers make the ReplicaSets and Pods, counted as recorded at each change", func(t *testing.T) {
		tgt := controlplanetest.Start(t)
		tgt.StartControllers(t, workloadControllers)
		out := filepath.Join(t.TempDir(), "target.kwrec")
		code, stdout, stderr := pushKwrec(t, source, "--kubeconfig", tgt.Kubeconfig, "--speed", "1", "-o", out, "--settle", "3s")
		if code != 0 {
			t.Fatalf("kwrec push exited with %d:\n%s%s", code, stdout, stderr)
		}
		if !strings.Contains(stderr, "errors: none") {
			t.Errorf("the push was refused writes:\n%s", stderr)
		}
		want, ws, _ := census(t, source)
		got, _, trec := census(t, out)
		offset, lag := pushTiming(t, stderr, trec)
		// The recording settles between two changes of the roots (a
		// Deployment created or scaled, a CronJob created): the count
		// just before the next must be on the target between the first
		// and the next, within the lag. Counts on the way (5 Pods, 4, 3,
		// 2 as a ReplicaSet scales down) are the controllers' pace, not
		// the recording's.
		points := rootChanges(t, ws)
		for i, at := range points {
			next := ws.Span
			if i+1 < len(points) {
				next = points[i+1]
			}
			w := want.At(next - time.Nanosecond)
			for _, kind := range []string{"Deployment", "ReplicaSet", "Pod", "CronJob"} {
				if !reaches(got, kind, w[kind], offset+at, offset+next+lag) {
					t.Errorf("from %v to %v the recording settles at %d %s; the target never holds that many from %v to %v",
						at, next, w[kind], kind, offset+at, offset+next+lag)
				}
			}
		}
		t.Logf("kwrec push:\n%s", stderr)
	})

	full := controlplanetest.Start(t) // no controllers
	t.Run("all: a target without controllers ends in the recorded state, and kwrec diff finds only server-set fields", func(t *testing.T) {
		// record --all watches what the server serves when it starts: the
		// CRD is made first so that the recording of the target holds
		// the widgets. The push leaves it out.
		makeCRD(t, full)
		out := filepath.Join(t.TempDir(), "target-shop.kwrec")
		rec := startRecording(t, full.Kubeconfig, out, "-n", "shop")
		code, stdout, stderr := pushKwrec(t, source, "--kubeconfig", full.Kubeconfig, "--all", "--speed", "0",
			"--exclude", "customresourcedefinitions.apiextensions.k8s.io")
		if code != 0 || !strings.Contains(stderr, "errors: none") {
			t.Fatalf("kwrec push --all exited with %d:\n%s%s", code, stdout, stderr)
		}
		// The push made the source's end marker last.
		waitRecorded(t.Context(), t, out)
		rec.stop(t)
		var o, e bytes.Buffer
		args := []string{"diff", "--ignore", ".metadata.ownerReferences[].uid", sourceShop, out}
		if code := runContext(t.Context(), args, streams{strings.NewReader(""), &o, &e}); code != 0 {
			t.Errorf("kwrec %s exited with %d:\n%s%s", strings.Join(args, " "), code, o.String(), e.String())
		}
		want, _, _ := census(t, source)
		got, gs, _ := census(t, out)
		w, g := want.At(time.Hour), got.At(gs.Span)
		for _, kind := range []string{"Deployment", "ReplicaSet", "Pod", "CronJob", "Widget"} {
			if w[kind] != g[kind] {
				t.Errorf("the target ends with %d %s, the recording with %d", g[kind], kind, w[kind])
			}
		}
	})

	t.Run("a target that already holds the objects: --on-error stop stops at the first", func(t *testing.T) {
		code, _, stderr := pushKwrec(t, source, "--kubeconfig", full.Kubeconfig, "--all", "--speed", "0", "--on-error", "stop",
			"--exclude", "customresourcedefinitions.apiextensions.k8s.io")
		const want = `kwrec: the target refused a write: create namespaces shop: namespaces "shop" already exists (--on-error skip pushes on past refusals)`
		if code != 1 || !slices.Contains(strings.Split(stderr, "\n"), want) {
			t.Errorf("kwrec push --on-error stop exited with %d, want 1 and the line %q:\n%s", code, want, stderr)
		}
		if n := strings.Count(stderr, "kwrec: push: refused: "); n != 1 {
			t.Errorf("%d refusals named, want 1:\n%s", n, stderr)
		}
	})

	t.Run("a target that already holds the objects: --on-error skip names and counts each", func(t *testing.T) {
		code, _, stderr := pushKwrec(t, source, "--kubeconfig", full.Kubeconfig, "--all", "--speed", "0",
			"--exclude", "customresourcedefinitions.apiextensions.k8s.io")
		if code != 0 {
			t.Errorf("kwrec push --on-error skip exited with %d, want 0:\n%s", code, stderr)
		}
		for _, want := range []string{
			`kwrec: push: refused: create namespaces shop: AlreadyExists: namespaces "shop" already exists`,
			`kwrec: push: refused: create widgets.example.com shop/gadget: AlreadyExists: widgets.example.com "gadget" already exists`,
		} {
			if !slices.Contains(strings.Split(stderr, "\n"), want) {
				t.Errorf("stderr has no line %q:\n%s", want, stderr)
			}
		}
	})

	t.Run("a name the target forbids: the object is named and skipped, or the push stops there", func(t *testing.T) {
		// The CronJob renamed Nightly: kube-apiserver's validation of
		// names refuses uppercase. The Widgets are left out (the target
		// has no CRD of them, the test above).
		edited := withName(t, source, "nightly", "Nightly")
		tgt := controlplanetest.Start(t)
		cs := kubernetes.NewForConfigOrDie(tgt.Config)
		want, _, _ := census(t, source)
		end := want.At(time.Hour)
		const invalid = `CronJob.batch "Nightly" is invalid: metadata.name: Invalid value: "Nightly": a lowercase RFC 1123 subdomain must ` +
			`consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character ` +
			`(e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`
		for _, tc := range []struct {
			name, onError string
			code          int
			lines         []string
			// rest is whether what the recording makes after the
			// CronJob is on the target: every other object, the end
			// marker last.
			rest bool
		}{
			{name: "--on-error skip names the CronJob, counts it, and pushes everything after it", onError: "skip", code: 0,
				lines: []string{
					`kwrec: push: refused: create cronjobs.batch skip/Nightly: Invalid: ` + invalid,
				},
				rest: true},
			{name: "--on-error stop ends the push at the CronJob with the target's refusal", onError: "stop", code: 1,
				lines: []string{
					`kwrec: push: refused: create cronjobs.batch stop/Nightly: Invalid: ` + invalid,
					`kwrec: the target refused a write: create cronjobs.batch stop/Nightly: ` + invalid + ` (--on-error skip pushes on past refusals)`,
				},
				rest: false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				ns := tc.onError
				code, _, stderr := pushKwrec(t, edited, "--kubeconfig", tgt.Kubeconfig, "--all", "--speed", "0", "--on-error", tc.onError,
					"--namespace-map", "shop="+ns, "--exclude", "customresourcedefinitions.apiextensions.k8s.io,widgets.example.com")
				if code != tc.code {
					t.Errorf("kwrec push --on-error %s exited with %d, want %d:\n%s", tc.onError, code, tc.code, stderr)
				}
				for _, l := range tc.lines {
					if !slices.Contains(strings.Split(stderr, "\n"), l) {
						t.Errorf("stderr has no line %q:\n%s", l, stderr)
					}
				}
				if n := strings.Count(stderr, "kwrec: push: refused: "); n != 1 || !strings.Contains(stderr, "errors: Invalid 1\n") {
					t.Errorf("%d refusals named, want 1, counted as Invalid:\n%s", n, stderr)
				}
				m := regexp.MustCompile(`kwrec: push: (?:stopped: )?pushed (\d+) of (\d+) write`).FindStringSubmatch(stderr)
				if m == nil {
					t.Fatalf("no summary on stderr:\n%s", stderr)
				}
				if pushed, total := atoi(t, m[1]), atoi(t, m[2]); tc.rest && pushed != total-1 {
					t.Errorf("pushed %d of %d writes, want all but the CronJob", pushed, total)
				}
				ctx := t.Context()
				if _, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
					t.Errorf("the Deployment, made before the CronJob, is not on the target: %v", err)
				}
				_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, endMarkerName, metav1.GetOptions{})
				if tc.rest != (err == nil) {
					t.Errorf("the end marker, the recording's last change, is on the target: %v, want %v (%v)", err == nil, tc.rest, err)
				}
				if !tc.rest {
					return
				}
				deploys, err := cs.AppsV1().Deployments(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				rss, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				cjs, err := cs.BatchV1().CronJobs(ns).List(ctx, metav1.ListOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got := map[string]int{"Deployment": len(deploys.Items), "ReplicaSet": len(rss.Items), "Pod": len(pods.Items), "CronJob": len(cjs.Items)}
				wantEnd := map[string]int{"Deployment": end["Deployment"], "ReplicaSet": end["ReplicaSet"], "Pod": end["Pod"], "CronJob": end["CronJob"] - 1}
				if diff := cmp.Diff(wantEnd, got); diff != "" {
					t.Errorf("the target's objects by kind, the recording's end but the CronJob (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("a missing CRD: its custom resource is named and skipped, nothing after it lost", func(t *testing.T) {
		tgt := controlplanetest.Start(t)
		code, _, stderr := pushKwrec(t, source, "--kubeconfig", tgt.Kubeconfig, "--all", "--speed", "0",
			"--exclude", "customresourcedefinitions.apiextensions.k8s.io")
		if code != 0 {
			t.Errorf("kwrec push exited with %d, want 0:\n%s", code, stderr)
		}
		const refused = `kwrec: push: refused: create widgets.example.com shop/gadget: NotFound: the server could not find the requested resource`
		if !slices.Contains(strings.Split(stderr, "\n"), refused) || !strings.Contains(stderr, "errors: NotFound 1\n") {
			t.Errorf("stderr does not name the one refusal %q:\n%s", refused, stderr)
		}
		cs := kubernetes.NewForConfigOrDie(tgt.Config)
		waitPods(t.Context(), t, cs, "shop", 2)
		if _, err := cs.BatchV1().CronJobs("shop").Get(t.Context(), "nightly", metav1.GetOptions{}); err != nil {
			t.Errorf("the CronJob, pushed after the refusal, is not on the target: %v", err)
		}
	})
}

// withName copies the plain recording at path with each object named
// old named to instead, and returns the copy's path: a recording edited
// (as kwrec edit would) to hold what a real server would not.
func withName(t *testing.T, path, old, to string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`"name":\s*"` + regexp.QuoteMeta(old) + `"`)
	if !re.Match(b) {
		t.Fatalf("%s names no object %s", path, old)
	}
	out := filepath.Join(t.TempDir(), "edited.kwrec")
	if err := os.WriteFile(out, re.ReplaceAll(b, []byte(`"name":"`+to+`"`)), 0o644); err != nil {
		t.Fatal(err)
	}
	return out
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// rootChanges returns when s records a Deployment created or scaled:
// the steps of the workload, three seconds apart.
func rootChanges(t *testing.T, s *cut.Script) []time.Duration {
	t.Helper()
	var out []time.Duration
	replicas := map[string]int64{}
	for _, c := range s.Changes {
		var u unstructured.Unstructured
		if err := u.UnmarshalJSON(c.JSON); err != nil {
			t.Fatal(err)
		}
		switch k := u.GetKind(); {
		case k == "CronJob" && c.Type == "ADDED":
			// Made with the Deployment: one step of the workload.
		case k == "Deployment":
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			if old, ok := replicas[u.GetName()]; !ok || old != n {
				out = append(out, c.At)
			}
			replicas[u.GetName()] = n
		}
	}
	if len(out) != 3 {
		t.Fatalf("the recording holds %d creations and scalings of Deployments, want 3 (one created, scaled twice): %v", len(out), out)
	}
	return out
}

// pushTiming returns, from push's stderr and the recording of the
// target, when the window's start is on the target's recording, and the
// lag the counts are compared within: the push's p99 lateness plus the
// two seconds the target's controllers take to act.
func pushTiming(t *testing.T, stderr string, trec *cut.Recording) (offset, lag time.Duration) {
	t.Helper()
	var ts string
	for _, l := range strings.Split(stderr, "\n") {
		if s, ok := strings.CutPrefix(l, "kwrec: push: changes from "); ok {
			ts = s
		}
	}
	at, err := time.Parse(time.RFC3339Nano, ts)
	if err != nil {
		t.Fatalf("push's stderr says not when the changes began (%v):\n%s", err, stderr)
	}
	return at.Sub(trec.Header.RecordedAt), 2 * time.Second
}

// reaches reports whether c counts n objects of kind at some time from
// `from` to `to`: at either end, or just after a change in between.
func reaches(c *push.Census, kind string, n int, from, to time.Duration) bool {
	times := []time.Duration{from, to}
	for _, d := range c.Times() {
		if d >= from && d <= to {
			times = append(times, d)
		}
	}
	return slices.ContainsFunc(times, func(d time.Duration) bool { return c.At(d)[kind] == n })
}
