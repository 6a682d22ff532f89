package conformance_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	watchpkg "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// gcPolicies are the propagation policies compared, each in its own
// namespace of the recorded world.
var gcPolicies = []metav1.DeletionPropagation{metav1.DeletePropagationForeground, metav1.DeletePropagationBackground, metav1.DeletePropagationOrphan}

// TestLiveGarbageCollectorAndOverlayDeleteAlike deletes a Deployment that
// owns a ReplicaSet (which owns Pods, one of them also owned by a
// ConfigMap that stays) and a ConfigMap, with each propagation policy, on
// a control plane running kube-controller-manager's garbage collector and
// on the overlay of its recording. Every object sees the same watch
// events, in the same order, and the worlds end alike.
func TestLiveGarbageCollectorAndOverlayDeleteAlike(t *testing.T) {
	cp := controlplanetest.Start(t)
	cp.StartGarbageCollector(t)
	w := newWorld(t, cp)
	live := kubernetes.NewForConfigOrDie(w.cfg)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waitForCollector(t, ctx, live)
	for _, p := range gcPolicies {
		seedOwned(t, ctx, live, gcNamespace(p))
	}
	w.record(t, []string{"/api/v1/namespaces", "/apis/apps/v1/deployments", "/apis/apps/v1/replicasets", "/api/v1/pods", "/api/v1/configmaps"},
		replay.Options{Writes: replay.WritesOverlay})
	overlay := kubernetes.NewForConfigOrDie(w.replayer.Config())
	for _, p := range gcPolicies {
		t.Run(string(p), func(t *testing.T) {
			ns := gcNamespace(p)
			want := deleteAndWatch(t, ctx, live, ns, p)
			got := deleteAndWatch(t, ctx, overlay, ns, p)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("events per object, live collector versus overlay (-live +overlay):\n%s", d)
			}
			t.Logf("%s: %d objects, the same events", p, len(want))
		})
	}
}

func gcNamespace(p metav1.DeletionPropagation) string { return "gc-" + strings.ToLower(string(p)) }

// waitForCollector deletes an owner and waits until its dependent is
// collected: kube-controller-manager's collector acts only after it has
// discovered every resource and synced its informers.
func waitForCollector(t *testing.T, ctx context.Context, cs kubernetes.Interface) {
	t.Helper()
	ns := "gc-canary"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	owner, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "dependent",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: owner.UID}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wt, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: dep.ResourceVersion, FieldSelector: "metadata.name=dependent"})
	if err != nil {
		t.Fatal(err)
	}
	defer wt.Stop()
	if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, "owner", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		select {
		case ev, ok := <-wt.ResultChan():
			if !ok {
				t.Fatal("the canary's watch ended")
			}
			if ev.Type == watchpkg.Deleted {
				return
			}
		case <-ctx.Done():
			t.Fatalf("the garbage collector did not collect the canary: %v", ctx.Err())
		}
	}
}

// seedOwned makes, in ns, the Deployment web; its ReplicaSet web-1
// (controller, blockOwnerDeletion); that ReplicaSet's Pods web-1-a and
// web-1-b; the Pod shared, owned by web-1 and by the ConfigMap keep; and
// the ConfigMap web-config owned by web without blockOwnerDeletion. No
// Pod is bound to a node, so each is deleted at once, kubelet or not.
func seedOwned(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	must := func(obj metav1.Object, err error) types.UID {
		t.Helper()
		if err != nil {
			t.Fatalf("seeding %s: %v", ns, err)
		}
		return obj.GetUID()
	}
	ref := func(kind, apiVersion, name string, uid types.UID, block bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: uid, Controller: new(kind != "ConfigMap"), BlockOwnerDeletion: new(block)}
	}
	labels := map[string]string{"app": "web"}
	spec := corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}
	must(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}))
	web := must(cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}, metav1.CreateOptions{}))
	rs := must(cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-1",
		OwnerReferences: []metav1.OwnerReference{ref("Deployment", "apps/v1", "web", web, true)}},
		Spec: appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec}}}, metav1.CreateOptions{}))
	keep := must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "keep"}}, metav1.CreateOptions{}))
	must(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web-config",
		OwnerReferences: []metav1.OwnerReference{ref("Deployment", "apps/v1", "web", web, false)}}}, metav1.CreateOptions{}))
	rsRef := ref("ReplicaSet", "apps/v1", "web-1", rs, true)
	for name, refs := range map[string][]metav1.OwnerReference{
		"web-1-a": {rsRef}, "web-1-b": {rsRef}, "shared": {rsRef, ref("ConfigMap", "v1", "keep", keep, false)},
	} {
		must(cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, OwnerReferences: refs}, Spec: spec}, metav1.CreateOptions{}))
	}
}

// gcWant is the world after the delete of web with p: "kind/name <owner"
// of each object left.
func gcWant(p metav1.DeletionPropagation) []string {
	if p == metav1.DeletePropagationOrphan {
		return []string{"configmap/keep", "configmap/web-config", "pod/shared <web-1 <keep", "pod/web-1-a <web-1", "pod/web-1-b <web-1", "replicaset/web-1"}
	}
	return []string{"configmap/keep", "pod/shared <keep"}
}

// listWatch lists a collection, then watches it from a resourceVersion.
type listWatch struct {
	list  func() (runtime.Object, error)
	watch func(rv string) (watchpkg.Interface, error)
}

// listWatchOf is the listWatch of a typed client's collection.
func listWatchOf[L runtime.Object](ctx context.Context, c interface {
	List(context.Context, metav1.ListOptions) (L, error)
	Watch(context.Context, metav1.ListOptions) (watchpkg.Interface, error)
}) listWatch {
	return listWatch{
		list: func() (runtime.Object, error) { return c.List(ctx, metav1.ListOptions{}) },
		watch: func(rv string) (watchpkg.Interface, error) {
			return c.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
		},
	}
}

// deleteAndWatch watches ns's Deployments, ReplicaSets, Pods and
// ConfigMaps, deletes web with policy p, and returns each object's events
// ("TYPE owners deleting finalizers") until the world is what gcWant says.
func deleteAndWatch(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string, p metav1.DeletionPropagation) map[string][]string {
	t.Helper()
	type kindEvent struct {
		kind string
		ev   watchpkg.Event
	}
	events := make(chan kindEvent)
	state := map[string]metav1.Object{}
	start := func(kind string, c listWatch) {
		l, err := c.list()
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range items {
			m, _ := meta.Accessor(o)
			state[kind+"/"+m.GetName()] = m
		}
		lm, _ := meta.ListAccessor(l)
		wt, err := c.watch(lm.GetResourceVersion())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(wt.Stop)
		go func() {
			for ev := range wt.ResultChan() {
				select {
				case events <- kindEvent{kind, ev}:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	start("deployment", listWatchOf(ctx, cs.AppsV1().Deployments(ns)))
	start("replicaset", listWatchOf(ctx, cs.AppsV1().ReplicaSets(ns)))
	start("pod", listWatchOf(ctx, cs.CoreV1().Pods(ns)))
	start("configmap", listWatchOf(ctx, cs.CoreV1().ConfigMaps(ns)))
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &p}); err != nil {
		t.Fatal(err)
	}
	world := func() []string {
		var out []string
		for k, m := range state {
			s := k
			for _, r := range m.GetOwnerReferences() {
				s += " <" + r.Name
			}
			out = append(out, s)
		}
		slices.Sort(out)
		return out
	}
	got := map[string][]string{}
	want := gcWant(p)
	for !slices.Equal(world(), want) {
		select {
		case ke := <-events:
			m, err := meta.Accessor(ke.ev.Object)
			if err != nil {
				t.Fatalf("a %s watch sent %v: %v", ke.kind, ke.ev.Object, err)
			}
			key := ke.kind + "/" + m.GetName()
			if ke.ev.Type == watchpkg.Deleted {
				delete(state, key)
			} else {
				state[key] = m
			}
			got[key] = append(got[key], describe(ke.ev.Type, m))
		case <-ctx.Done():
			t.Fatalf("the world did not become %v: it is %v after %v", want, world(), got)
		}
	}
	return got
}

func describe(typ watchpkg.EventType, m metav1.Object) string {
	s := string(typ)
	var owners []string
	for _, r := range m.GetOwnerReferences() {
		owners = append(owners, r.Name)
	}
	if len(owners) > 0 {
		s += fmt.Sprintf(" owners=%s", strings.Join(owners, ","))
	}
	if m.GetDeletionTimestamp() != nil {
		s += " deleting"
	}
	if f := m.GetFinalizers(); len(f) > 0 {
		s += " finalizers=" + strings.Join(f, ",")
	}
	return s
}
