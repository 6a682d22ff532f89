package e2e_test

import (
	"context"
	"fmt"
	"os"
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

// printNamespace is where the printers scenario runs, live and replayed.
const printNamespace = "e2e-print"

// printScript is what TestLiveKubectlPrintsWritesAsLive runs live and
// through the overlay: kubectl's imperative creates of built-in kinds,
// then its default (server-side printed) gets of them, wide too. No
// controller runs live, so statuses stay empty on both sides. kwrec does
// not default Services: the overlay neither allocates cluster IPs nor
// fills spec.clusterIPs from spec.clusterIP, spec.type or a port's
// protocol, so the ClusterIP Services are created from manifests that set
// them all, headless or with an explicit address (kubectl create service
// sets the type and protocols itself), and the other one is an
// ExternalName.
var printScript = [][]string{
	{"create", "-f", "services.yaml"},
	{"create", "service", "externalname", "s-ext", "--external-name=db.example.com"},
	{"create", "deployment", "web", "--image=busybox:1.36", "--image=nginx:1", "--replicas=2"},
	{"run", "p", "--image=nginx", "--labels=app=web"},
	{"create", "job", "j", "--image=busybox"},
	{"create", "cronjob", "c", "--image=busybox", "--schedule=*/5 * * * *"},
	{"create", "configmap", "cm", "--from-literal=a=1", "--from-literal=b=2"},
	{"create", "secret", "generic", "sec", "--from-literal=a=1"},
	{"create", "serviceaccount", "sa"},
	{"create", "role", "r", "--verb=get", "--resource=pods"},
	{"create", "rolebinding", "rb", "--role=r", "--user=alice", "--group=devs", "--serviceaccount=e2e-print:sa"},
	{"create", "pdb", "pdb", "--selector=app=web", "--min-available=1"},
	{"create", "ingress", "ing", "--rule=a.example.com/=s-ip:443,tls", "--class=nginx"},
	{"get", "svc,deploy,pods", "-o", "wide"},
	{"get", "svc,deploy,pods"},
	{"get", "jobs,cronjobs,cm,secrets,sa,roles,rolebindings,pdb,ingress", "-o", "wide"},
	{"get", "all"},
	{"delete", "svc", "s-ext"},
	{"get", "svc"},
}

// printManifests are the files printScript creates objects from.
var printManifests = map[string]string{
	"services.yaml": `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Service
  metadata: {name: s-headless}
  spec:
    type: ClusterIP
    clusterIP: None
    clusterIPs: [None]
    selector: {app: web}
    ports: [{port: 80, targetPort: 8080, protocol: TCP}]
- apiVersion: v1
  kind: Service
  metadata: {name: s-ip}
  spec:
    type: ClusterIP
    clusterIP: 10.0.0.77
    clusterIPs: [10.0.0.77]
    selector: {app: web, tier: front}
    ports: [{name: https, port: 443, protocol: TCP}, {name: dns, port: 53, protocol: UDP}]
`,
}

// TestLiveKubectlPrintsWritesAsLive records an empty namespace's
// Services, Deployments and Pods, then runs [printScript] live and
// through `kwrec serve --writes overlay` of the recording: each command's
// exit status, stdout and stderr must be the live ones, ages and uids
// aside. The gets print objects the overlay wrote, which the recording
// holds no Table rows of: their columns come from the ported built-in
// printers.
func TestLiveKubectlPrintsWritesAsLive(t *testing.T) {
	kwrec := buildKwrec(t)
	cp := controlplanetest.Start(t)
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: printNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cassette := filepath.Join(t.TempDir(), "print.kwrec.zst")
	if out, err := exec.CommandContext(ctx, kwrec, "record", "services,deployments,pods", "-n", printNamespace, "--duration", "2s",
		"-o", cassette, "--kubeconfig", cp.Kubeconfig).CombinedOutput(); err != nil {
		t.Fatalf("kwrec record: %v\n%s", err, out)
	}

	dir := t.TempDir()
	for name, text := range printManifests {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(kubeconfig string) []kubectlRun {
		var runs []kubectlRun
		for _, args := range printScript {
			runs = append(runs, normalizeRun(runKubectlStatus(ctx, dir, kubeconfig, append([]string{"-n", printNamespace}, args...)...)))
		}
		return runs
	}
	live := run(cp.Kubeconfig)
	s := serve(t, &fixtures{kwrec: kwrec}, cassette, "--writes", "overlay")
	replayed := run(s.Kubeconfig)
	if stderr := s.Stop(t); strings.TrimSpace(stderr) != "" {
		t.Logf("kwrec serve --writes overlay stderr:\n%s", stderr)
	}
	for i, args := range printScript {
		t.Run(fmt.Sprintf("%02d kubectl %s", i+1, strings.Join(args, " ")), func(t *testing.T) {
			if live[i].Exit != 0 {
				t.Errorf("live: %+v", live[i])
			}
			if d := cmp.Diff(live[i], replayed[i]); d != "" {
				t.Errorf("(-live +replayed):\n%s", d)
			}
		})
	}
}
