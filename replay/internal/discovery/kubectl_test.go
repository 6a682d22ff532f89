package discovery_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/replay/internal/discovery"
)

// emptyConfigMaps is the list the test server answers a ConfigMap list
// in default with; other lists there get an empty List.
const emptyConfigMaps = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`

// kubectlServer serves docs and empty lists in default, and logs what it
// was asked.
type kubectlServer struct {
	docs *discovery.Docs
	mu   sync.Mutex
	log  []string
}

func (s *kubectlServer) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.mu.Lock()
	s.log = append(s.log, fmt.Sprintf("%s %s Accept: %s (%s)", req.Method, req.URL, req.Header.Get("Accept"), req.UserAgent()))
	s.mu.Unlock()
	if req.Method == http.MethodGet {
		if status, ctype, body, ok := s.docs.Answer(req.URL.Path, req.Header.Get("Accept"), req.Host); ok {
			w.Header().Set("Content-Type", ctype)
			w.WriteHeader(status)
			w.Write(body)
			return
		}
		if p, ok := apipath.Parse(req.URL.Path); ok && p.Name == "" && p.Namespace == "default" {
			w.Header().Set("Content-Type", "application/json")
			if p.Resource == "configmaps" {
				w.Write([]byte(emptyConfigMaps))
			} else { // what kubectl get all lists
				w.Write([]byte(`{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`))
			}
			return
		}
	}
	http.Error(w, "not served by the test", http.StatusNotFound)
}

// TestKubectl runs the real kubectl against a server whose discovery is
// only what Docs.Answer serves: short names, api-resources and explain
// (OpenAPI v3) must work as against a kube-apiserver.
func TestKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not on PATH")
	}
	// With a CRD merged in, as a replay of a cassette that recorded one.
	docs, err := builtin(t).With([]discovery.Resource{widget})
	if err != nil {
		t.Fatal(err)
	}
	srv := &kubectlServer{docs: docs}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	home := t.TempDir()
	kubeconfig := filepath.Join(home, "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: replay
  cluster:
    server: %s
contexts:
- name: replay
  context:
    cluster: replay
    namespace: default
current-context: replay
`, ts.URL)), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want *regexp.Regexp
	}{
		{"get cm resolves the short name", []string{"get", "cm"}, regexp.MustCompile(`^No resources found in default namespace.\n$`)}, // on stderr
		{"get all resolves the category all", []string{"get", "all"}, regexp.MustCompile(`^No resources found in default namespace.\n$`)},
		{"get widgets resolves a merged CRD", []string{"get", "widgets"}, regexp.MustCompile(`^No resources found in default namespace.\n$`)},
		{"api-resources lists the merged CRD", []string{"api-resources", "--api-group=example.com"}, regexp.MustCompile(`(?m)^widgets +example.com/v1 +true +Widget$`)},
		{"api-resources lists configmaps with its short name", []string{"api-resources"}, regexp.MustCompile(`(?m)^configmaps +cm +v1 +true +ConfigMap$`)},
		{"api-resources lists apps resources", []string{"api-resources", "--api-group=apps"}, regexp.MustCompile(`(?m)^deployments +deploy +apps/v1 +true +Deployment$`)},
		{"explain configmap.data prints the field's doc", []string{"explain", "configmap.data"}, regexp.MustCompile(`(?s)FIELD: *data <map\[string\]string>.*Data contains the configuration data`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// A fresh cache per command: a cached discovery would hide
			// what the server answers.
			args := append([]string{"--kubeconfig", kubeconfig, "--cache-dir", t.TempDir()}, tt.args...)
			cmd := exec.CommandContext(t.Context(), kubectl, args...)
			cmd.Env = append(os.Environ(), "HOME="+home, "KUBECONFIG="+kubeconfig)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %s: %v\n%s\nrequests:\n%s", strings.Join(tt.args, " "), err, out, srv.requests())
			}
			if !tt.want.Match(out) {
				t.Errorf("kubectl %s printed\n%s\nwant a match of %s", strings.Join(tt.args, " "), out, tt.want)
			}
		})
	}
	// get all listed what the category all names, get widgets the CRD.
	for _, want := range []string{"GET /api/v1/namespaces/default/pods?", "GET /apis/apps/v1/namespaces/default/deployments?", "GET /apis/batch/v1/namespaces/default/cronjobs?",
		"GET /apis/example.com/v1/namespaces/default/widgets?"} {
		if !strings.Contains(srv.requests(), want) {
			t.Errorf("kubectl did not ask %s", want)
		}
	}
	t.Logf("requests:\n%s", srv.requests())
}

func (s *kubectlServer) requests() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, "\n")
}
