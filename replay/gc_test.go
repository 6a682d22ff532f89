package replay_test

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	watchpkg "k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// ownedCassette records, in namespace default, the Deployment web, its
// ReplicaSet web-1 (controller, blockOwnerDeletion), that ReplicaSet's
// Pods web-1-a and web-1-b, a ConfigMap owned by web without
// blockOwnerDeletion, and a Pod owned by web-1 and by the ConfigMap keep
// (which stays).
func ownedCassette() *cassettes.Cassette {
	owner := func(kind, apiVersion, name, uid string, block bool) string {
		return fmt.Sprintf(`{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":%v,"blockOwnerDeletion":%v}`, apiVersion, kind, name, uid, kind != "ConfigMap", block)
	}
	list := func(id int, path, kind, items string) *cassettes.Interaction {
		body := fmt.Sprintf(`{"kind":%q,"apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[%s]}`, kind, items)
		if kind == "DeploymentList" || kind == "ReplicaSetList" {
			body = fmt.Sprintf(`{"kind":%q,"apiVersion":"apps/v1","metadata":{"resourceVersion":"100"},"items":[%s]}`, kind, items)
		}
		return &cassettes.Interaction{ID: id,
			Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443" + path, Header: http.Header{"Accept": {"application/json"}}},
			Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
			Frames:   []cassettes.Frame{{Data: []byte(body)}},
			End:      &cassettes.End{Reason: cassettes.EndEOF}}
	}
	pod := func(name, uid, refs string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"default","uid":%q,"resourceVersion":"90","ownerReferences":[%s]},"spec":{"containers":[{"name":"c","image":"i"}]}}`, name, uid, refs)
	}
	rsRef := owner("ReplicaSet", "apps/v1", "web-1", "uid-rs", true)
	return &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{
		list(1, "/apis/apps/v1/deployments", "DeploymentList",
			`{"metadata":{"name":"web","namespace":"default","uid":"uid-web","resourceVersion":"90"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`),
		list(2, "/apis/apps/v1/replicasets", "ReplicaSetList",
			`{"metadata":{"name":"web-1","namespace":"default","uid":"uid-rs","resourceVersion":"90","ownerReferences":[`+owner("Deployment", "apps/v1", "web", "uid-web", true)+`]},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`),
		list(3, "/api/v1/pods", "PodList", pod("web-1-a", "uid-a", rsRef)+","+pod("web-1-b", "uid-b", rsRef)+","+
			pod("shared", "uid-s", rsRef+","+owner("ConfigMap", "v1", "keep", "uid-keep", false))),
		list(4, "/api/v1/configmaps", "ConfigMapList",
			`{"metadata":{"name":"web-config","namespace":"default","uid":"uid-cm","resourceVersion":"90","ownerReferences":[`+owner("Deployment", "apps/v1", "web", "uid-web", false)+`]}},`+
				`{"metadata":{"name":"keep","namespace":"default","uid":"uid-keep","resourceVersion":"90"}}`),
	}}
}

// world is what is left: "kind/name" of every object, with " (deleting)"
// for one marked for deletion and its owners' names.
func world(t *testing.T, cs kubernetes.Interface) []string {
	t.Helper()
	ctx := ctxT(t)
	var out []string
	add := func(kind string, m metav1.ObjectMeta) {
		s := kind + "/" + m.Name
		for _, ref := range m.OwnerReferences {
			s += " <" + ref.Name
		}
		if m.DeletionTimestamp != nil {
			s += " (deleting)"
		}
		out = append(out, s)
	}
	ds, err := cs.AppsV1().Deployments("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range ds.Items {
		add("deployment", o.ObjectMeta)
	}
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range rss.Items {
		add("replicaset", o.ObjectMeta)
	}
	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range pods.Items {
		add("pod", o.ObjectMeta)
	}
	cms, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cms.Items {
		add("configmap", o.ObjectMeta)
	}
	slices.Sort(out)
	return out
}

func TestTheGarbageCollectorRemovesWhatADeletedOwnerOwned(t *testing.T) {
	tests := []struct {
		name   string
		policy metav1.DeletionPropagation
		noGC   bool
		want   []string
	}{
		{"a background delete takes the dependents, and a dependent with another owner loses its reference", metav1.DeletePropagationBackground, false,
			[]string{"configmap/keep", "pod/shared <keep"}},
		{"a foreground delete takes the dependents first, then the owner", metav1.DeletePropagationForeground, false,
			[]string{"configmap/keep", "pod/shared <keep"}},
		{"an orphan delete leaves the dependents without their reference", metav1.DeletePropagationOrphan, false,
			[]string{"configmap/keep", "configmap/web-config", "pod/shared <web-1 <keep", "pod/web-1-a <web-1", "pod/web-1-b <web-1", "replicaset/web-1"}},
		{"with the collector off, as in envtest, a foreground delete waits forever", metav1.DeletePropagationForeground, true,
			[]string{"configmap/keep", "configmap/web-config <web", "deployment/web (deleting)", "pod/shared <web-1 <keep", "pod/web-1-a <web-1", "pod/web-1-b <web-1", "replicaset/web-1 <web"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := replay.New(ownedCassette(), replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: tt.noGC})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { r.Close() })
			cs := kubernetes.NewForConfigOrDie(r.Config())
			policy := tt.policy
			if err := cs.AppsV1().Deployments("default").Delete(ctxT(t), "web", metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, world(t, cs)); diff != "" {
				t.Errorf("what is left (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAForegroundDeleteSendsTheEventsOfACluster(t *testing.T) {
	r, err := replay.New(ownedCassette(), replay.Options{Writes: replay.WritesOverlay})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	cs := kubernetes.NewForConfigOrDie(r.Config())
	ctx := ctxT(t)
	watch := func(w watchpkg.Interface, err error) watchpkg.Interface {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(w.Stop)
		return w
	}
	opts := metav1.ListOptions{ResourceVersion: "100000"} // the recorded lists' 100, as Overlay serves it
	deps := watch(cs.AppsV1().Deployments("default").Watch(ctx, opts))
	rss := watch(cs.AppsV1().ReplicaSets("default").Watch(ctx, opts))
	pods := watch(cs.CoreV1().Pods("default").Watch(ctx, opts))
	fg := metav1.DeletePropagationForeground
	if err := cs.AppsV1().Deployments("default").Delete(ctx, "web", metav1.DeleteOptions{PropagationPolicy: &fg}); err != nil {
		t.Fatal(err)
	}
	read := func(w watchpkg.Interface, n int) []string {
		t.Helper()
		var out []string
		for len(out) < n {
			select {
			case ev := <-w.ResultChan():
				m, err := meta.Accessor(ev.Object)
				if err != nil {
					t.Fatal(err)
				}
				s := string(ev.Type) + " " + m.GetName()
				if m.GetDeletionTimestamp() != nil {
					s += " (deleting)"
				}
				if fs := m.GetFinalizers(); len(fs) > 0 {
					s += " " + strings.Join(fs, ",")
				}
				out = append(out, s)
			case <-ctx.Done():
				t.Fatalf("after %v: %v", out, ctx.Err())
			}
		}
		return out
	}
	for _, c := range []struct {
		what string
		w    watchpkg.Interface
		want []string
	}{
		{"the Deployment", deps, []string{"MODIFIED web (deleting) foregroundDeletion", "DELETED web (deleting) foregroundDeletion"}},
		{"the ReplicaSet", rss, []string{"MODIFIED web-1 (deleting) foregroundDeletion", "DELETED web-1 (deleting) foregroundDeletion"}},
		// A Pod's delete marks it, then removes it.
		{"the Pods", pods, []string{"MODIFIED shared", "MODIFIED web-1-a (deleting)", "DELETED web-1-a (deleting)", "MODIFIED web-1-b (deleting)", "DELETED web-1-b (deleting)"}},
	} {
		if diff := cmp.Diff(c.want, read(c.w, len(c.want))); diff != "" {
			t.Errorf("events of %s (-want +got):\n%s", c.what, diff)
		}
	}
}
