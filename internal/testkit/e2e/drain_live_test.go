package e2e_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// drainScript is what TestLiveKubectlDrainThroughTheOverlayAsLive runs
// live and through the overlay: a refused drain (a Pod no controller
// owns), a forced one (cordon, list the node's Pods by field selector,
// evict, wait until they are gone), then the uncordon.
var drainScript = [][]string{
	{"drain", "node-a", "--ignore-daemonsets"},
	{"get", "node", "node-a", "-o", "jsonpath={.spec.unschedulable}"},
	{"drain", "node-a", "--ignore-daemonsets", "--force", "--grace-period=0", "--timeout=20s"},
	{"get", "pods", "-A", "--field-selector", "spec.nodeName=node-a", "-o", "name"},
	{"get", "pods", "-n", "e2e-drain", "-o", "name"},
	{"get", "pods", "-A", "--field-selector", "spec.nodeName=node-b,status.phase=Pending", "-o", "name"},
	{"uncordon", "node-a"},
	{"get", "node", "node-a", "-o", "jsonpath={.spec.unschedulable}"},
}

// TestLiveKubectlDrainThroughTheOverlayAsLive records two Nodes and the
// Pods bound to them, then runs [drainScript] live and through `kwrec
// serve --writes overlay` of the recording: each command's exit status,
// stdout and stderr must be the live ones.
func TestLiveKubectlDrainThroughTheOverlayAsLive(t *testing.T) {
	kwrec := buildKwrec(t)
	cp := controlplanetest.Start(t)
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "e2e-drain"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"node-a", "node-b"} {
		if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for name, node := range map[string]string{"p1": "node-a", "p2": "node-b", "p3": ""} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("e2e-drain").Create(ctx, p, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	cassette := filepath.Join(t.TempDir(), "drain.kwrec.zst")
	if out, err := exec.CommandContext(ctx, kwrec, "record", "nodes,pods", "-A", "--duration", "2s", "-o", cassette,
		"--kubeconfig", cp.Kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("kwrec record: %v\n%s", err, out)
	}

	dir := t.TempDir()
	run := func(kubeconfig string) []kubectlRun {
		var runs []kubectlRun
		for _, args := range drainScript {
			runs = append(runs, normalizeRun(runKubectlStatus(ctx, dir, kubeconfig, args...)))
		}
		return runs
	}
	live := run(cp.Kubeconfig)
	s := serve(t, &fixtures{kwrec: kwrec}, cassette, "--writes", "overlay")
	replayed := run(s.Kubeconfig)
	if stderr := s.Stop(t); strings.TrimSpace(stderr) != "" {
		t.Logf("kwrec serve --writes overlay stderr:\n%s", stderr)
	}
	for i, args := range drainScript {
		t.Run(fmt.Sprintf("%d kubectl %s", i+1, strings.Join(args, " ")), func(t *testing.T) {
			if d := cmp.Diff(live[i], replayed[i]); d != "" {
				t.Errorf("(-live +replayed):\n%s", d)
			}
			t.Logf("live: %+v", live[i])
		})
	}
}
