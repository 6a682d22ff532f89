package controlplanetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
)

// Component is one process of the control plane, for [ControlPlane.Kill]
// and [ControlPlane.Restart].
type Component string

// The control plane's processes.
const (
	APIServer Component = "kube-apiserver"
	Etcd      Component = "etcd"
)

// Kill kills c with SIGKILL, as a crash or the OOM killer would, and waits
// until it is gone. Nothing of it is cleaned up: its port, certificates and
// data directory stay as they were, so that [ControlPlane.Restart] brings
// it back where the clients (and [ControlPlane.Kubeconfig]) expect it.
//
// envtest's own Stop and Start cannot do this: Stop removes a generated
// certificate or data directory, and Start then makes a new CA, so every
// client's credentials would go stale.
func (cp *ControlPlane) Kill(c Component) error {
	if cp.env == nil {
		return errors.New("kill: the control plane is stopped")
	}
	if p := cp.restarted[c]; p != nil {
		delete(cp.restarted, c)
		return p.kill()
	}
	pid, argv, err := cp.find(c)
	if err != nil {
		return err
	}
	if cp.argv == nil {
		cp.argv = map[Component][]string{}
	}
	cp.argv[c] = argv
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("killing %s (pid %d): %w", c, pid, err)
	}
	// envtest's goroutine reaps it; wait until it has.
	for {
		if _, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid))); errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart starts c again after [ControlPlane.Kill], with the command line
// it was killed with: the same port, certificates and data directory. It
// returns once c answers its health check (kube-apiserver's /readyz, etcd's
// /health), or with ctx's error. [ControlPlane.Stop] stops the restarted
// process.
func (cp *ControlPlane) Restart(ctx context.Context, c Component) error {
	if cp.env == nil {
		return errors.New("restart: the control plane is stopped")
	}
	argv := cp.argv[c]
	if argv == nil || cp.restarted[c] != nil {
		return fmt.Errorf("restart: %s was not killed; Kill it first", c)
	}
	var client *http.Client
	var health string
	switch c {
	case APIServer:
		hc, err := rest.HTTPClientFor(cp.Config)
		if err != nil {
			return err
		}
		client, health = hc, strings.TrimSuffix(cp.Config.Host, "/")+"/readyz"
	case Etcd:
		client, health = http.DefaultClient, cp.env.ControlPlane.Etcd.URL.String()+"/health"
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	// Its own process group, as envtest starts it: a Ctrl-C to the test
	// does not reach it before Stop does.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("restarting %s: %w", c, err)
	}
	p := &restarted{cmd: cmd, exited: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	if cp.restarted == nil {
		cp.restarted = map[Component]*restarted{}
	}
	cp.restarted[c] = p
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, health, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-p.exited:
			delete(cp.restarted, c)
			return fmt.Errorf("restarted %s exited before it was healthy: %s", c, lastLine(stderr.String()))
		case <-ctx.Done():
			return fmt.Errorf("restarted %s not healthy: %w", c, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// find returns the pid and command line of envtest's c, known by the
// directory only it uses (kube-apiserver's certificates, etcd's data).
func (cp *ControlPlane) find(c Component) (int, []string, error) {
	var dir string
	switch c {
	case APIServer:
		dir = cp.env.ControlPlane.APIServer.CertDir
	case Etcd:
		dir = cp.env.ControlPlane.Etcd.DataDir
	default:
		return 0, nil, fmt.Errorf("unknown component %q", c)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		return 0, nil, err
	}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue // gone, or a kernel thread
		}
		argv := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
		if filepath.Base(argv[0]) != string(c) || !strings.Contains(string(b), dir) {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(p)))
		if err != nil {
			continue
		}
		return pid, argv, nil
	}
	return 0, nil, fmt.Errorf("no running %s using %s", c, dir)
}

// restarted is a process [ControlPlane.Restart] started.
type restarted struct {
	cmd *exec.Cmd
	// exited is closed once cmd has been waited for.
	exited chan struct{}
}

// kill kills the process with SIGKILL and waits until it is gone.
func (p *restarted) kill() error {
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("killing %s: %w", filepath.Base(p.cmd.Path), err)
	}
	<-p.exited // killed: its exit status says nothing
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}
