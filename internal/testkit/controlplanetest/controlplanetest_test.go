package controlplanetest_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

func TestLiveControlPlaneListsAndWatchesAConfigMap(t *testing.T) {
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Config)

	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	if v.GitVersion != controlplanetest.KubeVersion {
		t.Errorf("server version %q, want %q", v.GitVersion, controlplanetest.KubeVersion)
	}

	cms := cs.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err = cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "a" {
		t.Errorf("list after create = %v, want the ConfigMap a", list.Items)
	}
	select {
	case ev := <-w.ResultChan():
		cm, ok := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !ok || cm.Name != "a" {
			t.Errorf("first watch event = %s %T, want ADDED ConfigMap a", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		t.Fatal("no watch event for the created ConfigMap")
	}
}

func TestLiveKubeconfigWorksForKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH")
	}
	cp := controlplanetest.Start(t)
	out, err := exec.Command(kubectl, "--kubeconfig", cp.Kubeconfig, "get", "namespaces", "-o", "name").CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "namespace/default") {
		t.Errorf("kubectl get namespaces printed %q, want namespace/default in it", out)
	}
}
