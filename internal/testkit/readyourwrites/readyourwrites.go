// Package readyourwrites checks a replay against controller-runtime's
// client with read-your-writes consistency (client.CacheOptions
// EnableReadYourWritesConsistency): a Get or List after a write waits until
// the client's cluster-wide cache has seen the write's resourceVersion, so
// a replay whose watches miss a write makes it hang. Tests of the replay
// in process (package replay) and through kwrec serve (internal/testkit/e2e) run
// the same [Check].
package readyourwrites

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Timeout bounds the whole check: a read that waits for a write the cache
// never sees fails t after it.
const Timeout = 20 * time.Second

// Check creates, updates and deletes a ConfigMap in namespace ns, and
// creates a Deployment in another namespace, through a controller-runtime
// client with read-your-writes consistency over cfg; after each write a
// Get or List must return what was written.
func Check(t testing.TB, cfg *rest.Config, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
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
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "ryw-mine", Namespace: ns}, Data: map[string]string{"k": "1"}}
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
	// A resource the recording never saw, in another namespace, listed
	// across namespaces; its server defaults come back.
	labels := map[string]string{"app": "ryw"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "ryw-d", Namespace: "ryw-elsewhere", Labels: labels},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if err := c.Create(ctx, d); err != nil {
		t.Fatal(err)
	}
	var gotD appsv1.Deployment
	if err := c.Get(ctx, client.ObjectKeyFromObject(d), &gotD); err != nil || gotD.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
		t.Fatalf("Get of the new Deployment: %v %v", gotD.Spec, err)
	}
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.MatchingLabels(labels)); err != nil || len(list.Items) != 1 {
		t.Fatalf("List across namespaces after Create: %d items, %v", len(list.Items), err)
	}
	if err := c.Delete(ctx, cm); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); !apierrors.IsNotFound(err) {
		t.Fatalf("Get after Delete: %v, want NotFound", err)
	}
}
