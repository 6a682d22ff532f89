package push_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
)

// target is a fake target: a dynamic client whose creates get a UID
// ("target-NAME"), and the log of its writes with the (bubble's) time
// from the start each was made at.
type target struct {
	*fake.FakeDynamicClient
	start  time.Time
	writes []string
}

func newTarget(objs ...runtime.Object) *target {
	tg := &target{FakeDynamicClient: fake.NewSimpleDynamicClient(runtime.NewScheme(), objs...), start: time.Now()}
	tg.PrependReactor("*", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetVerb() == "get" {
			return false, nil, nil
		}
		w := fmt.Sprintf("%v %s %s", time.Since(tg.start), a.GetVerb(), a.GetResource().Resource)
		if s := a.GetSubresource(); s != "" {
			w += "/" + s
		}
		tg.writes = append(tg.writes, w)
		if c, ok := a.(k8stesting.CreateAction); ok {
			u := c.GetObject().(*unstructured.Unstructured)
			u.SetUID(types.UID("target-" + u.GetName()))
		}
		return false, nil, nil
	})
	return tg
}

// plan plans testdata/shop.kwrec in mode.
func plan(t *testing.T, mode push.Mode) *push.Plan {
	t.Helper()
	p, err := push.NewPlan(script(t, "shop.kwrec"), push.PlanOptions{Mode: mode})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func hasStatus(gvr schema.GroupVersionResource) bool {
	return gvr.Resource != "configmaps" && gvr.Resource != "secrets"
}

func TestRunWritesThePlan(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newTarget()
		res, err := push.Run(t.Context(), plan(t, push.All), push.Config{Client: tg, HasStatus: hasStatus, Speed: 1, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{
			"0s create namespaces", "0s update namespaces/status",
			"0s create secrets", "0s create configmaps", "0s create services", "0s update services/status",
			"0s create deployments", "0s update deployments/status",
			"0s create replicasets", "0s update replicasets/status",
			"0s create pods", "0s update pods/status",
			"1.012s update deployments", "1.012s update deployments/status",
			"1.032s update replicasets", "1.032s update replicasets/status",
			"1.052s create pods", "1.052s update pods/status",
			"1.062s create pods", "1.062s update pods/status",
			"2.042s update configmaps", "3.042s delete configmaps",
		}
		if d := cmp.Diff(want, tg.writes); d != "" {
			t.Errorf("the writes at speed 1 (-want +got):\n%s", d)
		}
		if res.Pushed != 13 || res.Total != 13 || len(res.Errors) != 0 {
			t.Errorf("pushed %d of %d, errors %v; want 13 of 13, none", res.Pushed, res.Total, res.Errors)
		}
		if got := res.Percentile(100); got != 0 {
			t.Errorf("the latest change was %v late, want on time", got)
		}
		pod, err := tg.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"}).Namespace("shop").Get(t.Context(), "web-1-b", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if refs := pod.GetOwnerReferences(); len(refs) != 1 || refs[0].UID != "target-web-1" {
			t.Errorf("the pushed Pod's ownerReferences are %v, want one to the target's ReplicaSet target-web-1", refs)
		}
	})
}

func TestRunPacesTheChangesBySpeed(t *testing.T) {
	for _, tc := range []struct {
		name  string
		speed float64
		want  []string
	}{
		{"at speed 2 each change comes at half its recorded time", 2,
			[]string{"506ms update deployments", "1.021s update configmaps", "1.521s delete configmaps"}},
		{"at speed 0 every change comes at once", 0,
			[]string{"0s update deployments", "0s update configmaps", "0s delete configmaps"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tg := newTarget()
				p := plan(t, push.Roots)
				if _, err := push.Run(t.Context(), p, push.Config{Client: tg, Speed: tc.speed, Workers: 1}); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, tg.writes[len(tg.writes)-3:]); d != "" {
					t.Errorf("the changes (-want +got):\n%s", d)
				}
			})
		})
	}
}

func TestRunOnRefusals(t *testing.T) {
	held := &unstructured.Unstructured{}
	held.SetAPIVersion("v1")
	held.SetKind("ConfigMap")
	held.SetNamespace("shop")
	held.SetName("settings")
	for _, tc := range []struct {
		name    string
		onError push.OnError
		wantErr string
		pushed  int
		log     string
	}{{
		name:    "with skip an object the target already holds is named, counted and skipped, and the rest pushed",
		onError: push.Skip, pushed: 7,
		log: `kwrec: push: refused: create configmaps shop/settings: AlreadyExists: configmaps "settings" already exists` + "\n",
	}, {
		name:    "with stop the push ends at the first refusal",
		onError: push.Stop, pushed: 2,
		wantErr: `the target refused a write: create configmaps shop/settings: configmaps "settings" already exists (--on-error skip pushes on past refusals)`,
		log:     `kwrec: push: refused: create configmaps shop/settings: AlreadyExists: configmaps "settings" already exists` + "\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				tg := newTarget(held.DeepCopy())
				var log bytes.Buffer
				res, err := push.Run(t.Context(), plan(t, push.Roots), push.Config{Client: tg, OnError: tc.onError, Workers: 1, Log: &log})
				if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr || !errors.Is(err, push.ErrRefused)) {
					t.Errorf("Run: %v, want %q", err, tc.wantErr)
				}
				if log.String() != tc.log {
					t.Errorf("the log is %q, want %q", log.String(), tc.log)
				}
				if res.Pushed != tc.pushed || res.ErrorSummary() != "AlreadyExists 1" {
					t.Errorf("pushed %d, errors %s; want %d, AlreadyExists 1", res.Pushed, res.ErrorSummary(), tc.pushed)
				}
			})
		})
	}
}

func TestRunRetriesATargetThatDoesNotAnswerThenStops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newTarget()
		tg.PrependReactor("create", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("dial tcp 127.0.0.1:6443: connect: connection refused")
		})
		start := time.Now()
		res, err := push.Run(t.Context(), plan(t, push.Roots), push.Config{Client: tg})
		const want = "the target does not answer: create namespaces shop: dial tcp 127.0.0.1:6443: connect: connection refused; is the cluster up? check --kubeconfig and --server"
		if !errors.Is(err, push.ErrTargetGone) || err.Error() != want {
			t.Errorf("Run: %v, want %q", err, want)
		}
		// 200ms, 400ms, 800ms, 1.6s, 3.2s between six tries.
		if got := time.Since(start); got != 6200*time.Millisecond {
			t.Errorf("gave up after %v, want 6.2s", got)
		}
		if res.Pushed != 0 {
			t.Errorf("pushed %d, want 0", res.Pushed)
		}
	})
}

func TestRunStopsCleanlyWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newTarget()
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(1500*time.Millisecond, cancel) // SIGTERM, between two changes
		var progress bytes.Buffer
		res, err := push.Run(ctx, plan(t, push.Roots), push.Config{Client: tg, Speed: 1, Progress: &progress})
		if err != nil {
			t.Fatalf("Run: %v, want no error", err)
		}
		if !res.Stopped || res.Pushed != 6 || res.Total != 8 {
			t.Errorf("stopped %v after %d of %d, want stopped after 6 of 8", res.Stopped, res.Pushed, res.Total)
		}
		if last := lastLine(progress.String()); last != "kwrec: push: 6/8 pushed, lag 0s, errors: none" {
			t.Errorf("the last progress line is %q", last)
		}
	})
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

func TestRunFindsWhichResourcesHaveAStatusSubresource(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tg := newTarget()
		// Services have none on this target: /status answers 404.
		tg.PrependReactor("update", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
			if a.GetSubresource() == "status" {
				return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "services"}, "web")
			}
			return false, nil, nil
		})
		p := plan(t, push.All)
		p.Changes = nil
		res, err := push.Run(t.Context(), p, push.Config{Client: tg, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Errors) != 0 {
			t.Errorf("errors %s, want none: a 404 of /status means the resource has none", res.ErrorSummary())
		}
		want := []string{
			"0s create namespaces", "0s update namespaces/status",
			"0s create secrets", "0s create configmaps", "0s create services", // its /status answered 404 before the log
			"0s create deployments", "0s update deployments/status",
			"0s create replicasets", "0s update replicasets/status",
			"0s create pods", "0s update pods/status",
		}
		if d := cmp.Diff(want, tg.writes); d != "" {
			t.Errorf("the writes (-want +got):\n%s", d)
		}
		svc, err := tg.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace("shop").Get(t.Context(), "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := svc.Object["status"]; !ok {
			t.Errorf("the Service was created without its status; want it with the object, as it has no /status")
		}
	})
}

func TestRunMakesABurstOfUpdatesAtOnce(t *testing.T) {
	cm := func(name string, rv int64, v string) cut.Object {
		return cut.Object{Version: "v1", Resource: "configmaps", Namespace: "shop", Name: name, RV: rv,
			JSON: fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"shop"},"data":{"v":%q}}`, name, v)}
	}
	s := &cut.Script{Start: []cut.Object{cm("a", 1, "0"), cm("b", 2, "0"), cm("c", 3, "0")}}
	for i, n := range []string{"a", "b", "c"} {
		s.Changes = append(s.Changes, cut.Change{At: time.Second, Type: "MODIFIED", Object: cm(n, int64(10+i), "1")})
	}
	s.Changes = append(s.Changes, cut.Change{At: time.Second, Type: "MODIFIED", Object: cm("a", 13, "2")})
	for _, tc := range []struct {
		name    string
		workers int
		want    []time.Duration
	}{
		{"updates of distinct objects recorded at one instant are made at once, the same object's after", 8,
			[]time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 20 * time.Millisecond}},
		{"with one worker they are made one after another", 1,
			[]time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 30 * time.Millisecond, 40 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				p, err := push.NewPlan(s, push.PlanOptions{Mode: push.All})
				if err != nil {
					t.Fatal(err)
				}
				res, err := push.Run(t.Context(), p, push.Config{Client: slowUpdates{newTarget()}, Speed: 1, Workers: tc.workers})
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, res.Lateness); d != "" {
					t.Errorf("lateness (-want +got):\n%s", d)
				}
			})
		})
	}
}

// slowUpdates is a target that takes 10 ms an update. (The fake client
// runs its reactors under a mutex, so the wait cannot be one.)
type slowUpdates struct{ dynamic.Interface }

func (c slowUpdates) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	return slowResource{c.Interface.Resource(gvr)}
}

type slowResource struct {
	dynamic.NamespaceableResourceInterface
}

func (r slowResource) Namespace(ns string) dynamic.ResourceInterface {
	return slowNamespaced{r.NamespaceableResourceInterface.Namespace(ns)}
}

type slowNamespaced struct{ dynamic.ResourceInterface }

func (r slowNamespaced) Update(ctx context.Context, u *unstructured.Unstructured, opts metav1.UpdateOptions, sub ...string) (*unstructured.Unstructured, error) {
	time.Sleep(10 * time.Millisecond)
	return r.ResourceInterface.Update(ctx, u, opts, sub...)
}

func TestRunRepointsAJobsGeneratedSelectorAtTheTargetsUID(t *testing.T) {
	job := func(rv int64, manual bool, team string) cut.Object {
		return cut.Object{Group: "batch", Version: "v1", Resource: "jobs", Namespace: "shop", Name: "backup", RV: rv,
			JSON: fmt.Appendf(nil, `{"kind":"Job","apiVersion":"batch/v1","metadata":{"name":"backup","namespace":"shop","uid":"uid-backup","labels":{"team":%q}},`+
				`"spec":{"manualSelector":%t,"selector":{"matchLabels":{"batch.kubernetes.io/controller-uid":"uid-backup"}},`+
				`"template":{"metadata":{"labels":{"batch.kubernetes.io/controller-uid":"uid-backup","controller-uid":"uid-backup","job-name":"backup","team":"uid-backup"}},`+
				`"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`, team, manual)}
	}
	for _, tc := range []struct {
		name   string
		manual bool
		want   []string // the selector and template labels of the create, then the update
	}{
		{"a generated selector is left for the target to make at the create, and names the target's UID at the update", false, []string{
			"create: selector none, template map[job-name:backup team:uid-backup]",
			"update: selector map[matchLabels:map[batch.kubernetes.io/controller-uid:target-backup]], template map[batch.kubernetes.io/controller-uid:target-backup controller-uid:target-backup job-name:backup team:uid-backup]",
		}},
		{"a manual selector is pushed as recorded", true, []string{
			"create: selector map[matchLabels:map[batch.kubernetes.io/controller-uid:uid-backup]], template map[batch.kubernetes.io/controller-uid:uid-backup controller-uid:uid-backup job-name:backup team:uid-backup]",
			"update: selector map[matchLabels:map[batch.kubernetes.io/controller-uid:uid-backup]], template map[batch.kubernetes.io/controller-uid:uid-backup controller-uid:uid-backup job-name:backup team:uid-backup]",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &cut.Script{Start: []cut.Object{job(1, tc.manual, "a")},
				Changes: []cut.Change{{At: time.Second, Type: "MODIFIED", Object: job(2, tc.manual, "b")}}}
			p, err := push.NewPlan(s, push.PlanOptions{Mode: push.All})
			if err != nil {
				t.Fatal(err)
			}
			tg := newTarget()
			var got []string
			tg.PrependReactor("*", "jobs", func(a k8stesting.Action) (bool, runtime.Object, error) {
				w, ok := a.(k8stesting.CreateAction) // an UpdateAction is one too: GetObject
				if !ok {
					return false, nil, nil
				}
				u := w.GetObject().(*unstructured.Unstructured)
				var sel any = "none"
				if m, ok, _ := unstructured.NestedMap(u.Object, "spec", "selector"); ok {
					sel = m
				}
				labels, _, _ := unstructured.NestedStringMap(u.Object, "spec", "template", "metadata", "labels")
				got = append(got, fmt.Sprintf("%s: selector %v, template %v", a.GetVerb(), sel, labels))
				return false, nil, nil
			})
			res, err := push.Run(t.Context(), p, push.Config{Client: tg, HasStatus: hasStatus})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Errors) != 0 {
				t.Errorf("refused: %v", res.Errors)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("the Job's writes (-want +got):\n%s", d)
			}
		})
	}
}

func TestRunTimesAChangeDeliveredEarlyAsTheOneTheServerMadeBefore(t *testing.T) {
	// The server made settings (rv 10) before the Role (rv 11); the
	// ConfigMaps' watch delivered its event 400 ms after the Roles'.
	obj := func(resource, group, kind, name string, rv int64) cut.Object {
		return cut.Object{Group: group, Version: "v1", Resource: resource, Namespace: "shop", Name: name, RV: rv,
			JSON: fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":{"name":%q,"namespace":"shop"}}`, kind, strings.TrimPrefix(group+"/v1", "/"), name)}
	}
	s := &cut.Script{Changes: []cut.Change{
		{At: 1400 * time.Millisecond, Type: "ADDED", Object: obj("configmaps", "", "ConfigMap", "settings", 10)},
		{At: time.Second, Type: "ADDED", Object: obj("roles", "rbac.authorization.k8s.io", "Role", "reader", 11)},
	}}
	synctest.Test(t, func(t *testing.T) {
		p, err := push.NewPlan(s, push.PlanOptions{Mode: push.All})
		if err != nil {
			t.Fatal(err)
		}
		tg := newTarget()
		res, err := push.Run(t.Context(), p, push.Config{Client: tg, Speed: 1, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]string{"0s create namespaces", "1.4s create configmaps", "1.4s create roles"}, tg.writes); d != "" {
			t.Errorf("the writes, in the server's order (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]time.Duration{0, 0}, res.Lateness); d != "" {
			t.Errorf("lateness: the Role is due with the ConfigMap the server made before it (-want +got):\n%s", d)
		}
	})
}

func TestRunHoldsUpOnlyTheChangesThatDependOnASlowWrite(t *testing.T) {
	cm := func(name string, rv int64, v string) cut.Object {
		return cut.Object{Version: "v1", Resource: "configmaps", Namespace: "shop", Name: name, RV: rv,
			JSON: fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"shop","uid":"uid-%s"},"data":{"v":%q}}`, name, name, v)}
	}
	owned := cut.Object{Version: "v1", Resource: "configmaps", Namespace: "shop", Name: "part", RV: 13,
		JSON: []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"part","namespace":"shop","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"uid-a"}]}}`)}
	s := &cut.Script{Start: []cut.Object{cm("a", 1, "0")}, Changes: []cut.Change{
		{At: time.Second, Type: "MODIFIED", Object: cm("a", 10, "1")},                      // slow: 10 ms
		{At: time.Second + time.Millisecond, Type: "ADDED", Object: cm("b", 11, "0")},      // another object: at once
		{At: time.Second + 2*time.Millisecond, Type: "MODIFIED", Object: cm("a", 12, "2")}, // after a's update: 10 ms more
		{At: time.Second + 3*time.Millisecond, Type: "ADDED", Object: owned},               // owned by a: after a's second update
	}}
	synctest.Test(t, func(t *testing.T) {
		p, err := push.NewPlan(s, push.PlanOptions{Mode: push.All})
		if err != nil {
			t.Fatal(err)
		}
		res, err := push.Run(t.Context(), p, push.Config{Client: slowUpdates{newTarget()}, Speed: 1})
		if err != nil {
			t.Fatal(err)
		}
		// In the order they are done: b at once, a's first update after
		// 10 ms, its second 10 ms later (18 ms after it was due), the
		// owned ConfigMap with it (17 ms).
		want := []time.Duration{0, 10 * time.Millisecond, 18 * time.Millisecond, 17 * time.Millisecond}
		if d := cmp.Diff(want, res.Lateness); d != "" {
			t.Errorf("lateness (-want +got):\n%s", d)
		}
	})
}
