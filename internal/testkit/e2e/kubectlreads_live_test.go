package e2e_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// kubectlReads are the read commands people type, each compared live and
// through kwrec serve.
func kubectlReads(ns string) [][]string {
	n := []string{"-n", ns}
	return [][]string{
		append([]string{"get", "cm"}, n...),
		append([]string{"get", "configmaps"}, n...),
		append([]string{"get", "configmap", "cm-a"}, n...),
		append([]string{"get", "cm", "cm-a", "-o", "yaml"}, n...),
		append([]string{"get", "cm", "-o", "json"}, n...),
		append([]string{"describe", "cm", "cm-a"}, n...),
		append([]string{"get", "cm", "-l", "first=true"}, n...),
		append([]string{"get", "cm", "--field-selector", "metadata.name=cm-b"}, n...),
		append([]string{"get", "cm", "--show-labels"}, n...),
		append([]string{"get", "cm", "-o", "wide"}, n...),
		append([]string{"get", "cm", "--sort-by", ".metadata.name"}, n...),
		{"api-resources"},
		{"explain", "configmap.data"},
	}
}

// kubectlCmd is kubectl with its discovery cache in a fresh directory (the
// replay must answer discovery itself).
func kubectlCmd(ctx context.Context, kubeconfig string, args ...string) *exec.Cmd {
	home, _ := os.MkdirTemp(workDir, "kubectl-home-*")
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", kubeconfig, "--cache-dir", home + "/cache"}, args...)...)
	cmd.Env = append(os.Environ(), "HOME="+home)
	return cmd
}

func runKubectl(ctx context.Context, kubeconfig string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	out, err := kubectlCmd(ctx, kubeconfig, args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// ages matches kubectl's AGE cells (3s, 2m5s, 4h, 10d) and describe's
// relative times: they tell when the command ran, not what the server holds.
var ages = regexp.MustCompile(`\b\d+(s|m|h|d)(\d+(s|m|h))?\b`)

func agesAside(s string) string { return ages.ReplaceAllString(s, "<age>") }

// TestLiveKubectlReadsPrintAsLive runs kubectl's read commands through
// kwrec serve of the `kwrec record` cassette and compares each output with
// what the same command printed live at the state a replay starts at (the
// recording's first list), ages aside: server-side printing (columns such
// as DATA), short names, categories, OpenAPI (explain), gets of objects
// that came from a list.
func TestLiveKubectlReadsPrintAsLive(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	s := serve(t, fx, rec.Cassette)
	for _, args := range kubectlReads(rec.Namespace) {
		name := strings.Join(args, " ")
		t.Run(name, func(t *testing.T) {
			if rec.KubectlLive[name] == "" {
				t.Fatal("kubectl printed nothing live")
			}
			got, err := runKubectl(t.Context(), s.Kubeconfig, args...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(agesAside(rec.KubectlLive[name]), agesAside(got)); d != "" {
				t.Errorf("kubectl %s through kwrec serve (-live +replayed):\n%s", name, d)
			}
		})
	}
}

// TestLiveKubectlGetWatchPrintsTheLiveTable runs `kubectl get configmaps
// -w` (the default table output) through kwrec serve and compares its rows
// with the live ones, ages aside.
func TestLiveKubectlGetWatchPrintsTheLiveTable(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	s := serve(t, fx, rec.Cassette)
	want := agesAside(rec.KubectlWatchLive)
	// The header with the server-side columns, the three listed objects
	// and the five changes.
	if !strings.HasPrefix(want, "NAME   DATA   AGE\n") || strings.Count(want, "\n") != 9 {
		t.Fatalf("live kubectl get -w printed:\n%s", rec.KubectlWatchLive)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	cmd := kubectlCmd(ctx, s.Kubeconfig, "get", "configmaps", "-n", rec.Namespace, "-w")
	var out syncBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// kubectl -w never exits by itself: stop it once it printed as many
	// lines as live, or at the timeout.
	for ctx.Err() == nil && strings.Count(out.String(), "\n") < strings.Count(want, "\n") {
		select {
		case <-ctx.Done():
		case <-time.After(50 * time.Millisecond):
		}
	}
	time.Sleep(200 * time.Millisecond) // anything more it would print
	cancel()
	cmd.Wait()
	if d := cmp.Diff(want, agesAside(out.String())); d != "" {
		t.Errorf("kubectl get -w through kwrec serve (-live +replayed):\n%s", d)
	}
}

// TestLiveKubectlGetWatchTableMeetsTheInjectedExpiry injects a 410 after
// the recorded watch's first event. kubectl's own watch (the Table form,
// no bookmarks) is a different request, yet crosses the same point: it
// prints the rows up to it as live, then the 410 once, and exits when the
// server ends the stream, as it does live.
func TestLiveKubectlGetWatchTableMeetsTheInjectedExpiry(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	s := serve(t, fx, rec.Cassette, "--watch-error", fmt.Sprintf("request=%d,after=1,code=410", rec.WatchID))
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	out, err := kubectlCmd(ctx, s.Kubeconfig, "get", "configmaps", "-n", rec.Namespace, "-w").Output()
	if err != nil || ctx.Err() != nil {
		t.Fatalf("kubectl get -w did not exit by itself after the 410: %v (context %v)\n%s", err, ctx.Err(), out)
	}
	live := strings.SplitAfter(agesAside(rec.KubectlWatchLive), "\n")
	got := strings.SplitAfter(agesAside(string(out)), "\n")
	// The header, the three listed objects and the first event, then the
	// Status: kubectl prints it as a table of its own.
	if len(got) < 7 || strings.Join(got[:5], "") != strings.Join(live[:5], "") ||
		!strings.HasPrefix(got[5], "STATUS") || !strings.Contains(got[6], "Expired") || strings.Count(string(out), "Expired") != 1 {
		t.Errorf("kubectl get -w printed:\n%s\nwant the live first 5 lines:\n%s\nthen the 410 once", out, strings.Join(live[:5], ""))
	}
	if warn := s.Stop(t); strings.Contains(warn, "did not fire") {
		t.Errorf("kwrec serve: %s", warn)
	}
}
