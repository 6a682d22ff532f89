package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
)

// discoveryServer serves a small cluster's legacy discovery, as an API
// server without the aggregated form does: ConfigMaps (cm), Pods (po, in
// the all category) and Namespaces (ns, cluster-scoped) in the core group,
// Deployments (deploy, in all) in apps/v1. Every other path is a 404.
func discoveryServer(t *testing.T) *httptest.Server {
	t.Helper()
	verbs := metav1.Verbs{"get", "list", "watch"}
	docs := map[string]any{
		"/api":  metav1.APIVersions{Versions: []string{"v1"}},
		"/apis": metav1.APIGroupList{Groups: []metav1.APIGroup{{Name: "apps", Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}}}},
		"/api/v1": metav1.APIResourceList{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "configmaps", SingularName: "configmap", Namespaced: true, Kind: "ConfigMap", Verbs: verbs, ShortNames: []string{"cm"}},
			{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: verbs, ShortNames: []string{"po"}, Categories: []string{"all"}},
			{Name: "namespaces", SingularName: "namespace", Kind: "Namespace", Verbs: verbs, ShortNames: []string{"ns"}},
		}},
		"/apis/apps/v1": metav1.APIResourceList{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: verbs, ShortNames: []string{"deploy"}, Categories: []string{"all"}},
		}},
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// noKubeconfig makes the test see no kubeconfig and no home, whatever the
// machine has.
func noKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", filepath.Join(t.TempDir(), "no-kubeconfig"))
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECACHEDIR", "")
}

func TestResolveResources(t *testing.T) {
	noKubeconfig(t)
	srv := discoveryServer(t)
	cm := resource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, namespaced: true}
	po := resource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "pods"}, namespaced: true}
	ns := resource{gvr: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}}
	deploy := resource{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, namespaced: true}
	for _, tc := range []struct {
		name    string
		args    []string
		want    []resource
		wantErr string
	}{
		{name: "a plural names its resource", args: []string{"configmaps"}, want: []resource{cm}},
		{name: "a singular names its resource", args: []string{"configmap"}, want: []resource{cm}},
		{name: "a short name names its resource", args: []string{"cm"}, want: []resource{cm}},
		{name: "a kind names its resource", args: []string{"ConfigMap"}, want: []resource{cm}},
		{name: "upper case is lowered as kubectl lowers it", args: []string{"CONFIGMAPS"}, want: []resource{cm}},
		{name: "resource.group names the group", args: []string{"deployments.apps"}, want: []resource{deploy}},
		{name: "a short name with its group names the group", args: []string{"deploy.apps"}, want: []resource{deploy}},
		{name: "resource.version.group with the core group's empty name", args: []string{"configmaps.v1."}, want: []resource{cm}},
		{name: "resource.version.group", args: []string{"deployments.v1.apps"}, want: []resource{deploy}},
		{name: "kind.version.group", args: []string{"Deployment.v1.apps"}, want: []resource{deploy}},
		{name: "a comma list names each in order", args: []string{"cm,deploy"}, want: []resource{cm, deploy}},
		{name: "separate arguments name each in order", args: []string{"deploy", "cm"}, want: []resource{deploy, cm}},
		{name: "a resource named twice comes once", args: []string{"cm,configmaps", "configmaps.v1."}, want: []resource{cm}},
		{name: "a category expands to its resources as kubectl get all does", args: []string{"all"}, want: []resource{po, deploy}},
		{name: "a cluster-scoped resource is not namespaced", args: []string{"ns"}, want: []resource{ns}},
		{name: "an unknown name is kubectl's error", args: []string{"frobs"}, wantErr: `the server doesn't have a resource type "frobs"`},
		{name: "an unknown name in a list fails the list", args: []string{"cm,frobs"}, wantErr: `the server doesn't have a resource type "frobs"`},
		{name: "a resource in another group is kubectl's error", args: []string{"configmaps.apps"}, wantErr: `the server doesn't have a resource type "configmaps" in group "apps"`},
		{name: "an unserved version reads as a group, as kubectl reads it", args: []string{"configmaps.v2."}, wantErr: `the server doesn't have a resource type "configmaps" in group "v2."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flags := genericclioptions.NewConfigFlags(true)
			*flags.APIServer = srv.URL
			*flags.CacheDir = t.TempDir()
			got, err := resolveResources(flags, tc.args)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("resolveResources(%q) = %v, %v; want the error %q", tc.args, got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("resolveResources(%q): %v", tc.args, err)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(resource{})); d != "" {
				t.Errorf("resolveResources(%q) (-want +got):\n%s", tc.args, d)
			}
		})
	}
}
