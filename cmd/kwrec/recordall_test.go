package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
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

// refusingServer is an API server that answers lists and watches of
// ConfigMaps, forbids listing Secrets and watching Pods, refuses any field
// selector on Deployments, and whose things.broken.example.com is down.
func refusingServer(t *testing.T) *httptest.Server {
	t.Helper()
	status := func(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code), Reason: reason, Message: msg})
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		watching := r.URL.Query().Get("watch") == "true"
		switch {
		case r.URL.Path == "/api/v1/secrets":
			status(w, 403, metav1.StatusReasonForbidden, `secrets is forbidden: User "system:serviceaccount:kwrec:kwrec" cannot list resource "secrets" in API group "" at the cluster scope`)
			return
		case r.URL.Path == "/api/v1/pods" && watching:
			status(w, 403, metav1.StatusReasonForbidden, `pods is forbidden: User "u" cannot watch resource "pods"`)
			return
		case r.URL.Path == "/apis/apps/v1/deployments" && r.URL.Query().Get("fieldSelector") != "":
			status(w, 400, metav1.StatusReasonBadRequest, `"spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`)
			return
		case strings.HasPrefix(r.URL.Path, "/apis/broken.example.com/"):
			status(w, 503, metav1.StatusReasonServiceUnavailable, "the server is currently unable to handle the request")
			return
		}
		w.Header().Set("Content-Type", "application/json")
		if watching {
			w.WriteHeader(200)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // open until the probe closes it
			return
		}
		fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeAllSkipsWhatTheServerRefusesWithItsReason(t *testing.T) {
	srv := refusingServer(t)
	gvr := func(group, resource string) schema.GroupVersionResource {
		return schema.GroupVersionResource{Group: group, Version: "v1", Resource: resource}
	}
	res := []resource{
		{gvr: gvr("", "configmaps"), namespaced: true},
		{gvr: gvr("", "pods"), namespaced: true},
		{gvr: gvr("", "secrets"), namespaced: true},
		{gvr: gvr("apps", "deployments"), namespaced: true},
		{gvr: gvr("broken.example.com", "things")},
	}
	for _, tc := range []struct {
		name        string
		fieldSel    string
		wantOK      []string
		wantSkipped []string
	}{
		{name: "forbidden lists and watches and a down API are skipped with why",
			wantOK: []string{"configmaps", "deployments.apps"},
			wantSkipped: []string{"pods: forbidden (watch)", "secrets: forbidden (list)",
				"things.broken.example.com: 503 ServiceUnavailable (list): the server is currently unable to handle the request"}},
		{name: "a field selector a resource refuses skips it with the server's message",
			fieldSel: "spec.nodeName=n1",
			wantOK:   []string{"configmaps"},
			wantSkipped: []string{"pods: forbidden (watch)", "secrets: forbidden (list)",
				`deployments.apps: --field-selector refused (list): "spec.nodeName" is not a known field selector: only "metadata.name", "metadata.namespace"`,
				"things.broken.example.com: 503 ServiceUnavailable (list): the server is currently unable to handle the request"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, skipped, err := probeAll(context.Background(), &rest.Config{Host: srv.URL}, res, "", "", tc.fieldSel)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range ok {
				got = append(got, resourceName(r.gvr))
			}
			if diff := cmp.Diff(tc.wantOK, got); diff != "" {
				t.Errorf("recorded (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSkipped, skipped); diff != "" {
				t.Errorf("skipped (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbeAllFailsWhenTheServerCannotBeReached(t *testing.T) {
	srv := refusingServer(t)
	srv.Close()
	res := []resource{{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, namespaced: true}}
	_, _, err := probeAll(context.Background(), &rest.Config{Host: srv.URL}, res, "", "", "")
	want := fmt.Sprintf(`configmaps: Get "%s/api/v1/configmaps?limit=1": dial tcp %s: connect: connection refused`, srv.URL, strings.TrimPrefix(srv.URL, "http://"))
	if err == nil || err.Error() != want {
		t.Errorf("probeAll against a closed server: %v, want %s", err, want)
	}
}

func TestDiscoverAllSkipsAGroupWhoseDiscoveryFails(t *testing.T) {
	verbs := metav1.Verbs{"get", "list", "watch"}
	gv := func(g string) metav1.GroupVersionForDiscovery {
		return metav1.GroupVersionForDiscovery{GroupVersion: g + "/v1", Version: "v1"}
	}
	docs := map[string]any{
		"/api": metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{Groups: []metav1.APIGroup{
			{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{gv("apps")}, PreferredVersion: gv("apps")},
			{Name: "broken.example.com", Versions: []metav1.GroupVersionForDiscovery{gv("broken.example.com")}, PreferredVersion: gv("broken.example.com")},
		}},
		"/api/v1":       metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: verbs}}},
		"/apis/apps/v1": metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: verbs}}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	defer srv.Close()
	lists, skipped, err := discoverAll(context.Background(), &rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	res, _ := selectAll(lists, allSelection{})
	var got []string
	for _, r := range res {
		got = append(got, resourceName(r.gvr))
	}
	if diff := cmp.Diff([]string{"configmaps", "deployments.apps"}, got); diff != "" {
		t.Errorf("resources (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"broken.example.com/v1: discovery failed: the server is currently unable to handle the request"}, skipped); diff != "" {
		t.Errorf("skipped (-want +got):\n%s", diff)
	}
}
