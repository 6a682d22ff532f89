package timeline_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
)

// listed returns the sealed timeline of collection path whose one recorded
// list (at resourceVersion 100) holds items, given as "ns/name" ("/name"
// for a cluster-scoped object), each labelled n=its index.
func listed(t *testing.T, path string, items ...string) *timeline.Timeline {
	t.Helper()
	rp, ok := apipath.Parse(path)
	if !ok {
		t.Fatalf("%s is not a collection's path", path)
	}
	tl := timeline.New(path, rp)
	var objs []string
	for i, key := range items {
		ns, name, _ := strings.Cut(key, "/")
		objs = append(objs, fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q,"resourceVersion":"%d","labels":{"n":"%d"}}}`, name, ns, 10+i, i))
	}
	list := &cassettes.Interaction{ID: 1, Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndEOF},
		Frames: []cassettes.Frame{{Data: []byte(`{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + strings.Join(objs, ",") + `]}`)}}}
	s := tl.Stream(list, nil, url.Values{"limit": {"500"}}, timeline.JSON)
	s.Observe(0, list.Frames[0])
	tl.Seal()
	if b := tl.Broken(); b != "" {
		t.Fatal(b)
	}
	return tl
}

// startKey is the start key a continue token holds.
func startKey(t *testing.T, tok string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Start string `json:"start"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	return c.Start
}

// TestEveryScopePagesThroughItsOwnTokens pages each kind of collection
// with the tokens the replay hands out, and checks each token holds the
// start key kube-apiserver v1.37.2 writes for that scope (a cluster-scoped
// list's tokens were the regression: "//name").
func TestEveryScopePagesThroughItsOwnTokens(t *testing.T) {
	clusterRoles := []string{"/admin", "/system:aggregate-to-edit", "/system:controller:job-controller", "/system:kube-dns", "/view", "/x.y.z"}
	configMaps := []string{"a/cm.1", "a/cm.2", "a/kube-root-ca.crt", "b/cm.1", "b/x-y", "kube-system/extension-apiserver-authentication"}
	for _, tc := range []struct {
		name, path string
		items      []string
		ns         string // the request's namespace on an all-namespaces timeline
		query      url.Values
		want       []string // the items listed, in order
		firstStart string   // the start key of the first page's token, with limit 2
	}{
		{name: "a cluster-scoped list, names with colons and dots",
			path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", items: clusterRoles,
			want: clusterRoles, firstStart: "/system:aggregate-to-edit\x00"},
		{name: "a cluster-scoped list with a label selector",
			path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", items: clusterRoles,
			query: url.Values{"labelSelector": {"n in (1,2,4,5)"}},
			want:  []string{"/system:aggregate-to-edit", "/system:controller:job-controller", "/view", "/x.y.z"}, firstStart: "/system:controller:job-controller\x00"},
		{name: "a cluster-scoped list with a field selector",
			path: "/apis/rbac.authorization.k8s.io/v1/clusterroles", items: clusterRoles,
			query: url.Values{"fieldSelector": {"metadata.name!=admin"}},
			want:  clusterRoles[1:], firstStart: "/system:controller:job-controller\x00"},
		{name: "namespaces, a cluster-scoped list whose objects have no namespace",
			path: "/api/v1/namespaces", items: []string{"/default", "/kube-node-lease", "/kube-public", "/kube-system"},
			want: []string{"/default", "/kube-node-lease", "/kube-public", "/kube-system"}, firstStart: "/kube-node-lease\x00"},
		{name: "a list across namespaces",
			path: "/api/v1/configmaps", items: configMaps,
			want: configMaps, firstStart: "/a/cm.2\x00"},
		{name: "a list across namespaces with a field selector on the namespace",
			path: "/api/v1/configmaps", items: configMaps,
			query: url.Values{"fieldSelector": {"metadata.namespace!=a"}},
			want:  configMaps[3:], firstStart: "/b/x-y\x00"},
		{name: "a list in one namespace served from a timeline across namespaces",
			path: "/api/v1/configmaps", items: configMaps, ns: "a",
			want: configMaps[:3], firstStart: "/cm.2\x00"},
		{name: "a list in one namespace",
			path: "/api/v1/namespaces/a/configmaps", items: configMaps[:3],
			want: configMaps[:3], firstStart: "/cm.2\x00"},
		{name: "a list in one namespace with a label selector",
			path: "/api/v1/namespaces/a/configmaps", items: append(configMaps[:3:3], "a/z.z"),
			query: url.Values{"labelSelector": {"n!=1"}},
			want:  []string{"a/cm.1", "a/kube-root-ca.crt", "a/z.z"}, firstStart: "/kube-root-ca.crt\x00"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := listed(t, tc.path, tc.items...)
			for _, limit := range []int{1, 2, 10} {
				q := url.Values{"limit": {strconv.Itoa(limit)}}
				for k, v := range tc.query {
					q[k] = v
				}
				sel, err := tl.Selector(q, tc.ns, nil)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for page := 1; ; page++ {
					l, err := tl.List(q, sel)
					if err != nil {
						t.Fatalf("limit %d, page %d: %v", limit, page, err)
					}
					for _, o := range l.Items {
						got = append(got, o.Key)
					}
					if page == 1 && limit == 2 {
						if s := startKey(t, l.Continue); s != tc.firstStart {
							t.Errorf("the first page's token starts at %q, want %q as kube-apiserver writes it", s, tc.firstStart)
						}
					}
					if l.Continue == "" {
						break
					}
					if l.RV != 100 {
						t.Errorf("limit %d, page %d: at resourceVersion %d, want 100", limit, page, l.RV)
					}
					q.Set("continue", l.Continue)
				}
				if d := cmp.Diff(tc.want, got); d != "" {
					t.Errorf("paged by %d (-want +got):\n%s", limit, d)
				}
			}
		})
	}
}

// TestATokenKubeApiserverWroteForAClusterScopedListResumesAfterItsKey
// reads the token a live kube-apiserver v1.37.2 handed out for `kubectl
// get clusterroles --chunk-size=2` (its first page ended at
// system:aggregate-to-admin), and the same key as etcd's store writes it.
func TestATokenKubeApiserverWroteForAClusterScopedListResumesAfterItsKey(t *testing.T) {
	tl := listed(t, "/apis/rbac.authorization.k8s.io/v1/clusterroles", "/admin", "/system:aggregate-to-admin", "/system:aggregate-to-edit")
	for _, start := range []string{"/system:aggregate-to-admin\x00", "system:aggregate-to-admin\x00"} {
		q := url.Values{"limit": {"2"}, "continue": {token(100, start)}}
		sel, err := tl.Selector(q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		l, err := tl.List(q, sel)
		if err != nil {
			t.Fatalf("start %q: %v", start, err)
		}
		if len(l.Items) != 1 || l.Items[0].Key != "/system:aggregate-to-edit" || l.Continue != "" {
			t.Errorf("start %q: listed %v continue %q, want /system:aggregate-to-edit and no token", start, l.Items, l.Continue)
		}
	}
}

// TestWrittenObjectsOfACollectionNeverRecordedPageAcrossNamespaces: a
// timeline made empty for writes holds no recorded object to tell its
// scope by; its pages are the keys' own.
func TestWrittenObjectsOfACollectionNeverRecordedPageAcrossNamespaces(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		keys       []string
	}{
		{"namespaced objects across namespaces", "/apis/apps/v1/statefulsets", []string{"a/s1", "b/s1", "b/s2"}},
		{"cluster-scoped objects", "/apis/rbac.authorization.k8s.io/v1/clusterroles", []string{"/r:1", "/r:2", "/r:3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp, _ := apipath.Parse(tc.path)
			tl := timeline.Empty(tc.path, rp, "X", 100, true)
			base := int64(0)
			for _, key := range tc.keys {
				ns, name, _ := strings.Cut(key, "/")
				rv, _, err := tl.Commit("ADDED", key, "", 0, []byte(fmt.Sprintf(`{"metadata":{"name":%q,"namespace":%q}}`, name, ns)))
				if err != nil {
					t.Fatal(err)
				}
				base = rv
			}
			tl.Advance(base)
			q := url.Values{"limit": {"1"}}
			sel, err := tl.Selector(q, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for {
				l, err := tl.List(q, sel)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range l.Items {
					got = append(got, o.Key)
				}
				if l.Continue == "" {
					break
				}
				q.Set("continue", l.Continue)
			}
			if d := cmp.Diff(tc.keys, got); d != "" {
				t.Errorf("paged by 1 (-want +got):\n%s", d)
			}
		})
	}
}
