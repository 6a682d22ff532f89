package push_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
	"github.com/kwrec/kwrec/internal/timepoint"
)

// script reads testdata/name whole as a script.
func script(t *testing.T, name string) *cut.Script {
	t.Helper()
	rec, err := cut.Read("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rec.Script(timepoint.Point{}, timepoint.Point{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// steps writes steps as "AT VERB RESOURCE KEY".
func steps(ss []push.Step) []string {
	var out []string
	for _, s := range ss {
		out = append(out, fmt.Sprintf("%v %s", s.At, s.String()))
	}
	return out
}

func TestNewPlan(t *testing.T) {
	for _, tc := range []struct {
		name        string
		opts        push.PlanOptions
		start, chgs []string
		nss         []string
		left        map[string]int
	}{{
		name: "roots leaves out what a recorded object owns and the cluster's own, namespaces first",
		start: []string{
			"0s create namespaces shop",
			"0s create secrets shop/password", "0s create configmaps shop/settings", "0s create services shop/web",
			"0s create deployments.apps shop/web",
		},
		chgs: []string{
			"1.012s update deployments.apps shop/web",
			"2.042s update configmaps shop/settings", "3.042s delete configmaps shop/settings",
		},
		left: map[string]int{"owned": 4, "cluster's own": 4},
	}, {
		name: "all pushes owners before what they own",
		opts: push.PlanOptions{Mode: push.All},
		start: []string{
			"0s create namespaces shop",
			"0s create secrets shop/password", "0s create configmaps shop/settings", "0s create services shop/web",
			"0s create deployments.apps shop/web",
			"0s create replicasets.apps shop/web-1",
			"0s create pods shop/web-1-a",
		},
		chgs: []string{
			"1.012s update deployments.apps shop/web", "1.032s update replicasets.apps shop/web-1",
			"1.052s create pods shop/web-1-b", "1.062s create pods shop/web-1-c",
			"2.042s update configmaps shop/settings", "3.042s delete configmaps shop/settings",
		},
		left: map[string]int{"cluster's own": 4},
	}, {
		name: "select leaves out what it refuses and a namespace map moves objects and their namespace",
		opts: push.PlanOptions{
			Select:       func(group, resource, kind string) bool { return resource != "secrets" && group != "apps" },
			NamespaceMap: map[string]string{"shop": "shop2"},
		},
		start: []string{"0s create namespaces shop2", "0s create configmaps shop2/settings", "0s create services shop2/web"},
		chgs:  []string{"2.042s update configmaps shop2/settings", "3.042s delete configmaps shop2/settings"},
		left:  map[string]int{"owned": 3, "excluded": 3, "cluster's own": 4},
	}, {
		name:  "a namespace the recording holds no object of is planned to be made",
		opts:  push.PlanOptions{Select: func(group, resource, kind string) bool { return resource == "configmaps" }},
		start: []string{"0s create configmaps shop/settings"},
		chgs:  []string{"2.042s update configmaps shop/settings", "3.042s delete configmaps shop/settings"},
		nss:   []string{"shop"},
		left:  map[string]int{"excluded": 8, "cluster's own": 4},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := push.NewPlan(script(t, "shop.kwrec"), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.start, steps(p.Start)); d != "" {
				t.Errorf("the state (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.chgs, steps(p.Changes)); d != "" {
				t.Errorf("the changes (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.nss, p.Namespaces); d != "" {
				t.Errorf("the namespaces to make (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.left, p.Left); d != "" {
				t.Errorf("left out (-want +got):\n%s", d)
			}
		})
	}
}

func TestAPlannedObjectHoldsNoServerSetFieldAndStatusGoesApart(t *testing.T) {
	p, err := push.NewPlan(script(t, "shop.kwrec"), push.PlanOptions{Mode: push.All})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]push.Step{}
	for _, s := range p.Start {
		byName[s.String()] = s
	}
	for _, tc := range []struct {
		name, step string
		want       string // the object's metadata and spec as JSON-ish text
		status     bool
	}{
		{name: "a Deployment keeps its annotations and loses uid, resourceVersion, creationTimestamp, managedFields and generation",
			step: "create deployments.apps shop/web", status: true,
			want: `map[annotations:map[deployment.kubernetes.io/revision:1] name:web namespace:shop]`},
		{name: "a Pod keeps the ownerReference to its recorded owner, to be re-pointed",
			step: "create pods shop/web-1-a", status: true,
			want: `map[name:web-1-a namespace:shop ownerReferences:[map[apiVersion:apps/v1 controller:true kind:ReplicaSet name:web-1 uid:uid-web-1]]]`},
		{name: "a Service loses its cluster IPs",
			step: "create services shop/web", status: true,
			want: `map[name:web namespace:shop]`},
		{name: "a Secret keeps its recorded, redacted data",
			step: "create secrets shop/password",
			want: `map[name:password namespace:shop]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, ok := byName[tc.step]
			if !ok {
				t.Fatalf("no step %q in the plan", tc.step)
			}
			if got := fmt.Sprint(s.Object.Object["metadata"]); got != tc.want {
				t.Errorf("metadata = %s, want %s", got, tc.want)
			}
			if _, ok := s.Object.Object["status"]; ok {
				t.Errorf("the object still holds its status")
			}
			if (s.Status != nil) != tc.status {
				t.Errorf("status to write = %v, want one: %v", s.Status, tc.status)
			}
			if ip, ok, _ := unstructured.NestedString(s.Object.Object, "spec", "clusterIP"); ok {
				t.Errorf("spec.clusterIP = %q, want none", ip)
			}
		})
	}
}

func TestClusterMade(t *testing.T) {
	for _, tc := range []struct {
		name  string
		group string
		obj   string
		want  bool
	}{
		{"the default namespace is the cluster's", "", `{"kind":"Namespace","metadata":{"name":"default"}}`, true},
		{"a namespace of the user's is not", "", `{"kind":"Namespace","metadata":{"name":"shop"}}`, false},
		{"what kube-system holds is the cluster's", "", `{"kind":"ConfigMap","metadata":{"name":"x","namespace":"kube-system"}}`, true},
		{"what default holds is not", "", `{"kind":"ConfigMap","metadata":{"name":"x","namespace":"default"}}`, false},
		{"a system: ClusterRole is the cluster's", "rbac.authorization.k8s.io", `{"kind":"ClusterRole","metadata":{"name":"system:basic-user"}}`, true},
		{"the kubernetes Service is the cluster's", "", `{"kind":"Service","metadata":{"name":"kubernetes","namespace":"default"}}`, true},
		{"a FlowSchema the server keeps up to date is the cluster's", "flowcontrol.apiserver.k8s.io", `{"kind":"FlowSchema","metadata":{"name":"exempt","annotations":{"apf.kubernetes.io/autoupdate-spec":"true"}}}`, true},
		{"a FlowSchema of the user's is not", "flowcontrol.apiserver.k8s.io", `{"kind":"FlowSchema","metadata":{"name":"mine"}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON([]byte(tc.obj)); err != nil {
				t.Fatal(err)
			}
			if got := push.ClusterMade(tc.group, u); got != tc.want {
				t.Errorf("ClusterMade = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestAnUpdateThatChangesNothingPushedIsLeftOut(t *testing.T) {
	dep := func(rv int64, replicas, ready int) cut.Object {
		return cut.Object{Group: "apps", Version: "v1", Resource: "deployments", Namespace: "shop", Name: "web", RV: rv,
			JSON: fmt.Appendf(nil, `{"kind":"Deployment","apiVersion":"apps/v1","metadata":{"name":"web","namespace":"shop","uid":"u1","resourceVersion":"%d"},"spec":{"replicas":%d},"status":{"readyReplicas":%d}}`, rv, replicas, ready)}
	}
	s := &cut.Script{Changes: []cut.Change{
		{At: 1, Type: "ADDED", Object: dep(1, 1, 0)},
		{At: 2, Type: "MODIFIED", Object: dep(2, 1, 1)}, // the controller's status: nothing --roots writes
		{At: 3, Type: "MODIFIED", Object: dep(3, 5, 1)},
		{At: 4, Type: "DELETED", Object: dep(4, 5, 1)},
		{At: 5, Type: "ADDED", Object: dep(5, 5, 1)},
		{At: 6, Type: "MODIFIED", Object: dep(6, 5, 5)},
	}}
	for _, tc := range []struct {
		name      string
		mode      push.Mode
		want      []string
		unchanged int
	}{
		{"with roots a status-only update is left out", push.Roots,
			[]string{"1ns create deployments.apps shop/web", "3ns update deployments.apps shop/web", "4ns delete deployments.apps shop/web", "5ns create deployments.apps shop/web"}, 2},
		{"with all it is pushed", push.All,
			[]string{"1ns create deployments.apps shop/web", "2ns update deployments.apps shop/web", "3ns update deployments.apps shop/web",
				"4ns delete deployments.apps shop/web", "5ns create deployments.apps shop/web", "6ns update deployments.apps shop/web"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := push.NewPlan(s, push.PlanOptions{Mode: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, steps(p.Changes)); d != "" {
				t.Errorf("the changes (-want +got):\n%s", d)
			}
			if p.Unchanged != tc.unchanged {
				t.Errorf("unchanged = %d, want %d", p.Unchanged, tc.unchanged)
			}
		})
	}
}

func TestStripLeavesTheTargetItsClusterIPsButKeepsHeadless(t *testing.T) {
	for _, tc := range []struct {
		name, spec, want string
	}{
		{"a Service's recorded cluster IPs are the target's to allocate",
			`{"clusterIP":"10.0.0.12","clusterIPs":["10.0.0.12"],"ports":[{"port":80}]}`, `{"ports":[{"port":80}]}`},
		{"a headless Service keeps clusterIP None, which its user set",
			`{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":80}]}`, `{"clusterIP":"None","clusterIPs":["None"],"ports":[{"port":80}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var u unstructured.Unstructured
			if err := u.UnmarshalJSON([]byte(`{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","uid":"u1"},"spec":` + tc.spec + `}`)); err != nil {
				t.Fatal(err)
			}
			push.Strip(&u)
			got, err := json.Marshal(u.Object["spec"])
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, string(got)); d != "" {
				t.Errorf("spec after Strip (-want +got):\n%s", d)
			}
		})
	}
}

func TestBusiestCountsTheRequestsOfTheBusiestSecond(t *testing.T) {
	cm := func(at time.Duration, verb push.Verb, status bool) push.Step {
		st := push.Step{At: at, Verb: verb}
		if status {
			st.Status = map[string]any{"phase": "Active"}
		}
		return st
	}
	p := &push.Plan{Changes: []push.Step{
		cm(0, push.Create, true), cm(100*time.Millisecond, push.Update, false), cm(900*time.Millisecond, push.Delete, true),
		cm(1500*time.Millisecond, push.Update, false), cm(1600*time.Millisecond, push.Update, false), cm(1700*time.Millisecond, push.Update, true),
		cm(1800*time.Millisecond, push.Update, false),
	}}
	for _, tc := range []struct {
		name  string
		speed float64
		want  int
	}{
		{"at speed 1 the second from 0.9s holds a delete and four updates, one with a status", 1, 6},
		{"at speed 2 two recorded seconds are one: all nine requests", 2, 9},
		{"at speed 0.5 a second is half a recorded one: 1.5s to 1.8s", 0.5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := p.Busiest(tc.speed); got != tc.want {
				t.Errorf("Busiest(%v) = %d, want %d", tc.speed, got, tc.want)
			}
		})
	}
}
