package replay_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func startServer(t *testing.T, s *replay.Server) string {
	t.Helper()
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	kc := filepath.Join(t.TempDir(), "kubeconfig")
	if err := s.WriteKubeconfig(kc); err != nil {
		t.Fatal(err)
	}
	return kc
}

func TestServerReplaysToClientGoThroughItsKubeconfig(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, plain := range []bool{false, true} {
			name := "https with a generated CA"
			if plain {
				name = "plain http"
			}
			t.Run(name, func(t *testing.T) {
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
				s := &replay.Server{Replayer: r, PlainHTTP: plain}
				kc := startServer(t, s)
				if !strings.HasPrefix(s.URL(), map[bool]string{true: "http://127.0.0.1:", false: "https://127.0.0.1:"}[plain]) {
					t.Errorf("URL %s; want loopback", s.URL())
				}
				cfg, err := clientcmd.BuildConfigFromFlags("", kc)
				if err != nil {
					t.Fatal(err)
				}
				cs := kubernetes.NewForConfigOrDie(cfg)
				v, err := cs.Discovery().ServerVersion()
				if err != nil || v.GitVersion != "v1.37.2" {
					t.Errorf("ServerVersion = %v, %v; want the cassette's v1.37.2", v, err)
				}
				wantRecordedEvents(t, cs.CoreV1().ConfigMaps("default").Watch)
			})
		}
	})
}

func TestServerRejectsOtherTokens(t *testing.T) {
	s := &replay.Server{Replayer: fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})}
	startServer(t, s)
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(s.CA()) {
		t.Fatal("CA() holds no certificate")
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer nope", http.StatusUnauthorized},
		{"Bearer " + s.Token() + "x", http.StatusUnauthorized},
		{"Bearer " + s.Token(), http.StatusOK},
	} {
		req, _ := http.NewRequest("GET", s.URL()+"/api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("Authorization %q: %s; want %d", tc.auth, resp.Status, tc.want)
		}
	}
}

// readLines runs cmd and returns its stdout lines until stop says enough,
// then kills it.
func readLines(t *testing.T, cmd *exec.Cmd, stop func([]string) bool) []string {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(syncBuffer)
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	defer func() {
		cmd.Process.Kill()
		for range lines {
		}
		cmd.Wait()
	}()
	var got []string
	watchdog := time.NewTimer(60 * time.Second)
	defer watchdog.Stop()
	for !stop(got) {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("%s exited after %q; stderr:\n%s", cmd.Args[0], got, stderr.String())
			}
			got = append(got, l)
		case <-watchdog.C:
			t.Fatalf("watchdog: %s printed only %q; stderr:\n%s", cmd.Args[0], got, stderr.String())
		}
	}
	return got
}

func TestServerReplaysToKubectlWatch(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		kubectl, err := exec.LookPath("kubectl")
		if err != nil {
			t.Skip("kubectl not on PATH: skipping the kubectl replay test")
		}
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		kc := startServer(t, &replay.Server{Replayer: r})
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", kc, "get", "configmaps", "-w")
		cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "KUBECACHEDIR="+t.TempDir())
		got := readLines(t, cmd, func(l []string) bool { return len(l) >= 7 })
		for i := range got {
			got[i] = strings.Fields(got[i])[0]
		}
		// The list (a, b), then every recorded event's object (c added, a
		// modified, b deleted, d added): kubectl -w prints one row per event.
		want := []string{"NAME", "a", "b", "c", "a", "b", "d"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("kubectl output, first column (-want +got):\n%s", d)
		}
	})
}

const pythonWatch = `
import sys
from kubernetes import client, config, watch
config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
l = v1.list_namespaced_config_map("default")
for cm in l.items:
    print("LIST", cm.metadata.name, cm.metadata.resource_version, flush=True)
for ev in watch.Watch().stream(v1.list_namespaced_config_map, "default", resource_version=l.metadata.resource_version):
    print(ev["type"], ev["object"].metadata.name, ev["object"].metadata.resource_version, flush=True)
`

func TestServerReplaysToPythonKubernetesWatch(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		py := "/usr/bin/python3"
		if _, err := os.Stat(py); err != nil {
			t.Skip("/usr/bin/python3 missing: skipping the python3-kubernetes replay test")
		}
		if err := exec.Command(py, "-c", "import kubernetes").Run(); err != nil {
			t.Skip("python3-kubernetes not installed (apt-get install -y python3-kubernetes): skipping")
		}
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		kc := startServer(t, &replay.Server{Replayer: r})
		script := filepath.Join(t.TempDir(), "watch.py")
		if err := os.WriteFile(script, []byte(pythonWatch), 0o600); err != nil {
			t.Fatal(err)
		}
		got := readLines(t, exec.Command(py, script, kc), func(l []string) bool { return len(l) >= 6 })
		want := []string{"LIST a 90", "LIST b 95", "ADDED c 101", "MODIFIED a 102", "DELETED b 103", "ADDED d 104"}
		if d := cmp.Diff(want, got); d != "" {
			t.Errorf("python output (-want +got):\n%s", d)
		}
	})
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServerObservesEachRequestToItsEnd: Observe sees a list begin and
// end, and a watch stay in flight until its client closes it.
func TestServerObservesEachRequestToItsEnd(t *testing.T) {
	var mu sync.Mutex
	inFlight := map[string]int{}
	ended := make(chan string, 16)
	r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
	s := &replay.Server{Replayer: r, PlainHTTP: true, Observe: func(req *http.Request) func() {
		what := map[bool]string{true: "watch", false: "other"}[req.URL.Query().Get("watch") == "true"]
		mu.Lock()
		inFlight[what]++
		mu.Unlock()
		return func() { mu.Lock(); inFlight[what]--; mu.Unlock(); ended <- what }
	}}
	kc := startServer(t, s)
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().ConfigMaps("default").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		t.Fatal(err)
	}
	<-w.ResultChan() // the watch is open on the server
	mu.Lock()
	got := maps.Clone(inFlight)
	mu.Unlock()
	if d := cmp.Diff(map[string]int{"watch": 1, "other": 0}, got); d != "" {
		t.Errorf("in flight with the watch open (-want +got):\n%s", d)
	}
	w.Stop()
	watchdog := time.After(10 * time.Second)
	for what := ""; what != "watch"; {
		select {
		case what = <-ended:
		case <-watchdog:
			t.Fatalf("the watch's end was not observed 10s after its client stopped it")
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if n := inFlight["watch"]; n != 0 {
		t.Errorf("%d watches in flight after the watch ended, want 0", n)
	}
}
