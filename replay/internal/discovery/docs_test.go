package discovery_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"

	"github.com/kwrec/kwrec/replay/internal/discovery"
)

// Accept headers seen on the wire.
const (
	// clientGoAccept is what client-go 1.37's discovery client sends.
	clientGoAccept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
	// kubectl132Accept is what kubectl 1.32 sends.
	kubectl132Accept = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
	aggregatedType   = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)

func builtin(t *testing.T) *discovery.Docs {
	t.Helper()
	d, err := discovery.Builtin()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// decode decodes body into a new T, failing t if it does not decode.
func decode[T any](t *testing.T, body []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("decoding %T: %v\n%.300s", v, err, body)
	}
	return v
}

func findResource(t *testing.T, list metav1.APIResourceList, name string) metav1.APIResource {
	t.Helper()
	i := slices.IndexFunc(list.APIResources, func(r metav1.APIResource) bool { return r.Name == name })
	if i < 0 {
		t.Fatalf("%s has no %s", list.GroupVersion, name)
	}
	return list.APIResources[i]
}

func findAggregated(t *testing.T, list apidiscoveryv2.APIGroupDiscoveryList, group, ver, resource string) apidiscoveryv2.APIResourceDiscovery {
	t.Helper()
	for _, g := range list.Items {
		for _, v := range g.Versions {
			for _, r := range v.Resources {
				if g.Name == group && v.Version == ver && r.Resource == resource {
					return r
				}
			}
		}
	}
	t.Fatalf("the aggregated list has no %s in %s/%s", resource, group, ver)
	return apidiscoveryv2.APIResourceDiscovery{}
}

// notFound is the body the API server sends for a path nothing serves.
const notFound = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"the server could not find the requested resource","reason":"NotFound","details":{},"code":404}` + "\n"

func TestAnswer(t *testing.T) {
	d := builtin(t)
	tests := []struct {
		name, path, accept string
		wantStatus         int
		wantType           string
		check              func(t *testing.T, body []byte)
	}{
		{"/version is kube-apiserver v1.37.2", "/version", "application/json, */*", 200, "application/json", func(t *testing.T, b []byte) {
			if v := decode[version.Info](t, b); v.GitVersion != "v1.37.2" || v.Major != "1" || v.Minor != "37" {
				t.Errorf("version %+v", v)
			}
		}},
		{"/api lists v1 at the request's host", "/api", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			want := metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"},
				ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "127.0.0.1:6443"}}}
			if diff := cmp.Diff(want, decode[metav1.APIVersions](t, b)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		}},
		{"/api/v1 gives configmaps the short name cm and pods the category all", "/api/v1", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			list := decode[metav1.APIResourceList](t, b)
			if cm := findResource(t, list, "configmaps"); !slices.Equal(cm.ShortNames, []string{"cm"}) || cm.Kind != "ConfigMap" || !cm.Namespaced {
				t.Errorf("configmaps: %+v", cm)
			}
			if po := findResource(t, list, "pods"); !slices.Equal(po.Categories, []string{"all"}) || !slices.Equal(po.ShortNames, []string{"po"}) {
				t.Errorf("pods: %+v", po)
			}
		}},
		{"a query and a trailing slash are ignored", "/api/v1/?timeout=32s", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			findResource(t, decode[metav1.APIResourceList](t, b), "configmaps")
		}},
		{"/apis lists apps with v1 preferred", "/apis", "", 200, "application/json", func(t *testing.T, b []byte) {
			list := decode[metav1.APIGroupList](t, b)
			i := slices.IndexFunc(list.Groups, func(g metav1.APIGroup) bool { return g.Name == "apps" })
			if i < 0 || list.Groups[i].PreferredVersion.GroupVersion != "apps/v1" {
				t.Errorf("apps in /apis: %+v", list.Groups)
			}
		}},
		{"/apis/apps is the apps group", "/apis/apps", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			if g := decode[metav1.APIGroup](t, b); g.Kind != "APIGroup" || g.Name != "apps" {
				t.Errorf("group %+v", g)
			}
		}},
		{"/apis/apps/v1 gives deployments the short name deploy", "/apis/apps/v1", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			if dep := findResource(t, decode[metav1.APIResourceList](t, b), "deployments"); !slices.Equal(dep.ShortNames, []string{"deploy"}) {
				t.Errorf("deployments: %+v", dep)
			}
		}},
		{"client-go's Accept gets the aggregated /apis", "/apis", clientGoAccept, 200, aggregatedType, func(t *testing.T, b []byte) {
			list := decode[apidiscoveryv2.APIGroupDiscoveryList](t, b)
			if dep := findAggregated(t, list, "apps", "v1", "deployments"); dep.Scope != apidiscoveryv2.ScopeNamespace {
				t.Errorf("deployments: %+v", dep)
			}
		}},
		{"kubectl 1.32's Accept gets the aggregated /api", "/api", kubectl132Accept, 200, aggregatedType, func(t *testing.T, b []byte) {
			list := decode[apidiscoveryv2.APIGroupDiscoveryList](t, b)
			if cm := findAggregated(t, list, "", "v1", "configmaps"); !slices.Equal(cm.ShortNames, []string{"cm"}) {
				t.Errorf("configmaps: %+v", cm)
			}
		}},
		{"a higher q for JSON gets the legacy /apis", "/apis", "application/json;q=1," + aggregatedType + ";q=0.5", 200, "application/json", func(t *testing.T, b []byte) {
			decode[metav1.APIGroupList](t, b)
		}},
		{"a protobuf Accept gets JSON", "/api/v1", "application/vnd.kubernetes.protobuf, */*", 200, "application/json", func(t *testing.T, b []byte) {
			findResource(t, decode[metav1.APIResourceList](t, b), "configmaps")
		}},
		{"the aggregated Accept on a group version gets its legacy list", "/apis/apps/v1", clientGoAccept, 200, "application/json", func(t *testing.T, b []byte) {
			findResource(t, decode[metav1.APIResourceList](t, b), "deployments")
		}},
		{"/openapi/v3 indexes api/v1 with a hash, in plain text as the server does", "/openapi/v3", "application/json", 200, "text/plain; charset=utf-8", func(t *testing.T, b []byte) {
			idx := decode[struct {
				Paths map[string]struct {
					URL string `json:"serverRelativeURL"`
				} `json:"paths"`
			}](t, b)
			if u := idx.Paths["api/v1"].URL; !strings.HasPrefix(u, "/openapi/v3/api/v1?hash=") {
				t.Errorf("api/v1 is at %q", u)
			}
		}},
		{"/openapi/v3/api/v1 ignores its hash and documents ConfigMap.data", "/openapi/v3/api/v1?hash=0123", "application/json", 200, "application/json", func(t *testing.T, b []byte) {
			doc := decode[struct {
				Components struct {
					Schemas map[string]struct {
						Properties map[string]struct {
							Description string `json:"description"`
						} `json:"properties"`
					} `json:"schemas"`
				} `json:"components"`
			}](t, b)
			if desc := doc.Components.Schemas["io.k8s.api.core.v1.ConfigMap"].Properties["data"].Description; !strings.HasPrefix(desc, "Data contains the configuration data.") {
				t.Errorf("ConfigMap.data: %q", desc)
			}
		}},
		{"an unknown group version is a 404 Status", "/apis/example.com/v1", "application/json", 404, "application/json", nil},
		{"an unknown group is a 404 Status", "/apis/example.com", "application/json", 404, "application/json", nil},
		{"an unknown core version is a 404 Status", "/api/v2", "application/json", 404, "application/json", nil},
		{"an unknown OpenAPI document is a 404 Status", "/openapi/v3/apis/example.com/v1", "application/json", 404, "application/json", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ctype, body, ok := d.Answer(tt.path, tt.accept, "127.0.0.1:6443")
			if !ok || !discovery.IsPath(tt.path) {
				t.Fatalf("Answer(%q) is not a discovery answer (IsPath %v)", tt.path, discovery.IsPath(tt.path))
			}
			if status != tt.wantStatus || ctype != tt.wantType {
				t.Fatalf("Answer(%q): %d %s, want %d %s", tt.path, status, ctype, tt.wantStatus, tt.wantType)
			}
			if tt.check != nil {
				tt.check(t, body)
				return
			}
			if diff := cmp.Diff(notFound, string(body)); diff != "" {
				t.Errorf("the 404 body (-want +got):\n%s", diff)
			}
			st := decode[metav1.Status](t, body)
			if st.Kind != "Status" || st.Reason != metav1.StatusReasonNotFound || st.Code != http.StatusNotFound {
				t.Errorf("status %+v", st)
			}
		})
	}
}

func TestAnswerLeavesOtherPaths(t *testing.T) {
	d := builtin(t)
	for _, path := range []string{
		"/",
		"/api/v1/namespaces/default/configmaps",
		"/api/v1/configmaps",
		"/apis/apps/v1/deployments",
		"/healthz",
		"/openapi",
		"/.well-known/openid-configuration",
		"/aggregated/apis",
	} {
		t.Run(path+" is not discovery", func(t *testing.T) {
			if status, _, _, ok := d.Answer(path, "application/json", ""); ok {
				t.Errorf("Answer(%q) answered %d", path, status)
			}
			if discovery.IsPath(path) {
				t.Errorf("IsPath(%q) is true", path)
			}
		})
	}
}

func TestAnswerWithoutHostNamesLocalhost(t *testing.T) {
	_, _, body, _ := builtin(t).Answer("/api", "", "")
	got := decode[metav1.APIVersions](t, body).ServerAddressByClientCIDRs
	if want := []metav1.ServerAddressByClientCIDR{{ClientCIDR: "0.0.0.0/0", ServerAddress: "localhost"}}; !cmp.Equal(got, want) {
		t.Errorf("serverAddressByClientCIDRs %+v, want %+v", got, want)
	}
}

// widget is a namespaced CRD resource in a group the snapshot lacks.
var widget = discovery.Resource{Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true}

func TestWith(t *testing.T) {
	d := builtin(t)
	get := func(t *testing.T, d *discovery.Docs, path, accept string) []byte {
		t.Helper()
		status, _, body, ok := d.Answer(path, accept, "h:1")
		if !ok || status != http.StatusOK {
			t.Fatalf("Answer(%q): %d, %v: %s", path, status, ok, body)
		}
		return body
	}
	tests := []struct {
		name  string
		extra []discovery.Resource
		check func(t *testing.T, d *discovery.Docs)
	}{
		{"a CRD in a new group is in every legacy and aggregated document", []discovery.Resource{widget}, func(t *testing.T, d *discovery.Docs) {
			list := decode[metav1.APIGroupList](t, get(t, d, "/apis", ""))
			want := metav1.APIGroup{Name: "example.com",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "example.com/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "example.com/v1", Version: "v1"}}
			if diff := cmp.Diff(want, list.Groups[len(list.Groups)-1]); diff != "" {
				t.Errorf("the last group of /apis (-want +got):\n%s", diff)
			}
			want.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			if diff := cmp.Diff(want, decode[metav1.APIGroup](t, get(t, d, "/apis/example.com", ""))); diff != "" {
				t.Errorf("/apis/example.com (-want +got):\n%s", diff)
			}
			wantList := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "example.com/v1",
				APIResources: []metav1.APIResource{{Name: "widgets", SingularName: "widget", Namespaced: true, Kind: "Widget", Verbs: []string{"get", "list", "watch"}}}}
			if diff := cmp.Diff(wantList, decode[metav1.APIResourceList](t, get(t, d, "/apis/example.com/v1", ""))); diff != "" {
				t.Errorf("/apis/example.com/v1 (-want +got):\n%s", diff)
			}
			wantAgg := apidiscoveryv2.APIResourceDiscovery{Resource: "widgets", SingularResource: "widget", Scope: apidiscoveryv2.ScopeNamespace,
				Verbs: []string{"get", "list", "watch"}, ResponseKind: &metav1.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}}
			agg := decode[apidiscoveryv2.APIGroupDiscoveryList](t, get(t, d, "/apis", clientGoAccept))
			if diff := cmp.Diff(wantAgg, findAggregated(t, agg, "example.com", "v1", "widgets")); diff != "" {
				t.Errorf("the aggregated widgets (-want +got):\n%s", diff)
			}
		}},
		{"versions of a new group are ordered by priority, the GA one preferred", []discovery.Resource{
			{Group: "example.com", Version: "v1alpha1", Resource: "gadgets", Kind: "Gadget", Verbs: []string{"get"}},
			widget,
			{Group: "example.com", Version: "v1beta1", Resource: "widgets", Kind: "Widget", Namespaced: true},
		}, func(t *testing.T, d *discovery.Docs) {
			g := decode[metav1.APIGroup](t, get(t, d, "/apis/example.com", ""))
			var got []string
			for _, v := range g.Versions {
				got = append(got, v.Version)
			}
			if want := []string{"v1", "v1beta1", "v1alpha1"}; !slices.Equal(got, want) || g.PreferredVersion.Version != "v1" {
				t.Errorf("versions %v preferring %s, want %v preferring v1", got, g.PreferredVersion.Version, want)
			}
			agg := decode[apidiscoveryv2.APIGroupDiscoveryList](t, get(t, d, "/apis", clientGoAccept))
			got = nil
			for _, v := range agg.Items[len(agg.Items)-1].Versions {
				got = append(got, v.Version)
			}
			if want := []string{"v1", "v1beta1", "v1alpha1"}; !slices.Equal(got, want) {
				t.Errorf("aggregated versions %v, want %v", got, want)
			}
			if r := findAggregated(t, agg, "example.com", "v1alpha1", "gadgets"); r.Scope != apidiscoveryv2.ScopeCluster || !slices.Equal(r.Verbs, []string{"get"}) {
				t.Errorf("gadgets: %+v", r)
			}
		}},
		{"a resource already listed keeps the snapshot's entry", []discovery.Resource{{Version: "v1", Resource: "configmaps", Kind: "ConfigMap"}}, func(t *testing.T, got *discovery.Docs) {
			for _, p := range []string{"/api/v1", "/api", "/apis"} {
				for _, accept := range []string{"", clientGoAccept} {
					if string(get(t, got, p, accept)) != string(get(t, d, p, accept)) {
						t.Errorf("%s (Accept %q) changed", p, accept)
					}
				}
			}
		}},
		{"a new resource in a built-in group version is added to it", []discovery.Resource{{Group: "apps", Version: "v1", Resource: "widgets", Kind: "Widget"}}, func(t *testing.T, d *discovery.Docs) {
			list := decode[metav1.APIResourceList](t, get(t, d, "/apis/apps/v1", ""))
			findResource(t, list, "deployments")
			if w := findResource(t, list, "widgets"); w.Namespaced {
				t.Errorf("widgets: %+v", w)
			}
			findAggregated(t, decode[apidiscoveryv2.APIGroupDiscoveryList](t, get(t, d, "/apis", clientGoAccept)), "apps", "v1", "widgets")
		}},
		{"a new core resource is added to /api/v1 and the aggregated /api", []discovery.Resource{{Version: "v1", Resource: "gizmos", Kind: "Gizmo", Namespaced: true}}, func(t *testing.T, d *discovery.Docs) {
			findResource(t, decode[metav1.APIResourceList](t, get(t, d, "/api/v1", "")), "gizmos")
			findAggregated(t, decode[apidiscoveryv2.APIGroupDiscoveryList](t, get(t, d, "/api", clientGoAccept)), "", "v1", "gizmos")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := d.With(tt.extra)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, got)
		})
	}
	t.Run("the receiver is unchanged", func(t *testing.T) {
		if status, _, _, _ := d.Answer("/apis/example.com/v1", "", ""); status != http.StatusNotFound {
			t.Errorf("/apis/example.com/v1 on the receiver: %d, want 404", status)
		}
	})
}

func TestWithRejectsIncompleteResources(t *testing.T) {
	d := builtin(t)
	tests := []struct {
		name    string
		r       discovery.Resource
		wantErr string
	}{
		{"a resource without a version", discovery.Resource{Group: "example.com", Resource: "widgets", Kind: "Widget"},
			`discovery: invalid resource "widgets": no version`},
		{"a resource without a name", discovery.Resource{Group: "example.com", Version: "v1", Kind: "Widget"},
			`discovery: invalid resource "" in example.com/v1: want a plural name without a slash`},
		{"a subresource", discovery.Resource{Group: "example.com", Version: "v1", Resource: "widgets/status", Kind: "Widget"},
			`discovery: invalid resource "widgets/status" in example.com/v1: want a plural name without a slash`},
		{"a resource without a kind", discovery.Resource{Version: "v1", Resource: "gizmos"},
			`discovery: invalid resource "gizmos" in v1: no kind`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := d.With([]discovery.Resource{widget, tt.r})
			if err == nil || err.Error() != tt.wantErr || !errors.Is(err, discovery.ErrInvalidResource) {
				t.Errorf("With: %v, want %s (an ErrInvalidResource)", err, tt.wantErr)
			}
		})
	}
}
