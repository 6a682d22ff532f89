package benchmarks_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// pushForEnv overrides how long BenchmarkPushRecordAll records target
// 11's load (a Go duration, default 3m).
const pushForEnv = "KWREC_BENCH_PUSH_FOR"

func pushFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(pushForEnv)); err == nil && d > 0 {
		return d
	}
	return 3 * time.Minute
}

// The ConfigMap BenchmarkPushRecordAll makes once the load stops: the
// recording is whole when it holds it. The push makes it last, one
// create among the load's thousands of changes.
const (
	pushEndNS   = "bench-0"
	pushEndName = "push-end"
	pushEndJSON = `"data":{"push-bench":"end"}` // in its JSON forms only (watch event, list): Table rows carry no data
)

// BenchmarkPushRecordAll is issue 40's lateness target on target 11's
// workload: `kwrec record --all` of a control plane holding 10,000
// objects of 20 kinds (BenchmarkRecordAll's) while its load generator
// makes 50 changes a second for 3 minutes ($KWREC_BENCH_PUSH_FOR), then,
// the source stopped, `kwrec push --all --speed 1` of the whole
// recording into a fresh control plane without controllers, once a
// round ($KWREC_BENCH_PUSH_ROUNDS, default 3), a fresh control plane
// each. Push reports the lateness of each change, how long after its
// recorded time the target had taken it; the state at the start, made
// before the changes, is not paced and not in it.
//
// Metrics: lateness p50, p99 and max in ms (median, min, max of the
// rounds), the writes pushed, the push's CPU seconds and its time for
// the state at the start. Its name holds RecordAll: make bench runs it
// once, with BenchmarkRecordAll, not five times.
func BenchmarkPushRecordAll(b *testing.B) {
	bin := kwrecBinary(b)
	rec := os.Getenv(pushRecEnv)
	if rec == "" {
		rec = filepath.Join(tempDir(b), "push-recordall.kwrec.zst")
		defer os.Remove(rec)
	}
	if _, err := os.Stat(rec); err != nil {
		recordTarget11(b, bin, rec)
	}
	for b.Loop() {
		pushRecordAllRounds(b, bin, rec)
	}
}

// pushRecEnv names a recording for BenchmarkPushRecordAll to push: made
// there and kept when missing, pushed as it is otherwise (to measure a
// change of the push on the same recording).
const pushRecEnv = "KWREC_BENCH_PUSH_REC"

// pushArgsEnv adds flags to BenchmarkPushRecordAll's pushes
// ("--qps 500 --burst 1000").
const pushArgsEnv = "KWREC_BENCH_PUSH_ARGS"

// recordTarget11 records target 11's control plane and load into rec,
// for pushFor, then the end marker, and stops the control plane.
func recordTarget11(b *testing.B, bin, rec string) {
	src, load := loadedControlPlane(b, captureObjects)
	stop := startRecordAll(b, bin, src.Kubeconfig, rec)
	ctx, cancel := context.WithTimeout(context.Background(), pushFor())
	changes := load.run(ctx)
	cancel()
	cs := kubernetes.NewForConfigOrDie(src.Config)
	end := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: pushEndName}, Data: map[string]string{"push-bench": "end"}}
	if _, err := cs.CoreV1().ConfigMaps(pushEndNS).Create(context.Background(), end, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitHolds(b, rec, pushEndJSON, 1)
	stop()
	if err := src.Stop(); err != nil { // its CPU is the push's and the target's now
		b.Fatal(err)
	}
	st, err := os.Stat(rec)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("source: %d objects, %d changes in %v (%.1f/s), recorded in %.1f MB", captureObjects, changes, pushFor(),
		float64(changes)/pushFor().Seconds(), float64(st.Size())/1e6)
	out, err := exec.Command(bin, "push", rec, "--all", "--dry-run").CombinedOutput()
	if err != nil {
		b.Fatalf("kwrec push --dry-run: %v\n%s", err, out)
	}
	// A source that stalls (an overloaded machine) makes fewer changes
	// than the load asked for, and later: the plan says what is pushed.
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "plan: ") {
			b.Logf("kwrec push --dry-run: %s", l)
		}
	}
}

// pushRecordAllRounds pushes rec in pushRounds rounds and reports the
// metrics.
func pushRecordAllRounds(b *testing.B, bin, rec string) {
	var p50, p99, pmax, cpu, state []float64
	var pushed float64
	for r := range pushRounds() {
		run := pushRecordAllOnce(b, bin, rec)
		b.Logf("round %d: %s; state at the start %v, CPU %v", r, run.summary, run.state.Round(time.Millisecond), run.cpu.Round(time.Millisecond))
		p50 = append(p50, ms(run.p50))
		p99 = append(p99, ms(run.p99))
		pmax = append(pmax, ms(run.max))
		cpu = append(cpu, run.cpu.Seconds())
		state = append(state, run.state.Seconds())
		pushed = float64(run.pushed)
	}
	report := func(name string, xs []float64) {
		med, lo, hi := spread(xs)
		b.ReportMetric(med, name)
		b.ReportMetric(lo, name+"-min")
		b.ReportMetric(hi, name+"-max")
	}
	report("lateness-p50-ms", p50)
	report("lateness-p99-ms", p99)
	report("lateness-max-ms", pmax)
	report("push-cpu-s", cpu)
	report("state-s", state)
	b.ReportMetric(pushed, "writes")
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// pushRecordAllRun is what one push of BenchmarkPushRecordAll reported.
type pushRecordAllRun struct {
	summary       string // push's summary line
	p50, p99, max time.Duration
	pushed        int
	cpu, state    time.Duration
}

var (
	pushSummaryRE = regexp.MustCompile(`kwrec: push: pushed (\d+) of (\d+) write\(s\) in \S+; lateness p50 (\S+), p99 (\S+), max (\S+); errors: (.*)`)
	pushChangesRE = regexp.MustCompile(`kwrec: push: changes from (\S+)`)
)

// pushRecordAllOnce pushes rec --all at --speed 1 into a fresh control
// plane, stopped after, and returns what push reported; a refused write
// fails the benchmark.
func pushRecordAllOnce(b *testing.B, bin, rec string) pushRecordAllRun {
	tgt := controlplanetest.Start(b)
	defer func() {
		if err := tgt.Stop(); err != nil {
			b.Fatal(err)
		}
	}()
	args := append([]string{"push", rec, "--kubeconfig", tgt.Kubeconfig, "--all", "--speed", "1"}, strings.Fields(os.Getenv(pushArgsEnv))...)
	start := time.Now()
	cmd := exec.Command(bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("kwrec %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if os.Getenv(pushRecEnv) != "" { // kept beside the recording kept: its progress lines, each second's lag
		log := fmt.Sprintf("%s.push-%s.log", rec, time.Now().Format("150405"))
		if err := os.WriteFile(log, out, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	m := pushSummaryRE.FindStringSubmatch(string(out))
	c := pushChangesRE.FindStringSubmatch(string(out))
	if m == nil || c == nil {
		b.Fatalf("kwrec push printed no summary:\n%s", out)
	}
	if m[1] != m[2] || m[6] != "none" {
		var refused []string
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "refused: ") && len(refused) < 10 {
				refused = append(refused, l)
			}
		}
		b.Fatalf("kwrec push was refused writes: %s\n%s", m[0], strings.Join(refused, "\n"))
	}
	run := pushRecordAllRun{summary: m[0], cpu: rusageCPU(cmd.ProcessState.SysUsage().(*syscall.Rusage))}
	for i, d := range []*time.Duration{&run.p50, &run.p99, &run.max} {
		if *d, err = time.ParseDuration(m[i+3]); err != nil {
			b.Fatal(err)
		}
	}
	if run.pushed, err = strconv.Atoi(m[1]); err != nil {
		b.Fatal(err)
	}
	at, err := time.Parse(time.RFC3339Nano, c[1])
	if err != nil {
		b.Fatal(err)
	}
	run.state = at.Sub(start)
	return run
}
