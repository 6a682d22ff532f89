package replay_test

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

	"github.com/kwrec/kwrec/replay"
)

// TestAControllerRuntimeClientReadsItsOwnWrites runs controller-runtime's
// cache-backed client with read-your-writes consistency (its Get after a
// write waits until the cache has seen the write's resourceVersion)
// against a recording of one namespace's ConfigMaps: the cache lists and
// watches across all namespaces, and must see every write.
func TestAControllerRuntimeClientReadsItsOwnWrites(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cfg := r.Config()
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
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"}, Data: map[string]string{"k": "1"}}
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
		// A resource the recording never saw, in another namespace.
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d", Namespace: "elsewhere", Labels: map[string]string{"app": "d"}},
			Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "d"}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "d"}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
		if err := c.Create(ctx, d); err != nil {
			t.Fatal(err)
		}
		var gotD appsv1.Deployment
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), &gotD); err != nil || gotD.Spec.Template.Spec.Containers[0].ImagePullPolicy != corev1.PullAlways {
			t.Fatalf("Get of a new Deployment: %v %v", gotD.Spec, err)
		}
		var list appsv1.DeploymentList
		if err := c.List(ctx, &list, client.MatchingLabels{"app": "d"}); err != nil || len(list.Items) != 1 {
			t.Fatalf("List across namespaces: %d items, %v", len(list.Items), err)
		}
		if err := c.Delete(ctx, cm); err != nil {
			t.Fatal(err)
		}
		if err := c.Get(ctx, client.ObjectKeyFromObject(cm), &got); !apierrors.IsNotFound(err) {
			t.Fatalf("Get after Delete: %v, want NotFound", err)
		}
	})
}
