package e2e_test

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestLiveControllerRuntimeReadsItsWritesThroughServe runs
// controller-runtime's client with read-your-writes consistency (a Get
// after a write waits until its cluster-wide cache has seen the write)
// against `kwrec serve --writes overlay` of a recording of one namespace's
// ConfigMaps: every Get returns, with what was written.
func TestLiveControllerRuntimeReadsItsWritesThroughServe(t *testing.T) {
	fx := fixture(t)
	s := serve(t, fx, fx.json.Cassette, "--writes", "overlay")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := s.Config(t)
	informers, err := cache.New(cfg, cache.Options{Scheme: scheme.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	go informers.Start(ctx)
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme,
		Cache: &client.CacheOptions{Reader: informers, EnableReadYourWritesConsistency: ptr.To(true)}})
	if err != nil {
		t.Fatal(err)
	}
	ns := fx.json.Namespace
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "crt-mine", Namespace: ns}, Data: map[string]string{"k": "1"}}
	if err := c.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	var got corev1.ConfigMap
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Data["k"] != "1" {
		t.Fatalf("Get after Create: %v %v", got.Data, err)
	}
	got.Data["k"] = "2"
	if err := c.Update(ctx, &got); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); err != nil || got.Data["k"] != "2" {
		t.Fatalf("Get after Update: %v %v", got.Data, err)
	}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "crt-d", Namespace: "crt-elsewhere", Labels: map[string]string{"app": "crt"}},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "crt"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "crt"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.MatchingLabels{"app": "crt"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("List across namespaces after Create: %d items, %v", len(list.Items), err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); !apierrors.IsNotFound(err) {
		t.Fatalf("Get after Delete: %v, want NotFound", err)
	}
}
