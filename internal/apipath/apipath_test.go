package apipath_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/apipath"
)

func TestPathsSplitAsTheAPIServerRoutesThem(t *testing.T) {
	tests := []struct {
		name, path string
		want       apipath.Path
		ok         bool
		collection string
	}{
		{"a namespaced core collection", "/api/v1/namespaces/default/configmaps", apipath.Path{Version: "v1", Namespace: "default", Resource: "configmaps"}, true, "/api/v1/namespaces/default/configmaps"},
		{"a named object in a group", "/apis/apps/v1/namespaces/web/deployments/d", apipath.Path{Group: "apps", Version: "v1", Namespace: "web", Resource: "deployments", Name: "d"}, true, "/apis/apps/v1/namespaces/web/deployments"},
		{"the namespaces themselves", "/api/v1/namespaces", apipath.Path{Version: "v1", Resource: "namespaces"}, true, "/api/v1/namespaces"},
		{"one namespace", "/api/v1/namespaces/kube-system", apipath.Path{Version: "v1", Resource: "namespaces", Name: "kube-system"}, true, "/api/v1/namespaces"},
		{"a subresource is not a resource path", "/api/v1/namespaces/default/pods/p/log", apipath.Path{}, false, ""},
		{"discovery is not a resource path", "/apis/apps", apipath.Path{}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := apipath.Parse(tt.path)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tt.ok, got)
			}
			if !ok {
				return
			}
			if got != tt.want {
				t.Errorf("Parse = %+v, want %+v", got, tt.want)
			}
			if c := got.Collection(); c != tt.collection {
				t.Errorf("Collection = %q, want %q", c, tt.collection)
			}
		})
	}
}
