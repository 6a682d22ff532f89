package e2e_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// The world clock scenario: a shop namespace recorded with record --all
// while its Deployment is scaled and its ConfigMap labelled, then a Secret
// deleted and the ConfigMap changed; kubectl's reads are captured live at
// each moment (before the changes, after the first, at the end).
const clockNS = "clock-shop"

// clockReads are the kubectl read commands compared at each moment.
var clockReads = [][]string{
	{"get", "all", "-n", clockNS},
	{"get", "deploy", "-n", clockNS, "-o", "wide"},
	{"describe", "configmap", "cfg", "-n", clockNS},
	{"get", "configmaps", "-A", "-l", "tier=gold"},
	{"get", "configmap", "cfg", "-n", clockNS, "-o", "yaml"},
	{"get", "secrets", "-n", clockNS},
	{"get", "configmaps", "-n", clockNS},
}

// moment is what was captured live at one time of the recording.
type moment struct {
	name    string
	at      string            // as serve --at takes it
	kubectl map[string]string // by command
	proto   map[string]string // the ConfigMaps of clockNS by client-go in protobuf: name -> rv labels data
	python  string            // the same listed by python3-kubernetes (pyList)
}

// pyList lists a namespace's ConfigMaps with python3-kubernetes, as JSON:
// name -> [resourceVersion, labels, data].
const pyList = `import json, sys
from kubernetes import client, config
config.load_kube_config(sys.argv[1])
l = client.CoreV1Api().list_namespaced_config_map(sys.argv[2])
print(json.dumps({i.metadata.name: [i.metadata.resource_version, i.metadata.labels, i.data] for i in l.items}, sort_keys=True))`

// pythonConfigMaps runs pyList against kubeconfig.
func pythonConfigMaps(t *testing.T, kubeconfig string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), python, "-c", pyList, kubeconfig, clockNS).Output()
	if err != nil {
		t.Fatalf("python3-kubernetes list: %v\n%s", err, out)
	}
	return string(out)
}

// TestLiveAKubectlGetThroughServeSeesTheClusterAtTheWorldsTime records the
// scenario, then serves the recording held at each captured moment and
// compares what kubectl, a protobuf client-go list and a
// python3-kubernetes list print with what they printed live then, ages
// aside; a kubectl get -w opened there starts from that state. A get
// shows a change from its recorded time on, not 100ms before. Then kwrec
// ctl moves a paused world while a client-go informer watches: it ends in
// the state at each seek, a seek back included.
func TestLiveAKubectlGetThroughServeSeesTheClusterAtTheWorldsTime(t *testing.T) {
	fx := fixture(t)
	if out, err := exec.Command(python, "-c", "import kubernetes").CombinedOutput(); err != nil {
		// .ci/run installs it; without it this test proves less.
		t.Fatalf("%s has no python3-kubernetes: %v\n%s", python, err, out)
	}
	cp := controlplanetest.Start(t)
	ctx := t.Context()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if err := makeShop(ctx, cs); err != nil {
		t.Fatal(err)
	}
	cassette := t.TempDir() + "/shop.kwrec.zst"
	stop := recordUntilListed(t, fx, cp.Kubeconfig, "record", "--all", "-o", cassette)
	// A moment is captured once the recording holds its last change, so
	// the world at the capture's time holds it too. Each is served held
	// at its time (speed 0), so no comparison races the world's clock;
	// replay's own tests hold a playing world clock to the nanosecond on
	// a fake clock.
	before := capture(t, cp, "before the changes")
	rv, err := changeShop(ctx, cs, 1)
	if err != nil {
		t.Fatal(err)
	}
	waitEventRecorded(t, cassette, rv)
	after := capture(t, cp, "after the first changes")
	if rv, err = changeShop(ctx, cs, 2); err != nil {
		t.Fatal(err)
	}
	waitEventRecorded(t, cassette, rv)
	stop()
	end := capture(t, cp, "at the end")
	end.at = "end"
	if before.kubectl["get deploy -n "+clockNS+" -o wide"] == after.kubectl["get deploy -n "+clockNS+" -o wide"] {
		t.Fatalf("the first changes changed nothing kubectl shows:\n%s", after.kubectl["get deploy -n "+clockNS+" -o wide"])
	}

	for _, m := range []*moment{before, after, end} {
		t.Run(m.name, func(t *testing.T) {
			s := serve(t, fx, cassette, "--clock", "world", "--at", m.at, "--speed", "0")
			for _, args := range clockReads {
				name := strings.Join(args, " ")
				got, err := runKubectl(ctx, s.Kubeconfig, args...)
				if err != nil {
					t.Errorf("%v", err)
					continue
				}
				if d := cmp.Diff(columnsAside(m.kubectl[name]), columnsAside(got)); d != "" {
					t.Errorf("kubectl %s (-live +replayed):\n%s", name, d)
				}
			}
			if d := cmp.Diff(m.proto, protoConfigMaps(t, s.Config(t))); d != "" {
				t.Errorf("client-go's protobuf list (-live +replayed):\n%s", d)
			}
			if d := cmp.Diff(m.python, pythonConfigMaps(t, s.Kubeconfig)); d != "" {
				t.Errorf("python3-kubernetes's list (-live +replayed):\n%s", d)
			}
			want := columnsAside(m.kubectl["get configmaps -n "+clockNS])
			got := columnsAside(kubectlWatchLines(t, s.Kubeconfig, []string{"configmaps", "-n", clockNS}, strings.Count(want, "\n")))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("kubectl get -w starts from (-live +replayed):\n%s", d)
			}
		})
	}

	t.Run("a get shows the scale from its recorded time on, not 100ms before", func(t *testing.T) {
		// The world held at 100ms before the scale to 4 was recorded,
		// then at its time, moved there by kwrec ctl seek.
		s := serve(t, fx, cassette, "--clock", "world", "--at", before.at, "--paused")
		c := kubernetes.NewForConfigOrDie(s.Config(t))
		at := scaleRecordedAt(t, cassette)
		for _, step := range []struct {
			at   time.Duration
			want int32
		}{{at - 100*time.Millisecond, 2}, {at, 4}} {
			if out, err := exec.CommandContext(ctx, fx.kwrec, "ctl", "--kubeconfig", s.Kubeconfig, "seek", step.at.String()).CombinedOutput(); err != nil {
				t.Fatalf("kwrec ctl seek %v: %v\n%s", step.at, err, out)
			}
			d, err := c.AppsV1().Deployments(clockNS).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if *d.Spec.Replicas != step.want {
				t.Errorf("at %v (the scale was recorded at %v) web has %d replicas, want %d", step.at, at, *d.Spec.Replicas, step.want)
			}
		}
	})

	t.Run("kwrec ctl moves a paused world under an informer", func(t *testing.T) {
		s := serve(t, fx, cassette, "--clock", "world", "--at", before.at, "--paused")
		cfg := rest.CopyConfig(s.Config(t))
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		f := informers.NewSharedInformerFactoryWithOptions(kubernetes.NewForConfigOrDie(cfg), 0, informers.WithNamespace(clockNS))
		inf := f.Core().V1().ConfigMaps().Informer()
		ictx, cancel := context.WithCancel(ctx)
		f.Start(ictx.Done())
		defer func() { cancel(); f.Shutdown() }()
		for _, step := range []struct {
			ctl  []string
			want *moment
		}{
			{nil, before},
			{[]string{"seek", after.at}, after},
			{[]string{"seek", "end"}, end},
			{[]string{"seek", before.at}, before}, // back: a 410, a re-list
			{[]string{"seek", after.at}, after},
		} {
			if step.ctl != nil {
				out, err := exec.CommandContext(ctx, fx.kwrec, append([]string{"ctl", "--kubeconfig", s.Kubeconfig}, step.ctl...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("kwrec ctl %s: %v\n%s", strings.Join(step.ctl, " "), err, out)
				}
			}
			if err := waitFor(ctx, 30*time.Second, func() bool { return cmp.Equal(step.want.proto, storeConfigMaps(inf.GetStore())) }); err != nil {
				t.Fatalf("after ctl %v the informer holds (-want +got):\n%s", step.ctl, cmp.Diff(step.want.proto, storeConfigMaps(inf.GetStore())))
			}
		}
	})
}

// makeShop makes the scenario's objects.
func makeShop(ctx context.Context, cs kubernetes.Interface) error {
	two := int32(2)
	labels := map[string]string{"app": "web"}
	objs := []func() error{
		func() error {
			_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: clockNS}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.AppsV1().Deployments(clockNS).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: appsv1.DeploymentSpec{Replicas: &two, Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Services(clockNS).Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
				Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().ConfigMaps(clockNS).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"mode": "calm"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.CoreV1().Secrets(clockNS).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "token"}, StringData: map[string]string{"t": "x"}}, metav1.CreateOptions{})
			return err
		},
		func() error {
			_, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "kwrec:clock:reader"},
				Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range objs {
		if err := create(); err != nil {
			return err
		}
	}
	return nil
}

// changeShop makes the scenario's changes: 1 scales web to 4 and labels
// cfg tier=gold; 2 deletes the Secret and changes cfg's data. It returns
// cfg's resourceVersion after them, the last change.
func changeShop(ctx context.Context, cs kubernetes.Interface, n int) (string, error) {
	patch := `{"data":{"mode":"alert"}}`
	if n == 1 {
		if _, err := cs.AppsV1().Deployments(clockNS).Patch(ctx, "web", types.MergePatchType, []byte(`{"spec":{"replicas":4}}`), metav1.PatchOptions{}); err != nil {
			return "", err
		}
		patch = `{"metadata":{"labels":{"tier":"gold"}}}`
	} else if err := cs.CoreV1().Secrets(clockNS).Delete(ctx, "token", metav1.DeleteOptions{}); err != nil {
		return "", err
	}
	cm, err := cs.CoreV1().ConfigMaps(clockNS).Patch(ctx, "cfg", types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

// waitEventRecorded waits until the recording being written (read as far
// as the recorder flushed it) holds a watch event of resourceVersion rv.
func waitEventRecorded(t *testing.T, cassette, rv string) {
	t.Helper()
	want := []byte(`"resourceVersion":"` + rv + `"`)
	err := waitFor(t.Context(), 30*time.Second, func() bool {
		c, err := cassettes.Load(cassette)
		if c == nil || err != nil && !errors.Is(err, cassettes.ErrTruncated) {
			return false
		}
		_, ok := watchEventAt(c, "", want)
		return ok
	})
	if err != nil {
		t.Fatalf("the recording holds no watch event of resourceVersion %s after 30s: %v", rv, err)
	}
}

// watchEventAt returns when the first recorded watch event holding every
// one of needles, of a watch whose URL holds path, was recorded, from the
// recording's start.
func watchEventAt(c *cassettes.Cassette, path string, needles ...[]byte) (time.Duration, bool) {
	for _, in := range c.Interactions {
		if !strings.Contains(in.Request.URL, path) || !strings.Contains(in.Request.URL, "watch=") || in.Response == nil {
			continue
		}
	frames:
		for _, f := range in.Frames {
			for _, n := range needles {
				if !bytes.Contains(f.Data, n) {
					continue frames
				}
			}
			return in.At + in.Response.Latency + f.At, true
		}
	}
	return 0, false
}

// capture runs clockReads and the protobuf list live, and names the
// moment by the time just before.
func capture(t *testing.T, cp *controlplanetest.ControlPlane, name string) *moment {
	t.Helper()
	m := &moment{name: name, at: time.Now().UTC().Format(time.RFC3339Nano), kubectl: map[string]string{}}
	for _, args := range clockReads {
		out, err := runKubectl(t.Context(), cp.Kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		m.kubectl[strings.Join(args, " ")] = out
	}
	m.proto = protoConfigMaps(t, cp.Config)
	m.python = pythonConfigMaps(t, cp.Kubeconfig)
	return m
}

// protoConfigMaps lists clockNS's ConfigMaps in protobuf, as name ->
// "rv labels data".
func protoConfigMaps(t *testing.T, cfg *rest.Config) map[string]string {
	t.Helper()
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/vnd.kubernetes.protobuf"
	l, err := kubernetes.NewForConfigOrDie(c).CoreV1().ConfigMaps(clockNS).List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for i := range l.Items {
		out[l.Items[i].Name] = configMapSummary(&l.Items[i])
	}
	return out
}

func configMapSummary(cm *corev1.ConfigMap) string {
	var ls []string
	for k, v := range cm.Labels {
		ls = append(ls, k+"="+v)
	}
	sort.Strings(ls)
	return fmt.Sprintf("%s %v %v", cm.ResourceVersion, ls, cm.Data)
}

// storeConfigMaps is an informer's store as protoConfigMaps has a list.
func storeConfigMaps(s cache.Store) map[string]string {
	out := map[string]string{}
	for _, o := range s.List() {
		cm := o.(*corev1.ConfigMap)
		out[cm.Name] = configMapSummary(cm)
	}
	return out
}

// scaleRecordedAt returns when the recording's first watch event of
// Deployment web with 4 replicas was recorded, from its start.
func scaleRecordedAt(t *testing.T, cassette string) time.Duration {
	t.Helper()
	c, err := cassettes.Load(cassette)
	if err != nil {
		t.Fatal(err)
	}
	at, ok := watchEventAt(c, "deployments", []byte(`"name":"web"`), []byte(`"replicas":4`))
	if !ok {
		t.Fatal("the recording has no watch event of web scaled to 4")
	}
	return at
}

// columnsAside is agesAside with each line's runs of spaces made one: an
// age one character longer (9s live, 12s replayed) widens its column.
func columnsAside(s string) string {
	lines := strings.SplitAfter(agesAside(s), "\n")
	for i, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		lines[i] = strings.Join(strings.Fields(l), " ")
		if nl {
			lines[i] += "\n"
		}
	}
	return strings.Join(lines, "")
}
