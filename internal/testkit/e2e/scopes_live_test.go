package e2e_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// The scopes scenario: a collection of each scope longer than several
// pages, with names holding ':' and '.'.
const (
	scopeRoles      = 30 // ClusterRoles kwrec:paging:role-NN (beside the server's own, about 70)
	scopeNamespaces = 8  // namespaces paging-N, beside the server's four
	scopeConfigMaps = 25 // ConfigMaps cm.NN in paging-0, every third labelled tier=gold
)

// scopeLister lists one collection with client-go, as a typed client
// would, for the pager.
type scopeLister func(ctx context.Context, cs kubernetes.Interface, o metav1.ListOptions) (runtime.Object, error)

// scopeListers are the scopes paged with client-go's pager, by name.
var scopeListers = map[string]scopeLister{
	"clusterroles": func(ctx context.Context, cs kubernetes.Interface, o metav1.ListOptions) (runtime.Object, error) {
		return cs.RbacV1().ClusterRoles().List(ctx, o)
	},
	"namespaces": func(ctx context.Context, cs kubernetes.Interface, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Namespaces().List(ctx, o)
	},
	"configmaps across namespaces": func(ctx context.Context, cs kubernetes.Interface, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps("").List(ctx, o)
	},
	"configmaps in paging-0": func(ctx context.Context, cs kubernetes.Interface, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps("paging-0").List(ctx, o)
	},
}

// scopeReads are the kubectl commands compared live and through kwrec
// serve: each scope paged by 1, 2 and 10, as names, with selectors, and
// described in pages.
func scopeReads() [][]string {
	var reads [][]string
	for _, chunk := range []string{"1", "2", "10"} {
		for _, what := range [][]string{{"clusterroles"}, {"namespaces"}, {"configmaps", "-A"}, {"configmaps", "-n", "paging-0"}} {
			reads = append(reads, append(slices.Clone(what), "--chunk-size="+chunk))
		}
	}
	return append(reads,
		[]string{"clusterroles", "-o", "name", "--chunk-size=10"},
		[]string{"namespaces", "-o", "name", "--chunk-size=2"},
		[]string{"configmaps", "-A", "-o", "name", "--chunk-size=7"},
		[]string{"configmaps", "-A", "-l", "tier=gold", "--chunk-size=2"},
		[]string{"configmaps", "-A", "--field-selector", "metadata.namespace!=paging-0", "--chunk-size=2"},
		[]string{"clusterroles", "-l", "kwrec-paging", "--chunk-size=3"},
	)
}

// scopeDescribes are the kubectl describe commands compared.
var scopeDescribes = [][]string{
	{"describe", "clusterroles", "-l", "kwrec-paging", "--chunk-size=10"},
	{"describe", "namespaces", "--chunk-size=10"},
	{"describe", "configmaps", "-n", "paging-0", "--chunk-size=10"},
}

// TestLiveEveryScopePagesAsLive records a ClusterRole, namespace and
// ConfigMap collection of several pages each with `kwrec record`, and
// pages through each with kubectl (--chunk-size 1, 2, 10, -o name,
// selectors, describe, get -w) and client-go's pager (pages of 1, 2, 10)
// through kwrec serve and in process, each compared with what it gave
// live; then records the control plane with `record --all` and pages every
// recorded collection through kwrec serve with --chunk-size=1.
func TestLiveEveryScopePagesAsLive(t *testing.T) {
	fx := fixture(t)
	cp := controlplanetest.Start(t)
	ctx := t.Context()
	fast := rest.CopyConfig(cp.Config)
	fast.QPS, fast.Burst = 500, 500
	cs := kubernetes.NewForConfigOrDie(fast)
	if err := makeScopes(ctx, cs); err != nil {
		t.Fatal(err)
	}
	t.Run("kube-apiserver's tokens hold the keys the replay's do", func(t *testing.T) {
		// The key after the page's last item, relative to the collection:
		// "/name" in a namespace or cluster-scoped, "/namespace/name"
		// across namespaces (internal/timeline's paging test holds the
		// replay's to the same).
		for name, list := range scopeListers {
			l, err := list(ctx, cs, metav1.ListOptions{Limit: 2})
			if err != nil {
				t.Fatal(err)
			}
			items, err := meta.ExtractList(l)
			if err != nil || len(items) != 2 {
				t.Fatalf("%s: a page of %d items (%v), want 2", name, len(items), err)
			}
			last, _ := meta.Accessor(items[1])
			want := "/" + last.GetName() + "\x00"
			if name == "configmaps across namespaces" {
				want = "/" + last.GetNamespace() + "/" + last.GetName() + "\x00"
			}
			lm, _ := meta.ListAccessor(l)
			if got := tokenStart(t, lm.GetContinue()); got != want {
				t.Errorf("%s: the server's token starts at %q, want %q", name, got, want)
			}
		}
	})

	cassette := filepath.Join(t.TempDir(), "scopes.kwrec.zst")
	stop := recordUntilListed(t, fx, cp.Kubeconfig, "record", "clusterroles,configmaps,namespaces", "-A", "-o", cassette)
	live := map[string]string{}
	for _, args := range append(scopeDescribes, prefixed("get", scopeReads())...) {
		out, err := runKubectl(ctx, cp.Kubeconfig, args...)
		if err != nil {
			t.Fatal(err)
		}
		live[strings.Join(args, " ")] = out
	}
	livePages := map[string][]string{}
	for name := range scopeListers {
		for _, size := range []int64{1, 2, 10} {
			livePages[fmt.Sprint(name, size)] = pagedNames(t, cp.Config, scopeListers[name], size)
		}
	}
	stop()

	s := serve(t, fx, cassette)
	t.Run("kubectl through kwrec serve", func(t *testing.T) {
		for _, args := range append(scopeDescribes, prefixed("get", scopeReads())...) {
			name := strings.Join(args, " ")
			got, err := runKubectl(ctx, s.Kubeconfig, args...)
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			if d := cmp.Diff(agesAside(live[name]), agesAside(got)); d != "" {
				t.Errorf("kubectl %s through kwrec serve (-live +replayed):\n%s", name, d)
			}
		}
	})
	t.Run("kubectl get -w through kwrec serve", func(t *testing.T) {
		for _, args := range [][]string{{"clusterroles", "--chunk-size=10"}, {"namespaces", "--chunk-size=2"}, {"configmaps", "-A", "--chunk-size=10"}} {
			want := agesAside(live["get "+strings.Join(args, " ")])
			got := agesAside(kubectlWatchLines(t, s.Kubeconfig, args, strings.Count(want, "\n")))
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("kubectl get -w %s through kwrec serve (-live +replayed):\n%s", strings.Join(args, " "), d)
			}
		}
	})
	for _, where := range []string{"through kwrec serve", "in process"} {
		t.Run("client-go's pager "+where, func(t *testing.T) {
			cfg := s.Config(t)
			if where == "in process" {
				r, err := replay.Open(cassette, replay.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				cfg = r.Config()
			}
			for name, list := range scopeListers {
				for _, size := range []int64{1, 2, 10} {
					if d := cmp.Diff(livePages[fmt.Sprint(name, size)], pagedNames(t, cfg, list, size)); d != "" {
						t.Errorf("%s in pages of %d (-live +replayed):\n%s", name, size, d)
					}
				}
			}
		})
	}

	t.Run("record --all: every recorded collection pages by 1 through kwrec serve", func(t *testing.T) {
		all := filepath.Join(t.TempDir(), "all.kwrec.zst")
		recordUntilListed(t, fx, cp.Kubeconfig, "record", "--all", "-o", all)()
		s := serve(t, fx, all)
		resources := recordedCollections(t, all)
		if len(resources) < 20 {
			t.Fatalf("record --all recorded %d collections, want at least 20: %v", len(resources), resources)
		}
		for _, res := range resources {
			whole, err := runKubectl(ctx, s.Kubeconfig, "get", res, "-A", "-o", "name")
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			paged, err := runKubectl(ctx, s.Kubeconfig, "get", res, "-A", "-o", "name", "--chunk-size=1")
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			if paged != whole {
				t.Errorf("kubectl get %s -A --chunk-size=1 (-whole +paged):\n%s", res, cmp.Diff(whole, paged))
			}
		}
	})
}

// makeScopes makes the scopes scenario.
func makeScopes(ctx context.Context, cs kubernetes.Interface) error {
	for i := range scopeRoles {
		name := fmt.Sprintf("kwrec:paging:role-%02d", i)
		if i%5 == 0 {
			name = fmt.Sprintf("kwrec.paging.role-%02d", i)
		}
		role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kwrec-paging": "yes"}},
			Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}}}
		if _, err := cs.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for i := range scopeNamespaces {
		ns := fmt.Sprintf("paging-%d", i)
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		n := 1
		if i == 0 {
			n = scopeConfigMaps
		}
		for j := range n {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm.%02d", j)}, Data: map[string]string{"k": "v"}}
			if j%3 == 0 {
				cm.Labels = map[string]string{"tier": "gold"}
			}
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				return err
			}
		}
	}
	return nil
}

// tokenStart is the start key a continue token holds.
func tokenStart(t *testing.T, tok string) string {
	t.Helper()
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		t.Fatalf("token %q: %v", tok, err)
	}
	var c struct {
		Start string `json:"start"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatalf("token %q: %v", b, err)
	}
	return c.Start
}

// pagedNames lists with client-go's pager in pages of size and returns
// the items as namespace/name@resourceVersion, in the order listed.
func pagedNames(t *testing.T, cfg *rest.Config, list scopeLister, size int64) []string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return list(ctx, cs, o) })
	p.PageSize = size
	var got []string
	if err := p.EachListItem(t.Context(), metav1.ListOptions{}, func(o runtime.Object) error {
		m, err := meta.Accessor(o)
		if err != nil {
			return err
		}
		got = append(got, m.GetNamespace()+"/"+m.GetName()+"@"+m.GetResourceVersion())
		return nil
	}); err != nil {
		t.Fatalf("pager in pages of %d: %v", size, err)
	}
	return got
}

// recordUntilListed starts `kwrec ARGS --kubeconfig KUBECONFIG`, waits
// until it says the initial state is recorded, and returns the function
// that stops it (SIGTERM) and fails t if it did not exit cleanly.
func recordUntilListed(t *testing.T, fx *fixtures, kubeconfig string, args ...string) (stop func()) {
	t.Helper()
	var stderr syncBuffer
	cmd := exec.Command(fx.kwrec, append(args, "--kubeconfig", kubeconfig)...)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	stop = func() {
		t.Helper()
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			t.Fatalf("kwrec %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
	}
	if err := waitFor(t.Context(), 2*time.Minute, func() bool { return strings.Contains(stderr.String(), "is recorded; watching") }); err != nil {
		stop()
		t.Fatalf("kwrec %s did not record the initial state: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return stop
}

// recordedCollections returns kubectl's name (resource.version.group) of
// every collection whose list a cassette recorded across namespaces or
// cluster-scoped.
func recordedCollections(t *testing.T, path string) []string {
	t.Helper()
	c, err := cassettes.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range c.Interactions {
		u, err := url.Parse(in.Request.URL)
		if err != nil || u.Query().Get("watch") != "" {
			continue
		}
		rp, ok := apipath.Parse(u.Path)
		if !ok || rp.Name != "" || rp.Namespace != "" {
			continue
		}
		name := rp.Resource
		if rp.Group != "" {
			name += "." + rp.Version + "." + rp.Group
		}
		if !slices.Contains(out, name) {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out
}

// prefixed returns each of args with verb before it.
func prefixed(verb string, args [][]string) [][]string {
	out := make([][]string, len(args))
	for i, a := range args {
		out[i] = append([]string{verb}, a...)
	}
	return out
}
