package table_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/rogpeppe/go-internal/txtar"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// envUpdate names the environment variable that, set to 1, makes
// TestLiveCapture re-record testdata/live.txtar from the control plane.
const envUpdate = "KWREC_UPDATE_TABLE"

// kubectlAccept is the Accept header of `kubectl get` (v1.32) with its
// default output.
const kubectlAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// kubectl is the kubectl the live tests run.
const kubectl = "/usr/bin/kubectl"

// fixtureNS is the namespace of the recorded ConfigMaps.
const fixtureNS = "table"

// liveFixture is the file TestLiveCapture writes and the hermetic tests
// read.
const liveFixture = "testdata/live.txtar"

// acceptCases are the Accept headers whose live answers accept.tsv
// records, for TestWantsAgreesWithTheLiveServer.
var acceptCases = []string{
	kubectlAccept,
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io",
	"application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json,application/json;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=Table;v=v1;g=meta.k8s.io;q=0.5,application/json",
	"application/json;as=Table;v=v2;g=meta.k8s.io,application/json",
	"application/json;as=Table;g=meta.k8s.io,application/json",
	"application/json;as=Table;v=v1;g=example.com,application/json",
	"application/yaml;as=Table;v=v1;g=meta.k8s.io,application/json",
	"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io,application/json",
	"application/vnd.kubernetes.protobuf,application/json",
	"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io,application/json",
	"*/*;as=Table;v=v1;g=meta.k8s.io",
	"application/*;as=Table;v=v1;g=meta.k8s.io",
	"application/json;as=Table;v=v1;g=meta.k8s.io;pretty=0",
	"text/plain;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io",
	"*/*",
}

// live is a control plane with the fixture's namespace and helpers to
// talk to it raw.
type live struct {
	t    *testing.T
	cp   *controlplanetest.ControlPlane
	cs   *kubernetes.Clientset
	hc   *http.Client
	host string
}

func startLive(t *testing.T) *live {
	cp := controlplanetest.Start(t)
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	l := &live{t: t, cp: cp, cs: kubernetes.NewForConfigOrDie(cp.Config), hc: hc, host: strings.TrimSuffix(cp.Config.Host, "/")}
	if _, err := l.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fixtureNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return l
}

func (l *live) configMap(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
	cm, err := l.cs.CoreV1().ConfigMaps(fixtureNS).Create(l.t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}, metav1.CreateOptions{})
	if err != nil {
		l.t.Fatal(err)
	}
	return cm
}

func (l *live) update(cm *corev1.ConfigMap) {
	if _, err := l.cs.CoreV1().ConfigMaps(fixtureNS).Update(l.t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		l.t.Fatal(err)
	}
}

func (l *live) request(ctx context.Context, query, accept string) *http.Response {
	req, err := http.NewRequestWithContext(ctx, "GET", l.host+"/api/v1/namespaces/"+fixtureNS+"/configmaps"+query, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := l.hc.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	return resp
}

// get returns the body of a GET of the fixture's collection (query
// appended to its path).
func (l *live) get(query, accept string) []byte {
	resp := l.request(l.t.Context(), query, accept)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		l.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		l.t.Fatalf("GET %s: %d %s", query, resp.StatusCode, b)
	}
	return b
}

// watch is a live watch whose event lines arrive on lines.
type watch struct {
	lines  chan []byte
	cancel context.CancelFunc
}

func (l *live) watch(query, accept string) *watch {
	ctx, cancel := context.WithCancel(l.t.Context())
	resp := l.request(ctx, query, accept)
	if resp.StatusCode != http.StatusOK {
		cancel()
		l.t.Fatalf("watch %s: %d", query, resp.StatusCode)
	}
	w := &watch{lines: make(chan []byte, 64), cancel: cancel}
	go func() {
		defer resp.Body.Close()
		defer close(w.lines)
		r := bufio.NewReader(resp.Body)
		for {
			line, err := r.ReadBytes('\n')
			if err != nil {
				return
			}
			w.lines <- line
		}
	}()
	l.t.Cleanup(cancel)
	return w
}

// next returns the next n event lines, failing the test after 10s.
func (w *watch) next(t *testing.T, n int) []byte {
	t.Helper()
	var b []byte
	timeout := time.After(10 * time.Second)
	for range n {
		select {
		case line, ok := <-w.lines:
			if !ok {
				t.Fatalf("watch ended after %d lines", bytes.Count(b, []byte("\n")))
			}
			b = append(b, line...)
		case <-timeout:
			t.Fatalf("watch: no event in 10s after %d lines", bytes.Count(b, []byte("\n")))
		}
	}
	return b
}

func (l *live) kubectl(args ...string) string {
	home := l.t.TempDir()
	args = append([]string{"--kubeconfig", l.cp.Kubeconfig, "--cache-dir", home + "/cache"}, args...)
	return runKubectl(l.t, home, args...)
}

func runKubectl(t *testing.T, home string, args ...string) string {
	t.Helper()
	if _, err := os.Stat(kubectl); err != nil {
		t.Skipf("no kubectl: %v", err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kubectl, args...)
	cmd.Env = append(cmd.Environ(), "HOME="+home)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return out.String()
}

// TestLiveCapture records testdata/live.txtar from the control plane when
// $KWREC_UPDATE_TABLE is 1:
//
//	KWREC_UPDATE_TABLE=1 go test ./internal/table -run TestLiveCapture
//
// Three ConfigMaps exist before the first Table list; while two Table
// watches run (kubectl's, from the list's resourceVersion, and a
// streaming list with bookmarks), one ConfigMap is created, two updated,
// one deleted and one more created. Then the final state is read as a
// Table list, a plain list, a v1beta1 Table list, a Table get and
// kubectl's printout, and the server's answer to each of acceptCases.
func TestLiveCapture(t *testing.T) {
	if os.Getenv(envUpdate) != "1" {
		t.Skipf("set %s=1 to re-record %s from the control plane", envUpdate, liveFixture)
	}
	l := startLive(t)
	alpha := l.configMap("alpha", map[string]string{"app": "web"}, map[string]string{"index.html": "<h1>hi</h1>"})
	beta := l.configMap("beta", map[string]string{"app": "db"}, map[string]string{"user": "admin", "port": "5432"})
	l.configMap("gamma", map[string]string{"app": "web"}, nil)

	list := l.get("?limit=500", kubectlAccept)
	rv := jsonRV(t, list)
	kubectlWatch := l.watch("?resourceVersion="+rv+"&watch=true", kubectlAccept)
	streaming := l.watch("?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true", kubectlAccept)
	// The streaming list's initial events end with a bookmark; change
	// nothing before it, so its initial events are the list's.
	streamed := streaming.next(t, 4)

	l.configMap("delta", map[string]string{"app": "cache"}, map[string]string{"a": "1", "b": "2", "c": "3"})
	alpha.Data["style.css"] = "h1 {}"
	l.update(alpha)
	beta.Labels["tier"] = "backend"
	l.update(beta)
	if err := l.cs.CoreV1().ConfigMaps(fixtureNS).Delete(t.Context(), "gamma", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	l.configMap("epsilon", nil, map[string]string{"k": "v"})
	const changes = 5
	watched := kubectlWatch.next(t, changes)
	streamed = append(streamed, streaming.next(t, changes)...)
	kubectlWatch.cancel()
	streaming.cancel()

	// A streaming list of nothing: its first event is the bookmark.
	empty := l.watch("?allowWatchBookmarks=true&labelSelector=app%3Dnone&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true", kubectlAccept)
	emptyStreamed := empty.next(t, 1)
	empty.cancel()

	files := []txtar.File{
		{Name: "list.json", Data: list},
		{Name: "watch.jsonl", Data: watched},
		{Name: "watchlist.jsonl", Data: streamed},
		{Name: "watchlist-empty.jsonl", Data: emptyStreamed},
		{Name: "final-table.json", Data: l.get("?limit=500", kubectlAccept)},
		{Name: "final.json", Data: l.get("?limit=500", "application/json")},
		{Name: "v1beta1.json", Data: l.get("?limit=500", "application/json;as=Table;v=v1beta1;g=meta.k8s.io")},
		{Name: "get-beta.json", Data: l.getObject("beta", kubectlAccept)},
		{Name: "kubectl.txt", Data: []byte(l.kubectl("get", "configmaps", "-n", fixtureNS, "--show-labels"))},
		{Name: "accept.tsv", Data: l.acceptAnswers()},
	}
	a := &txtar.Archive{
		Comment: []byte(fmt.Sprintf("Recorded by TestLiveCapture (%s=1) from kube-apiserver %s: Table answers to kubectl's\nAccept header for ConfigMaps in namespace %q. See live_test.go for what each file is.\n", envUpdate, controlplanetest.KubeVersion, fixtureNS)),
		Files:   files,
	}
	if err := os.MkdirAll("testdata", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(liveFixture, txtar.Format(a), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (l *live) getObject(name, accept string) []byte {
	req, err := http.NewRequestWithContext(l.t.Context(), "GET", l.host+"/api/v1/namespaces/"+fixtureNS+"/configmaps/"+name, nil)
	if err != nil {
		l.t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := l.hc.Do(req)
	if err != nil {
		l.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		l.t.Fatalf("get %s: %d %v %s", name, resp.StatusCode, err, b)
	}
	return b
}

// acceptAnswers lists, for each of acceptCases, what the server answered a
// list with it: "Accept<TAB>status media-type kind apiVersion".
func (l *live) acceptAnswers() []byte {
	var b bytes.Buffer
	for _, accept := range acceptCases {
		resp := l.request(l.t.Context(), "?limit=1", accept)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			l.t.Fatal(err)
		}
		kind, apiVersion := "-", "-"
		if resp.StatusCode == http.StatusOK && mediaType(resp.Header.Get("Content-Type")) == "application/json" {
			kind, apiVersion = typeMeta(l.t, body)
		}
		fmt.Fprintf(&b, "%s\t%d %s %s %s\n", accept, resp.StatusCode, mediaType(resp.Header.Get("Content-Type")), kind, apiVersion)
	}
	return b.Bytes()
}

func mediaType(ct string) string {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return ct
	}
	return mt
}

// TestLiveKubectlPrintsTheIndexedTable runs `kubectl get configmaps
// --show-labels` against the control plane and against a proxy to it that
// answers kubectl's Table list from an Index (rows recorded by an earlier
// Table list, the versions and resourceVersion from a plain list), and
// compares what kubectl prints, ages aside. The list is kubectl's only
// Table request; discovery goes through to the control plane.
func TestLiveKubectlPrintsTheIndexedTable(t *testing.T) {
	l := startLive(t)
	l.configMap("alpha", map[string]string{"app": "web"}, map[string]string{"index.html": "<h1>hi</h1>"})
	l.configMap("beta", map[string]string{"app": "db", "tier": "backend"}, map[string]string{"user": "admin", "port": "5432"})
	l.configMap("gamma", nil, nil)
	var x table.Index
	if err := x.AddList(l.get("?limit=500", kubectlAccept)); err != nil {
		t.Fatal(err)
	}

	// Nothing changes from here on: the plain list answers for every
	// request.
	plain := l.get("?limit=500", "application/json")
	rv, versions := plainVersions(t, plain)
	var served atomic.Int32
	target, err := url.Parse(l.host)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := rest.TransportFor(l.cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	proxy := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport: transport,
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gv, wantsTable := table.Wants(r.Header.Get("Accept"))
		if r.URL.Path != "/api/v1/namespaces/"+fixtureNS+"/configmaps" || !wantsTable || r.URL.Query().Get("watch") != "" {
			proxy.ServeHTTP(w, r)
			return
		}
		body, ok := x.List(gv, rv, "", nil, versions)
		if !ok {
			t.Errorf("List(%v) is not ok", versions)
			http.Error(w, "no Table", http.StatusInternalServerError)
			return
		}
		served.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	home := t.TempDir()
	kubeconfig := home + "/kubeconfig"
	kc := fmt.Sprintf("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: %q}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\ncurrent-context: c\n", srv.URL)
	if err := os.WriteFile(kubeconfig, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}

	args := []string{"get", "configmaps", "-n", fixtureNS, "--show-labels"}
	want := l.kubectl(args...)
	got := runKubectl(t, home, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", home + "/cache"}, args...)...)
	if served.Load() == 0 {
		t.Fatal("kubectl's list never reached the Index")
	}
	if d := cmp.Diff(withoutAges(want), withoutAges(got)); d != "" {
		t.Errorf("kubectl's output (-live +index):\n%s", d)
	}
	if !strings.HasPrefix(got, "NAME ") || !strings.Contains(got, " DATA ") || !strings.Contains(got, " AGE ") {
		t.Errorf("kubectl printed no NAME DATA AGE header:\n%s", got)
	}
	t.Logf("kubectl through the Index:\n%s", got)
}

// withoutAges returns kubectl's table output as fields per line, the AGE
// column (the third) blanked.
func withoutAges(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 {
			f[2] = "<age>"
		}
		rows = append(rows, f)
	}
	return rows
}
