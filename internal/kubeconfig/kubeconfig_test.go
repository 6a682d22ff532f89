package kubeconfig_test

import (
	"path/filepath"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kwrec/kwrec/internal/kubeconfig"
)

func TestAKubeconfigReadsBackAsAClientConfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kubeconfig.For("kwrec-replay", "https://127.0.0.1:1234", []byte("ca"), "tok"), path); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Host != "https://127.0.0.1:1234" || cfg.BearerToken != "tok" || string(cfg.CAData) != "ca" {
		t.Errorf("read back host %q token %q CA %q", cfg.Host, cfg.BearerToken, cfg.CAData)
	}
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(&clientcmd.ClientConfigLoadingRules{ExplicitPath: path}, nil).Namespace()
	if err != nil || ns != "default" {
		t.Errorf("namespace %q, %v; want default", ns, err)
	}
}
