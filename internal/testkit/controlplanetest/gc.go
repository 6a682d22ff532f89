package controlplanetest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// KubeControllerManager names the controller manager binary, built beside
// kube-apiserver by controlplane/build.sh and run only by tests that
// compare with a live garbage collector.
const KubeControllerManager = "kube-controller-manager"

// StartGarbageCollector runs kube-controller-manager against cp with only
// its garbage collector, as a cluster has and envtest lacks, and stops it
// in t.Cleanup. It serves nothing (--secure-port=0) and takes no lease.
// The collector acts once it has discovered every resource and synced its
// informers, a few seconds after the start: a test waits for one
// collection it causes before relying on it. Without the binary the test
// is skipped, or fails under $KWREC_REQUIRE_CONTROLPLANE=1.
func (cp *ControlPlane) StartGarbageCollector(t testing.TB) {
	t.Helper()
	cp.StartControllers(t, "garbagecollector", "--concurrent-gc-syncs=5")
}

// StartControllers runs kube-controller-manager against cp with the
// controllers named in controllers (its --controllers flag: names such as
// deployment-controller, comma-separated), and any further flags, as
// [ControlPlane.StartGarbageCollector] runs the garbage collector: it
// serves nothing, takes no lease, and stops in t.Cleanup. Without a
// scheduler or kubelet, the pods its controllers create stay Pending.
func (cp *ControlPlane) StartControllers(t testing.TB, controllers string, flags ...string) {
	t.Helper()
	dir, err := AssetsDir()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, KubeControllerManager)
	if _, err := os.Stat(bin); err != nil {
		err = fmt.Errorf("%w: no executable %s in %s", ErrNoBinaries, KubeControllerManager, dir)
		if os.Getenv(EnvRequire) != "1" {
			t.Skipf("skipping: %v (set %s=1 to fail instead)", err, EnvRequire)
		}
		t.Fatal(err)
	}
	var out bytes.Buffer
	args := append([]string{"--kubeconfig=" + cp.Kubeconfig, "--controllers=" + controllers,
		"--leader-elect=false", "--secure-port=0", "-v=1"}, flags...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", KubeControllerManager, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		err := <-done
		var ee *exec.ExitError
		if err != nil && !(errors.As(err, &ee) && !ee.Exited()) && t.Failed() {
			t.Logf("%s: %v", KubeControllerManager, err)
		}
		if t.Failed() {
			t.Logf("%s output:\n%s", KubeControllerManager, lastLines(out.String(), 40))
		}
	})
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	b := []byte(s)
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			if n--; n < 0 {
				return string(b[i+1:])
			}
		}
	}
	return s
}
