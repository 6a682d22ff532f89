package main

import (
	"bytes"
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

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

// makeWorkload drives cp as the recording: a Deployment scaled
// 1 → 5 → 2, each step once the controllers have made its Pods, and a
// CronJob.
func makeWorkload(t *testing.T, cp *controlplanetest.ControlPlane) {
	t.Helper()
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	const ns = "shop"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
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
		time.Sleep(time.Second) // the recorded pace: a second between steps
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
	time.Sleep(time.Second) // the recorder's watches deliver the last events
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
	dir := t.TempDir()
	source := filepath.Join(dir, "source.kwrec")
	rec := startRecording(t, src.Kubeconfig, source)
	makeWorkload(t, src)
	rec.stop(t)

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
}

// rootChanges returns when s records a Deployment or CronJob created or
// a Deployment scaled.
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
			out = append(out, c.At)
		case k == "Deployment":
			n, _, _ := unstructured.NestedInt64(u.Object, "spec", "replicas")
			if old, ok := replicas[u.GetName()]; !ok || old != n {
				out = append(out, c.At)
			}
			replicas[u.GetName()] = n
		}
	}
	if len(out) != 4 {
		t.Fatalf("the recording holds %d creations and scalings of roots, want 4 (a Deployment created, scaled twice, a CronJob created): %v", len(out), out)
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
