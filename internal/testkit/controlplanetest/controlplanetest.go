// Package controlplanetest starts the real test control plane (kube-apiserver
// and etcd, built by `make controlplane`) through controller-runtime's envtest,
// for tests that record from a live API server.
//
//	func TestRecordsAWatch(t *testing.T) {
//		cp := controlplanetest.Start(t) // skips when the binaries are absent
//		client := kubernetes.NewForConfigOrDie(cp.Config)
//		...
//	}
//
// The binaries are found in $KUBEBUILDER_ASSETS, else in the cache directory
// `make controlplane` builds into. When they are missing the test is skipped
// with a message saying how to build them, unless $KWREC_REQUIRE_CONTROLPLANE
// is set to 1 (as .ci/run does), when it fails instead.
package controlplanetest

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// Versions of the control plane built by controlplane/build.sh; the cache
// directory is keyed by them.
const (
	KubeVersion = "v1.37.2"
	EtcdVersion = "v3.7.0"
)

// EnvRequire names the environment variable that, set to "1", makes a
// missing control plane fail the test instead of skipping it.
const EnvRequire = "KWREC_REQUIRE_CONTROLPLANE"

// ErrNoBinaries means kube-apiserver or etcd was not found.
var ErrNoBinaries = errors.New("control plane binaries not found; run `make controlplane` (or set KUBEBUILDER_ASSETS)")

// ControlPlane is a running kube-apiserver with its etcd.
type ControlPlane struct {
	// Config is an admin client config for the API server.
	Config *rest.Config
	// Kubeconfig is the path of a kubeconfig file with the same
	// credentials, for subprocesses (kubectl, kwrec).
	Kubeconfig string

	env *envtest.Environment
	// restarted are the processes [ControlPlane.Restart] started; envtest
	// knows only the first ones.
	restarted map[Component]*restarted
	// argv are the command lines [ControlPlane.Kill] found.
	argv map[Component][]string
}

// AssetsDir returns the directory holding kube-apiserver and etcd:
// $KUBEBUILDER_ASSETS if set, else the cache directory of `make
// controlplane`. It returns an error wrapping [ErrNoBinaries] when either
// binary is missing there.
func AssetsDir() (string, error) {
	dir := os.Getenv("KUBEBUILDER_ASSETS")
	if dir == "" {
		root := os.Getenv("KWREC_CACHE_DIR")
		if root == "" {
			c, err := os.UserCacheDir()
			if err != nil {
				return "", fmt.Errorf("%w: %v", ErrNoBinaries, err)
			}
			root = filepath.Join(c, "kwrec")
		}
		dir = filepath.Join(root, "controlplane", fmt.Sprintf("kube-apiserver-%s_etcd-%s_%s-%s", KubeVersion, EtcdVersion, runtime.GOOS, runtime.GOARCH))
	}
	for _, b := range []string{"kube-apiserver", "etcd"} {
		fi, err := os.Stat(filepath.Join(dir, b))
		if err != nil || fi.Mode()&0o111 == 0 {
			return dir, fmt.Errorf("%w: no executable %s in %s", ErrNoBinaries, b, dir)
		}
	}
	return dir, nil
}

// Start starts a control plane for t and stops it in t.Cleanup, also when
// the test fails. It skips t when the binaries are absent (see the package
// doc) and fails t if the control plane does not start.
func Start(t testing.TB) *ControlPlane {
	t.Helper()
	cp, err := StartEnv()
	if errors.Is(err, ErrNoBinaries) && os.Getenv(EnvRequire) != "1" {
		t.Skipf("skipping: %v (set %s=1 to fail instead)", err, EnvRequire)
	}
	if err != nil {
		t.Fatalf("starting the control plane: %v", err)
	}
	t.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			t.Errorf("stopping the control plane: %v", err)
		}
	})
	return cp
}

// StartEnv starts a control plane outside a test (a demo, a benchmark's
// setup); the caller must call [ControlPlane.Stop]. Partial starts are
// rolled back.
func StartEnv() (*ControlPlane, error) {
	dir, err := AssetsDir()
	if err != nil {
		return nil, err
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		return nil, fmt.Errorf("envtest: %w", err)
	}
	cp := &ControlPlane{Config: cfg, env: env}
	user, err := env.AddUser(envtest.User{Name: "kwrec-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return nil, errors.Join(fmt.Errorf("adding a kubeconfig user: %w", err), cp.Stop())
	}
	kc, err := user.KubeConfig()
	if err != nil {
		return nil, errors.Join(fmt.Errorf("kubeconfig: %w", err), cp.Stop())
	}
	f, err := os.CreateTemp("", "kwrec-controlplane-*.kubeconfig")
	if err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	cp.Kubeconfig = f.Name()
	if _, err := f.Write(kc); err != nil {
		f.Close()
		return nil, errors.Join(err, cp.Stop())
	}
	if err := f.Close(); err != nil {
		return nil, errors.Join(err, cp.Stop())
	}
	return cp, nil
}

// Stop stops the API server and etcd and removes the kubeconfig file,
// returning every error met.
func (cp *ControlPlane) Stop() error {
	var errs []error
	// A restarted kube-apiserver before envtest's Stop, which removes the
	// certificates it uses; a restarted etcd after it, so that envtest's
	// kube-apiserver shuts down with its etcd still there.
	kill := func(c Component) {
		if p := cp.restarted[c]; p != nil {
			if err := p.kill(); err != nil {
				errs = append(errs, err)
			}
			delete(cp.restarted, c)
		}
	}
	kill(APIServer)
	if cp.env != nil {
		if err := cp.env.Stop(); err != nil {
			errs = append(errs, err)
		}
		cp.env = nil
	}
	kill(Etcd)
	if cp.Kubeconfig != "" {
		if err := os.Remove(cp.Kubeconfig); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
		cp.Kubeconfig = ""
	}
	return errors.Join(errs...)
}
