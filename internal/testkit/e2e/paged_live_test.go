package e2e_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/pager"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// The paged scenario, the shape of a real recording larger than a page:
// pagedObjects ConfigMaps of about 4 KB exist before `kwrec record
// configmaps` starts; during it pagedUpdates of them are updated and
// pagedDeletes deleted. kubectl pages its lists by 500, so its list is
// four pages.
const (
	pagedObjects = 2000
	pagedUpdates = 1000
	pagedDeletes = 200
)

// pagedRecording is the paged scenario as recorded, and what real clients
// printed live.
type pagedRecording struct {
	Cassette, Namespace string
	// Initial is the live state before the changes: name -> resourceVersion.
	Initial map[string]string
	// KubectlLive is what `kubectl get` printed live before the changes,
	// by its arguments: the table and -o json.
	KubectlLive map[string]string
	// KubectlWatchLive is what `kubectl get configmaps -w` printed live
	// from before the changes until after the last one.
	KubectlWatchLive string
	// KubectlFinalLive is what `kubectl get configmaps` printed live after
	// the changes.
	KubectlFinalLive string
}

// pagedReads are the kubectl reads of the paged scenario compared live and
// replayed at the state before the changes.
func pagedReads(ns string) [][]string {
	return [][]string{{"get", "configmaps", "-n", ns}, {"get", "configmaps", "-n", ns, "-o", "json"}}
}

// recordPaged records the paged scenario with `kwrec record configmaps`,
// while kubectl get -w watches it live. cs must not be rate limited.
func recordPaged(ctx context.Context, cs kubernetes.Interface, kwrec, kubeconfig string) (*pagedRecording, error) {
	rec := &pagedRecording{Namespace: "e2e-paged", Cassette: filepath.Join(workDir, "paged.kwrec.zst"), KubectlLive: map[string]string{}}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rec.Namespace}}, metav1.CreateOptions{}); err != nil {
		return nil, err
	}
	cms := cs.CoreV1().ConfigMaps(rec.Namespace)
	if err := parallel(ctx, pagedObjects, func(i int) error {
		_, err := cms.Create(ctx, pagedCM(i, "a"), metav1.CreateOptions{})
		return err
	}); err != nil {
		return nil, fmt.Errorf("creating the paged scenario's ConfigMaps: %w", err)
	}
	var stderr syncBuffer
	cmd := exec.CommandContext(ctx, kwrec, "record", "configmaps", "-n", rec.Namespace, "--duration", "150s", "-o", rec.Cassette, "--kubeconfig", kubeconfig)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		if err := cmd.Wait(); err != nil {
			return fmt.Errorf("kwrec record: %v\n%s", err, stderr.String())
		}
		return nil
	}
	// Both of the recorder's watches (the JSON one and kubectl's Table
	// form) must be open before anything changes.
	if err := waitFor(ctx, 60*time.Second, func() bool { return watchesWith(rec.Cassette, 0) >= 2 }); err != nil {
		return nil, errors.Join(fmt.Errorf("kwrec record opened no watches: %w", err), stop())
	}
	l, err := cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, errors.Join(err, stop())
	}
	rec.Initial = map[string]string{}
	for _, cm := range l.Items {
		rec.Initial[cm.Name] = cm.ResourceVersion
	}
	for _, args := range pagedReads(rec.Namespace) {
		out, err := runKubectl(ctx, kubeconfig, args...)
		if err != nil {
			return nil, errors.Join(err, stop())
		}
		rec.KubectlLive[strings.Join(args, " ")] = out
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	defer stopWatch()
	var watchOut syncBuffer
	kw := kubectlCmd(watchCtx, kubeconfig, "get", "configmaps", "-n", rec.Namespace, "-w")
	kw.Stdout = &watchOut
	if err := kw.Start(); err != nil {
		return nil, errors.Join(err, stop())
	}
	lines := func() int { return strings.Count(watchOut.String(), "\n") }
	// kubectl printed its list; its watch starts from the list's
	// resourceVersion, so it sees every change made from here on.
	if err := waitFor(ctx, 60*time.Second, func() bool { return lines() >= 1+pagedObjects }); err != nil {
		return nil, errors.Join(fmt.Errorf("live kubectl get -w listed %d lines: %w", lines(), err), stop())
	}
	err = parallel(ctx, pagedUpdates+pagedDeletes, func(i int) error {
		if i < pagedUpdates {
			_, err := cms.Update(ctx, pagedCM(i, "b"), metav1.UpdateOptions{})
			return err
		}
		return cms.Delete(ctx, pagedCM(pagedObjects-pagedDeletes+i-pagedUpdates, "").Name, metav1.DeleteOptions{})
	})
	if err == nil {
		err = waitFor(ctx, 60*time.Second, func() bool { return lines() >= 1+pagedObjects+pagedUpdates+pagedDeletes })
	}
	// The recorder has every change on both its watches (it flushes
	// every second), then it is stopped.
	if err == nil {
		err = waitFor(ctx, 60*time.Second, func() bool { return watchesWith(rec.Cassette, pagedUpdates+pagedDeletes) >= 2 })
	}
	stopWatch()
	kw.Wait()
	rec.KubectlWatchLive = watchOut.String()
	if err == nil {
		rec.KubectlFinalLive, err = runKubectl(ctx, kubeconfig, pagedReads(rec.Namespace)[0]...)
	}
	if err := errors.Join(err, stop()); err != nil {
		return nil, err
	}
	return rec, nil
}

// pagedCM is ConfigMap i of the paged scenario, its 4 KB value made of v.
func pagedCM(i int, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%05d", i)},
		Data:       map[string]string{"payload": strings.Repeat(v, 4000)},
	}
}

// parallel runs f(0..n-1) on 8 goroutines and returns the first error.
func parallel(ctx context.Context, n int, f func(i int) error) error {
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for range 8 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := 0; i < n && ctx.Err() == nil; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// waitFor polls cond every 50 ms until it holds, or fails after d.
func waitFor(ctx context.Context, d time.Duration, cond func() bool) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for !cond() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return nil
}

// watchFrames returns, for each watch whose response head the (possibly
// still growing) cassette at path holds, how many frames it has so far.
func watchFrames(path string) []int {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	r, err := cassettes.NewReader(f, path)
	if err != nil {
		return nil
	}
	watches, frames := map[int]bool{}, map[int]int{}
	var order []int
	for {
		e, err := r.Next()
		switch {
		case err != nil:
			out := make([]int, len(order))
			for i, id := range order {
				out[i] = frames[id]
			}
			return out
		case e.Request != nil && strings.Contains(e.Request.URL, "watch=true"):
			watches[e.ID] = true
		case e.Response != nil && watches[e.ID]:
			order = append(order, e.ID)
		case e.Frame != nil && watches[e.ID]:
			frames[e.ID]++
		}
	}
}

// watchesWith counts the watches recorded at path with at least n frames.
func watchesWith(path string, n int) int {
	k := 0
	for _, f := range watchFrames(path) {
		if f >= n {
			k++
		}
	}
	return k
}

// TestLivePagedRecordingReplaysAsLive replays a `kwrec record` recording
// larger than a page to the clients that page through it, and compares
// each with what it printed or listed live: kubectl get -w (the first run
// through the recorded pages, a second through pages the replay makes),
// kubectl get in the table and -o json, client-go's pager in process and
// through kwrec serve, python3-kubernetes' limit/_continue, at speed 0 and
// 1.
func TestLivePagedRecordingReplaysAsLive(t *testing.T) {
	fx := fixture(t)
	rec := fx.paged
	wantWatch := agesAside(rec.KubectlWatchLive)
	if n := strings.Count(wantWatch, "\n"); n != 1+pagedObjects+pagedUpdates+pagedDeletes {
		t.Fatalf("live kubectl get -w printed %d lines, want %d", n, 1+pagedObjects+pagedUpdates+pagedDeletes)
	}
	for _, speed := range []string{"0", "1"} {
		t.Run("kubectl get -w at speed "+speed+", twice", func(t *testing.T) {
			s := serve(t, fx, rec.Cassette, "--speed", speed)
			// The first run meets the recorded pages; the second, once the
			// replay has played everything, lists the final state in pages
			// the replay makes, as a second kubectl would live.
			for run, want := range []string{wantWatch, agesAside(rec.KubectlFinalLive)} {
				got := kubectlWatchLines(t, s.Kubeconfig, []string{"configmaps", "-n", rec.Namespace}, strings.Count(want, "\n"))
				if d := cmp.Diff(strings.SplitAfter(want, "\n"), strings.SplitAfter(agesAside(got), "\n")); d != "" {
					t.Errorf("run %d: kubectl get -w through kwrec serve --speed %s (-live +replayed):\n%s", run+1, speed, d)
				}
			}
		})
		t.Run("client-go's pager in process at speed "+speed, func(t *testing.T) {
			r, err := replay.Open(rec.Cassette, replay.Options{Speed: map[string]float64{"0": 0, "1": 1}[speed]})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			got := pagerList(t, r.Config(), rec.Namespace)
			if d := cmp.Diff(rec.Initial, got); d != "" {
				t.Errorf("client-go's pager (-live +replayed):\n%s", d)
			}
		})
		t.Run("python's limit and _continue at speed "+speed, func(t *testing.T) {
			s := serve(t, fx, rec.Cassette, "--speed", speed)
			got := pyPage(t, s.Kubeconfig, rec.Namespace)
			want := pyPages{Items: rec.Initial, Pages: 4, Remaining: []int{1500, 1000, 500}}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("python3-kubernetes (-live +replayed):\n%s", d)
			}
		})
	}
	t.Run("kubectl get, the table and -o json", func(t *testing.T) {
		s := serve(t, fx, rec.Cassette)
		for _, args := range pagedReads(rec.Namespace) {
			name := strings.Join(args, " ")
			got, err := runKubectl(t.Context(), s.Kubeconfig, args...)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(agesAside(rec.KubectlLive[name]), agesAside(got)); d != "" {
				t.Errorf("kubectl %s through kwrec serve (-live +replayed):\n%s", name, d)
			}
		}
	})
	t.Run("client-go's pager through kwrec serve", func(t *testing.T) {
		s := serve(t, fx, rec.Cassette)
		if d := cmp.Diff(rec.Initial, pagerList(t, s.Config(t), rec.Namespace)); d != "" {
			t.Errorf("client-go's pager (-live +replayed):\n%s", d)
		}
	})
}

// continueGone is kube-apiserver's message for a continue token whose
// resourceVersion etcd compacted (k8s.io/apiserver v0.37.2,
// storage/etcd3/errors.go, inconsistentContinue).
const continueGone = "The provided continue parameter is too old to display a consistent list result. " +
	"You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. " +
	"Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."

// TestLivePagedExpiredContinue injects the server's 410 for a compacted
// continue token on the first continued page: kubectl get prints the first
// page and the server's message and exits 1; client-go's pager falls back
// to a full list, as it does live, and gets every object.
func TestLivePagedExpiredContinue(t *testing.T) {
	fx := fixture(t)
	rec := fx.paged
	const edit = "expire-continue:resource=configmaps,nth=1"
	t.Run("kubectl get", func(t *testing.T) {
		s := serve(t, fx, rec.Cassette, "--edit", edit)
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		defer cancel()
		cmd := kubectlCmd(ctx, s.Kubeconfig, "get", "configmaps", "-n", rec.Namespace)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("kubectl get: %v, want exit status 1", err)
		}
		want := "Error from server (Expired): " + continueGone + "\n"
		if stderr.String() != want {
			t.Errorf("kubectl's stderr:\n%s\nwant:\n%s", stderr.String(), want)
		}
		firstPage := strings.Join(strings.SplitAfter(agesAside(rec.KubectlLive[strings.Join(pagedReads(rec.Namespace)[0], " ")]), "\n")[:501], "")
		if d := cmp.Diff(firstPage, agesAside(stdout.String())); d != "" {
			t.Errorf("kubectl's first page (-live +replayed):\n%s", d)
		}
	})
	t.Run("client-go's pager", func(t *testing.T) {
		r := openReplay(t, rec.Cassette, edit)
		var w wire
		cfg := r.Config()
		w.wrap(cfg)
		if d := cmp.Diff(rec.Initial, pagerList(t, cfg, rec.Namespace)); d != "" {
			t.Errorf("client-go's pager (-live +replayed):\n%s", d)
		}
		if n := w.count(410); n != 1 {
			t.Errorf("the pager met 410 %d times, want 1:\n%s", n, &w)
		}
		if reps := r.Edits(); reps[0].Fired != 1 {
			t.Errorf("edit: %s", reps[0])
		}
	})
	t.Run("python", func(t *testing.T) {
		s := serve(t, fx, rec.Cassette, "--edit", edit)
		var got struct {
			Error   int    `json:"error"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		pyRun(t, &got, s.Kubeconfig, rec.Namespace)
		if got.Error != 410 || got.Reason != "Expired" || got.Message != continueGone {
			t.Errorf("python3-kubernetes met %+v, want the 410 Expired with the server's message", got)
		}
	})
}

// kubectlWatchLines runs `kubectl get -w ARGS` until it printed n lines
// and then nothing for half a second (or for 60 s), and returns what it
// printed.
func kubectlWatchLines(t *testing.T, kubeconfig string, args []string, n int) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	cmd := kubectlCmd(ctx, kubeconfig, append([]string{"get", "-w"}, args...)...)
	var out, stderr syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	lines := func() int { return strings.Count(out.String(), "\n") }
	for {
		before := lines()
		select {
		case err := <-exited:
			t.Errorf("kubectl get -w exited: %v\n%s", err, lastLines(stderr.String(), 4))
			return out.String()
		case <-ctx.Done():
			t.Errorf("kubectl get -w printed %d lines in 60s, want %d", lines(), n)
			cmd.Process.Kill()
			<-exited
			return out.String()
		case <-time.After(500 * time.Millisecond):
		}
		if now := lines(); now >= n && now == before {
			cmd.Process.Kill()
			<-exited
			return out.String()
		}
	}
}

// pagerList lists ns's ConfigMaps with client-go's pager (pages of 500,
// falling back to a full list on an expired continue), in JSON as a
// dynamic tool would: name -> resourceVersion.
func pagerList(t *testing.T, cfg *rest.Config, ns string) map[string]string {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().ConfigMaps(ns).List(ctx, o)
	})
	// List, not EachListItem: only List falls back to a full list.
	l, _, err := p.List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("pager: %v", err)
	}
	got := map[string]string{}
	if err := meta.EachListItem(l, func(o runtime.Object) error {
		cm := o.(*corev1.ConfigMap)
		got[cm.Name] = cm.ResourceVersion
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return got
}

// pyPages is what testdata/pypage.py prints of a list it paged through.
type pyPages struct {
	Items     map[string]string `json:"items"`
	Pages     int               `json:"pages"`
	Remaining []int             `json:"remaining"`
}

func pyPage(t *testing.T, kubeconfig, ns string) pyPages {
	var got pyPages
	pyRun(t, &got, kubeconfig, ns)
	return got
}

// pyRun runs testdata/pypage.py with pages of 500 and decodes what it
// printed into v.
func pyRun(t *testing.T, v any, kubeconfig, ns string) {
	t.Helper()
	if out, err := exec.Command(python, "-c", "import kubernetes").CombinedOutput(); err != nil {
		t.Skipf("%s has no python3-kubernetes: %v\n%s", python, err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "testdata/pypage.py", kubeconfig, ns, "500").Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("pypage.py: %v\n%s", err, lastLines(string(stderr), 6))
	}
	if err := json.Unmarshal(out, v); err != nil {
		t.Fatalf("pypage.py printed %q: %v", out, err)
	}
}
