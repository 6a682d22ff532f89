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

	"github.com/kwrec/kwrec/internal/discovery"
)

// emptyConfigMaps is the list the test server answers every ConfigMap list
// with.
const emptyConfigMaps = `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`

// kubectlServer serves docs and an empty ConfigMap list in default, and
// logs what it was asked.
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
		if req.URL.Path == "/api/v1/namespaces/default/configmaps" {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(emptyConfigMaps))
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
	srv := &kubectlServer{docs: builtin(t)}
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
	t.Logf("requests:\n%s", srv.requests())
}

func (s *kubectlServer) requests() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.log, "\n")
}
