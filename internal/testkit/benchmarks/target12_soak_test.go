package benchmarks_test

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kwrec/kwrec/cassettes"
)

// How long BenchmarkRetentionSoak records and within what budget (Go
// duration; a size as kwrec record's --max-size takes it). Issue 27 asks
// for 2h and 50MB; the default is that soak scaled down, the same three
// times over its budget and more.
const (
	soakForEnv    = "KWREC_BENCH_SOAK_FOR"
	soakBudgetEnv = "KWREC_BENCH_SOAK_BUDGET"
	soakDirEnv    = "KWREC_BENCH_SOAK_DIR" // where the recordings are written and kept, to look at
	soakKeep      = 5                      // parts kept: the budget is soakKeep parts
	soakObjects   = 1_000                  // the cluster's objects at the start
)

// soakSettings returns the soak's length and disk budget in bytes.
func soakSettings(b *testing.B) (time.Duration, int64) {
	d, budget := 20*time.Minute, int64(5_000_000)
	if v := os.Getenv(soakForEnv); v != "" {
		var err error
		if d, err = time.ParseDuration(v); err != nil || d <= 0 {
			b.Fatalf("$%s=%q: want a positive Go duration such as 2h", soakForEnv, v)
		}
	}
	if v := os.Getenv(soakBudgetEnv); v != "" {
		n, err := strconv.ParseInt(strings.TrimSuffix(v, "MB"), 10, 64)
		if err != nil || n <= 0 || !strings.HasSuffix(v, "MB") {
			b.Fatalf("$%s=%q: want a size in MB such as 50MB", soakBudgetEnv, v)
		}
		budget = n * 1_000_000
	}
	return d, budget
}

// BenchmarkRetentionSoak is target 12 (issue 27): a flight recording kept
// within a disk budget. On a control plane holding 1,000 objects of the
// 20 kinds of target 11 under its load (50 changes a second), two
// `kwrec record --all` run side by side for the soak's length: one with
// --max-size budget/5 --keep 5, one writing the whole recording. Then the
// load stops, a last ConfigMap (soak-end) is made, and once both have
// recorded it they are interrupted.
//
// Measured: the kept recording's bytes on disk (every file in its
// directory, the new state's temporary file included), sampled every
// 50ms and at each line the recorder prints (a part started, parts
// dropped); the peak against what the retention promises, the budget
// plus one part (an error over it), and how many samples were over the
// budget itself. Then the kept parts, linted whole,
// and the whole recording are each played forward (every collection's
// lists, then its watch events) to their final state: every object's
// resourceVersion, by collection. The two must be the same (an error
// otherwise), soak-end in both.
//
// The soak is 20 minutes with a 5 MB budget, or $KWREC_BENCH_SOAK_FOR
// and $KWREC_BENCH_SOAK_BUDGET (issue 27's: 2h and 50MB). Skipped
// without the control plane binaries (see internal/testkit/controlplanetest).
func BenchmarkRetentionSoak(b *testing.B) {
	soakFor, budget := soakSettings(b)
	cp, load := loadedControlPlane(b, soakObjects)
	bin := kwrecBinary(b)
	partSize := budget / soakKeep
	for b.Loop() {
		dir, err := os.MkdirTemp(cmp.Or(os.Getenv(soakDirEnv), tempDir(b)), "soak-")
		if err != nil {
			b.Fatal(err)
		}
		keptDir := filepath.Join(dir, "kept")
		if err := os.Mkdir(keptDir, 0o755); err != nil {
			b.Fatal(err)
		}
		disk := &diskPeak{dir: keptDir, budget: budget}
		kept := startRecorder(b, bin, cp.Kubeconfig, disk.line, "--max-size", strconv.FormatInt(partSize, 10), "--keep", strconv.Itoa(soakKeep),
			"-o", filepath.Join(keptDir, "soak.kwrec.zst"))
		whole := startRecorder(b, bin, cp.Kubeconfig, nil, "-o", filepath.Join(dir, "whole.kwrec.zst"))
		kept.waitWatching(b)
		whole.waitWatching(b)

		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var changes int64
		wg.Go(func() { changes = load.run(ctx) })
		wg.Go(func() { disk.every(ctx, 50*time.Millisecond) })
		time.Sleep(soakFor) // the soak: the load runs, the recorders record
		stop()
		wg.Wait()
		endRV := soakEnd(b, load.dyn)
		keptState := kept.stopAfter(b, endRV, filepath.Join(keptDir, "soak-*.kwrec.zst"))
		wholeState := whole.stopAfter(b, endRV, filepath.Join(dir, "whole.kwrec.zst"))
		disk.sample()

		b.StopTimer()
		if code, out := runKwrec(bin, "lint", filepath.Join(keptDir, "soak-*.kwrec.zst")); code != 0 || out != "" {
			b.Errorf("kwrec lint of the kept parts exited with %d:\n%s", code, out)
		}
		reportSoak(b, soakFor, budget, partSize, changes, disk, kept, keptState, wholeState, keptDir)
		if os.Getenv(soakDirEnv) == "" {
			os.RemoveAll(dir)
		} else {
			b.Logf("the recordings are kept in %s", dir)
		}
		b.StartTimer()
	}
}

// soakEnd makes the ConfigMap soak-end in bench-0 and returns its
// resourceVersion: a change after every change of the load.
func soakEnd(b *testing.B, dyn dynamic.Interface) int64 {
	cm := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "soak-end", "namespace": "bench-0"}, "data": map[string]any{"k": "end"}}}
	made, err := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("bench-0").
		Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		b.Fatal(err)
	}
	rv, err := strconv.ParseInt(made.GetResourceVersion(), 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return rv
}

// soakRecorder is one `kwrec record --all` of the soak, its stderr read line
// by line.
type soakRecorder struct {
	cmd      *exec.Cmd
	mu       sync.Mutex
	lines    []string
	watching chan struct{}
	done     chan struct{}
}

// startRecorder starts `kwrec record --all` with args, calling onLine
// (when not nil) with each line it prints.
func startRecorder(b *testing.B, bin, kubeconfig string, onLine func(string), args ...string) *soakRecorder {
	r := &soakRecorder{watching: make(chan struct{}), done: make(chan struct{})}
	r.cmd = exec.Command(bin, append([]string{"record", "--all", "--kubeconfig", kubeconfig}, args...)...)
	stderr, err := r.cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := r.cmd.Start(); err != nil {
		b.Fatal(err)
	}
	go func() {
		defer close(r.done)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
		var once sync.Once
		for sc.Scan() {
			r.mu.Lock()
			r.lines = append(r.lines, sc.Text())
			r.mu.Unlock()
			if onLine != nil {
				onLine(sc.Text())
			}
			if strings.Contains(sc.Text(), "is recorded; watching") {
				once.Do(func() { close(r.watching) })
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	return r
}

// log is what the recorder printed so far.
func (r *soakRecorder) log() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.lines, "\n")
}

// waitWatching waits until the recorder has listed every collection.
func (r *soakRecorder) waitWatching(b *testing.B) {
	select {
	case <-r.watching:
	case <-r.done:
		b.Fatalf("%s exited before recording the initial state:\n%s", r.cmd, r.log())
	case <-time.After(5 * time.Minute):
		b.Fatalf("%s: the initial state not recorded in 5 minutes:\n%s", r.cmd, r.log())
	}
}

// stopAfter waits until the recording at pattern holds resourceVersion
// rv (the recorder flushes every second), interrupts the recorder and
// returns the recording's final state.
func (r *soakRecorder) stopAfter(b *testing.B, rv int64, pattern string) finalState {
	deadline := time.Now().Add(time.Minute)
	for {
		st, err := playForward(pattern)
		if err == nil && st.maxRV >= rv {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: the recording does not reach resourceVersion %d within a minute (%v):\n%s", r.cmd, rv, err, r.log())
		}
		time.Sleep(time.Second) // the recorder's flush interval
	}
	if err := r.cmd.Process.Signal(os.Interrupt); err != nil {
		b.Fatal(err)
	}
	<-r.done
	if err := r.cmd.Wait(); err != nil {
		b.Fatalf("%s: %v\n%s", r.cmd, err, r.log())
	}
	st, err := playForward(pattern)
	if err != nil {
		b.Fatalf("reading %s: %v", pattern, err)
	}
	return st
}

// diskPeak samples the bytes of every file in dir, keeping the largest.
type diskPeak struct {
	dir     string
	budget  int64
	mu      sync.Mutex
	peak    int64
	samples int
	parts   int     // files at the peak
	over    int     // samples over the budget
	pass    int64   // the largest sample since the last pass ended
	passes  []int64 // each pass's largest sample: from the line of the pass before to its own
}

// line samples at a line the recorder printed, and at the line of a
// pass (parts dropped: printed once its new state is in place) notes
// the largest sample since the one before.
func (d *diskPeak) line(l string) {
	d.sample()
	if keptLine.MatchString(l) {
		d.mu.Lock()
		d.passes = append(d.passes, d.pass)
		d.pass = 0
		d.mu.Unlock()
	}
}

// sample adds one sample.
func (d *diskPeak) sample() {
	entries, err := os.ReadDir(d.dir)
	if err != nil {
		return
	}
	var n int64
	files := 0
	for _, e := range entries {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
			files++
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.samples++
	if n > d.peak {
		d.peak, d.parts = n, files
	}
	if n > d.budget {
		d.over++
	}
	d.pass = max(d.pass, n)
}

// every samples every period until ctx is done.
func (d *diskPeak) every(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			d.sample()
		}
	}
}

// finalState is where a recording ends: every object's resourceVersion,
// by collection (the list's path) and namespace/name.
type finalState struct {
	objects map[string]map[string]int64
	maxRV   int64
	events  int
}

// playForward reads the recording at pattern and plays each recorded
// collection forward: a list (its first page) replaces the collection's
// objects, a later page adds to them, a watch event adds, changes or
// removes one. Table-form requests (kubectl's columns) are left out.
func playForward(pattern string) (finalState, error) {
	rd, err := cassettes.Open(pattern)
	if err != nil {
		return finalState{}, err
	}
	defer rd.Close()
	st := finalState{objects: map[string]map[string]int64{}}
	type call struct {
		path  string
		watch bool
		page  bool
	}
	calls := map[int]*call{}
	for {
		e, err := rd.Next()
		if errors.Is(err, io.EOF) || errors.Is(err, cassettes.ErrTruncated) {
			return st, nil // a part being written ends mid-frame
		}
		if err != nil {
			return st, err
		}
		switch {
		case e.Request != nil:
			u, err := url.Parse(e.Request.URL)
			if err != nil || e.Request.Method != "GET" || strings.Contains(strings.Join(e.Request.Header["Accept"], ","), "as=Table") {
				continue
			}
			q := u.Query()
			calls[e.ID] = &call{path: u.Path, watch: q.Get("watch") == "true", page: q.Get("continue") != ""}
		case e.Frame != nil:
			c := calls[e.ID]
			if c == nil {
				continue
			}
			if err := st.apply(c.path, c.watch, c.page, e.Frame.Data); err != nil {
				return st, fmt.Errorf("%s line %d: %w", pattern, e.Line, err)
			}
		}
	}
}

// apply plays one frame of the collection at path forward.
func (st *finalState) apply(path string, watch, page bool, data []byte) error {
	type meta struct {
		Metadata struct{ Namespace, Name, ResourceVersion string }
	}
	rvOf := func(s string) int64 { n, _ := strconv.ParseInt(s, 10, 64); return n }
	objs := st.objects[path]
	if !watch {
		var l struct {
			Kind     string
			Metadata struct{ ResourceVersion string }
			Items    []meta
		}
		if json.Unmarshal(data, &l) != nil || !strings.HasSuffix(l.Kind, "List") || strings.HasPrefix(l.Kind, "API") {
			return nil // a get, discovery, or not JSON
		}
		if objs == nil || !page {
			objs = map[string]int64{}
			st.objects[path] = objs
		}
		for _, it := range l.Items {
			objs[it.Metadata.Namespace+"/"+it.Metadata.Name] = rvOf(it.Metadata.ResourceVersion)
		}
		st.maxRV = max(st.maxRV, rvOf(l.Metadata.ResourceVersion))
		return nil
	}
	var ev struct {
		Type   string
		Object meta
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		return fmt.Errorf("a watch frame of %s: %w", path, err)
	}
	if objs == nil {
		objs = map[string]int64{}
		st.objects[path] = objs
	}
	key, rv := ev.Object.Metadata.Namespace+"/"+ev.Object.Metadata.Name, rvOf(ev.Object.Metadata.ResourceVersion)
	switch ev.Type {
	case "ADDED", "MODIFIED":
		objs[key] = rv
	case "DELETED":
		delete(objs, key)
	default:
		return nil // BOOKMARK, ERROR
	}
	st.events++
	st.maxRV = max(st.maxRV, rv)
	return nil
}

// partStarted and keptLine are the recorder's lines of a part started and
// of the retention's deletes.
var (
	partStarted = regexp.MustCompile(`^kwrec: recording: part (\d+) started`)
	keptLine    = regexp.MustCompile(`^kwrec: keep: dropped parts? (\d+)(?:-(\d+))?; `)
)

// reportSoak reports the soak's metrics and checks the budget and the
// final states.
func reportSoak(b *testing.B, soakFor time.Duration, budget, partSize, changes int64, disk *diskPeak, kept *soakRecorder, keptState, wholeState finalState, keptDir string) {
	parts, deleted := 0, 0
	for _, l := range strings.Split(kept.log(), "\n") {
		if m := partStarted.FindStringSubmatch(l); m != nil {
			parts, _ = strconv.Atoi(m[1])
		}
		if m := keptLine.FindStringSubmatch(l); m != nil {
			from, _ := strconv.Atoi(m[1])
			to := from
			if m[2] != "" {
				to, _ = strconv.Atoi(m[2])
			}
			deleted += to - from + 1
		}
	}
	disk.mu.Lock()
	peak, samples, files, over := disk.peak, disk.samples, disk.parts, disk.over
	passes := slices.Clone(disk.passes)
	disk.mu.Unlock()
	if len(passes) > 0 {
		slices.Sort(passes)
		b.Logf("each pass's peak, %d passes: median %.2f MB (%.2f-%.2f)", len(passes),
			float64(passes[len(passes)/2])/1e6, float64(passes[0])/1e6, float64(passes[len(passes)-1])/1e6)
		b.ReportMetric(float64(passes[len(passes)/2])/1e6, "pass-peak-median-MB")
	}
	b.Logf("soak of %v: %d changes; %d parts of %.1f MB written, %d deleted; disk peak %.2f MB in %d files (%d samples), budget %.1f MB + a part %.1f MB",
		soakFor, changes, parts, float64(partSize)/1e6, deleted, float64(peak)/1e6, files, samples, float64(budget)/1e6, float64(partSize)/1e6)
	state, largest := stateSize(b, keptDir)
	bound := budget + partSize
	b.Logf("the state (the rebased part before the kept ones) %.2f MB, the largest part %.2f MB; %d samples over the budget",
		float64(state)/1e6, float64(largest)/1e6, over)
	b.ReportMetric(float64(peak)/1e6, "disk-peak-MB")
	b.ReportMetric(float64(bound)/1e6, "budget+part-MB")
	b.ReportMetric(float64(state)/1e6, "state-MB")
	b.ReportMetric(float64(parts), "parts")
	b.ReportMetric(float64(deleted), "parts-deleted")
	b.ReportMetric(float64(changes), "changes")
	if peak > bound {
		b.Errorf("the kept recording's disk peaked at %d bytes, over the budget and a part (%d)", peak, bound)
	}
	if deleted == 0 {
		b.Errorf("the soak deleted no part: it never reached its budget (%d parts written)", parts)
	}
	objects, differ := 0, []string{}
	for _, path := range slices.Sorted(maps.Keys(wholeState.objects)) {
		w, k := wholeState.objects[path], keptState.objects[path]
		objects += len(w)
		if !maps.Equal(w, k) {
			differ = append(differ, fmt.Sprintf("%s (%d objects whole, %d kept)", path, len(w), len(k)))
		}
	}
	for path := range keptState.objects {
		if _, ok := wholeState.objects[path]; !ok {
			differ = append(differ, path+" (only in the kept parts)")
		}
	}
	b.Logf("final state: %d objects in %d collections; the whole recording %d events, the kept parts %d", objects, len(wholeState.objects), wholeState.events, keptState.events)
	b.ReportMetric(float64(objects), "final-objects")
	b.ReportMetric(float64(len(differ)), "collections-differ")
	if len(differ) > 0 {
		b.Errorf("the kept parts and the whole recording end in different states in %d collections: %s", len(differ), strings.Join(differ, "; "))
	}
	if _, ok := keptState.objects["/api/v1/configmaps"]["bench-0/soak-end"]; !ok {
		b.Error("the kept parts end without soak-end, the change after the load")
	}
}

// stateSize returns the size of the state the kept parts start with, the
// oldest part in dir at the end (rebased, it holds the state alone), and
// the largest whole part's size (a part ends up to a flush past
// --max-size).
func stateSize(b *testing.B, dir string) (state, largest int64) {
	names, err := filepath.Glob(filepath.Join(dir, "soak-*.kwrec.zst"))
	if err != nil || len(names) < 3 {
		b.Fatalf("the kept parts %q (%v): want the rebased one and at least two more", names, err)
	}
	slices.Sort(names)
	var sizes []int64
	for _, n := range names {
		fi, err := os.Stat(n)
		if err != nil {
			b.Fatal(err)
		}
		sizes = append(sizes, fi.Size())
	}
	return sizes[0], slices.Max(sizes[1:])
}

// runKwrec runs the kwrec binary with args and returns its exit code and
// what it printed.
func runKwrec(bin string, args ...string) (int, string) {
	out, err := exec.Command(bin, args...).CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), string(out)
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, string(out)
}
