package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeDiscovery is a small cluster's preferred resources, as discovery
// lists them: listable and watchable ones, Events and Leases, a
// subresource, create-only and list-only resources, and a CRD.
func fakeDiscovery() []*metav1.APIResourceList {
	rw := metav1.Verbs{"create", "delete", "get", "list", "patch", "update", "watch"}
	return []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "bindings", SingularName: "binding", Namespaced: true, Kind: "Binding", Verbs: metav1.Verbs{"create"}},
			{Name: "componentstatuses", SingularName: "componentstatus", Kind: "ComponentStatus", Verbs: metav1.Verbs{"get", "list"}, ShortNames: []string{"cs"}},
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: rw, ShortNames: []string{"cm"}},
			{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", Verbs: rw, ShortNames: []string{"ev"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: rw, ShortNames: []string{"ns"}},
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: rw, ShortNames: []string{"po"}},
			{Name: "pods/log", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get"}},
			{Name: "pods/status", Namespaced: true, Kind: "Pod", Verbs: metav1.Verbs{"get", "list", "watch"}},
			{Name: "secrets", SingularName: "secret", Namespaced: true, Kind: "Secret", Verbs: rw},
		}},
		{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: rw, ShortNames: []string{"deploy"}},
		}},
		{GroupVersion: "coordination.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "leases", SingularName: "lease", Namespaced: true, Kind: "Lease", Verbs: rw},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "events", SingularName: "event", Namespaced: true, Kind: "Event", Verbs: rw, ShortNames: []string{"ev"}},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", SingularName: "widget", Kind: "Widget", Verbs: rw, ShortNames: []string{"wd"}},
		}},
		{GroupVersion: "metrics.k8s.io/v1beta1", APIResources: []metav1.APIResource{
			{Name: "pods", SingularName: "", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
		}},
	}
}

func TestSelectAll(t *testing.T) {
	for _, tc := range []struct {
		name         string
		sel          allSelection
		want         []string
		wantWarnings []string
	}{
		{name: "every listable and watchable resource but events and leases, subresources and list-only ones out",
			want: []string{"configmaps", "namespaces", "pods", "secrets", "deployments.apps", "widgets.example.com"}},
		{name: "with -n only the namespaced ones",
			sel:  allSelection{namespaced: true},
			want: []string{"configmaps", "pods", "secrets", "deployments.apps"}},
		{name: "--include events brings back the core and events.k8s.io events",
			sel:  allSelection{include: []string{"events"}},
			want: []string{"configmaps", "events", "namespaces", "pods", "secrets", "deployments.apps", "events.events.k8s.io", "widgets.example.com"}},
		{name: "--include events,leases brings back both",
			sel:  allSelection{include: []string{"events", "leases"}},
			want: []string{"configmaps", "events", "namespaces", "pods", "secrets", "deployments.apps", "leases.coordination.k8s.io", "events.events.k8s.io", "widgets.example.com"}},
		{name: "--include of a kind with its group brings back that group's only",
			sel:  allSelection{include: []string{"Event.events.k8s.io"}},
			want: []string{"configmaps", "namespaces", "pods", "secrets", "deployments.apps", "events.events.k8s.io", "widgets.example.com"}},
		{name: "--include of a group name brings back what of it is left out",
			sel:  allSelection{include: []string{"coordination.k8s.io"}},
			want: []string{"configmaps", "namespaces", "pods", "secrets", "deployments.apps", "leases.coordination.k8s.io", "widgets.example.com"}},
		{name: "--include core brings back the core group's events",
			sel:  allSelection{include: []string{"core"}},
			want: []string{"configmaps", "events", "namespaces", "pods", "secrets", "deployments.apps", "widgets.example.com"}},
		{name: "--exclude takes plurals, singulars, kinds and short names, case ignored",
			sel:  allSelection{exclude: []string{"secrets", "pod", "NAMESPACE", "cm"}},
			want: []string{"deployments.apps", "widgets.example.com"}},
		{name: "--exclude resource.group drops it in that group only",
			sel:  allSelection{exclude: []string{"deploy.apps", "widgets.example.com", "pods.metrics.k8s.io"}},
			want: []string{"configmaps", "namespaces", "pods", "secrets"}},
		{name: "--exclude of a group drops its resources",
			sel:  allSelection{exclude: []string{"example.com", "apps"}},
			want: []string{"configmaps", "namespaces", "pods", "secrets"}},
		{name: "--exclude core drops the core group",
			sel:  allSelection{exclude: []string{"core"}},
			want: []string{"deployments.apps", "widgets.example.com"}},
		{name: "--exclude resource.core drops it from the core group",
			sel:  allSelection{exclude: []string{"secrets.core"}},
			want: []string{"configmaps", "namespaces", "pods", "deployments.apps", "widgets.example.com"}},
		{name: "--exclude wins over --include",
			sel:  allSelection{include: []string{"events"}, exclude: []string{"events.events.k8s.io"}},
			want: []string{"configmaps", "events", "namespaces", "pods", "secrets", "deployments.apps", "widgets.example.com"}},
		{name: "names that match nothing are warned of, not fatal",
			sel:          allSelection{include: []string{"configmaps", "frobs"}, exclude: []string{"secretz", "secrets.apps"}},
			want:         []string{"configmaps", "namespaces", "pods", "secrets", "deployments.apps", "widgets.example.com"},
			wantWarnings: []string{"--include configmaps matches nothing --all leaves out (events, leases)", "--include frobs matches nothing --all leaves out (events, leases)", "--exclude secretz matches no resource the server lists", "--exclude secrets.apps matches no resource the server lists"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, warnings := selectAll(fakeDiscovery(), tc.sel)
			var got []string
			for _, r := range res {
				got = append(got, resourceName(r.gvr))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selectAll(%+v) resources (-want +got):\n%s", tc.sel, diff)
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("selectAll(%+v) warnings (-want +got):\n%s", tc.sel, diff)
			}
		})
	}
}

func TestSelectAllKeepsTheVersionAndScopeDiscoveryGives(t *testing.T) {
	res, _ := selectAll(fakeDiscovery(), allSelection{exclude: []string{"core", "example.com"}})
	want := []resource{{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, namespaced: true}}
	if diff := cmp.Diff(want, res, cmp.AllowUnexported(resource{})); diff != "" {
		t.Errorf("selectAll (-want +got):\n%s", diff)
	}
}
