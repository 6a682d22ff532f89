package benchmarks_test

import (
	"bufio"
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

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// pushObjects is how many objects BenchmarkPush pushes: ConfigMaps and
// Deployments (no controllers run: a Deployment is only stored), 2 to 1.
const pushObjects = 120

// pushRounds is how many alternating rounds BenchmarkPush runs;
// $KWREC_BENCH_PUSH_ROUNDS changes it.
func pushRounds() int {
	if n, err := strconv.Atoi(os.Getenv("KWREC_BENCH_PUSH_ROUNDS")); err == nil && n > 0 {
		return n
	}
	return 3
}

// BenchmarkPush measures kwrec push --speed 0 against kubectl apply
// --server-side of the same objects, into one control plane, in
// alternating rounds (which goes first alternates), each into a fresh
// namespace. The objects are [pushObjects] ConfigMaps and Deployments
// written as YAML once; a source control plane is made of them, then
// recorded with `kwrec record --all -n bench`, and the state at the
// recording's start (--to 0s) is pushed with --namespace-map
// bench=push-R. kubectl
// applies the YAML with -n apply-R. Both are child processes timed from
// start to exit (their start, discovery and exit included), kwrec with
// its default QPS and burst (50, 100) and again with client-go's (--qps
// 5 --burst 10), kubectl with its own (it has no flag for them).
//
// Then the lateness: the recording goes on while 14 ConfigMaps are
// updated 30 times (kubectl apply --server-side of all 14 at once, back
// to back: 420 changes in bursts of 14), and all of it is pushed at
// --speed 1, with the default QPS and with --qps 500 --burst 1000; push
// reports the p50, p99 and max lateness of its changes. (At client-go's
// QPS of 5 an update, a GET and a PUT, leaves a push 2.5 changes a
// second: not measured.)
//
// Metrics: objects/s of each, push/kubectl (median, min, max of rounds),
// lateness in ms.
func BenchmarkPush(b *testing.B) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		b.Skip("kubectl is not on PATH")
	}
	bin := kwrecBinary(b)
	dir := b.TempDir()
	yaml := filepath.Join(dir, "objects.yaml")
	if err := os.WriteFile(yaml, []byte(pushYAML(pushObjects)), 0o644); err != nil {
		b.Fatal(err)
	}
	src := controlplanetest.Start(b)
	kubectlB(b, src.Kubeconfig, "create", "namespace", "bench")
	rec := filepath.Join(dir, "source.kwrec.zst")
	kubectlB(b, src.Kubeconfig, "apply", "--server-side", "-n", "bench", "-f", yaml)
	stop := startRecordAll(b, bin, src.Kubeconfig, rec, "-n", "bench")
	const ticks = 30
	changes := updateConfigMaps(b, src.Kubeconfig, 20, ticks)
	// The recording is whole once it holds the last tick's update of
	// every ConfigMap (in the JSON watch: the Table watch has no data).
	waitHolds(b, rec, fmt.Sprintf(`"tick":"%d"`, ticks-1), changes/ticks)
	stop()
	b.Logf("source: %d objects, then %d ConfigMap updates, recorded in %s", pushObjects, changes, rec)

	tgt := controlplanetest.Start(b)
	for b.Loop() {
		var ratios, ratiosFast, pushRate, pushFastRate, applyRate []float64
		for r := range pushRounds() {
			ns := func(p string) string { return fmt.Sprintf("%s-%d-%d", p, b.N, r) }
			kubectlB(b, tgt.Kubeconfig, "create", "namespace", ns("apply"))
			apply := func() time.Duration {
				return timed(b, "kubectl", "--kubeconfig", tgt.Kubeconfig, "apply", "--server-side", "-n", ns("apply"), "-f", yaml)
			}
			push := func() time.Duration {
				return timed(b, bin, "push", rec, "--kubeconfig", tgt.Kubeconfig, "--speed", "0", "--to", "0s", "--namespace-map", "bench="+ns("push"))
			}
			pushFast := func() time.Duration {
				return timed(b, bin, "push", rec, "--kubeconfig", tgt.Kubeconfig, "--speed", "0", "--to", "0s", "--qps", "5", "--burst", "10", "--namespace-map", "bench="+ns("fast"))
			}
			var a, p, f time.Duration
			if r%2 == 0 {
				a, p, f = apply(), push(), pushFast()
			} else {
				f, p, a = pushFast(), push(), apply()
			}
			pushRate = append(pushRate, pushObjects/p.Seconds())
			pushFastRate = append(pushFastRate, pushObjects/f.Seconds())
			applyRate = append(applyRate, pushObjects/a.Seconds())
			ratios = append(ratios, a.Seconds()/p.Seconds())
			ratiosFast = append(ratiosFast, a.Seconds()/f.Seconds())
			b.Logf("round %d: kubectl apply %v, kwrec push %v, kwrec push --qps 5 %v", r, a.Round(time.Millisecond), p.Round(time.Millisecond), f.Round(time.Millisecond))
		}
		report := func(name string, xs []float64) {
			med, lo, hi := spread(xs)
			b.ReportMetric(med, name)
			b.ReportMetric(lo, name+"-min")
			b.ReportMetric(hi, name+"-max")
		}
		report("push-objects/s", pushRate)
		report("push-qps5-objects/s", pushFastRate)
		report("apply-objects/s", applyRate)
		report("push/apply", ratios)
		report("push-qps5/apply", ratiosFast)
		for _, q := range [][]string{nil, {"--qps", "500", "--burst", "1000"}} {
			name := "default"
			if q != nil {
				name = "qps500"
			}
			args := append([]string{"push", rec, "--kubeconfig", tgt.Kubeconfig, "--speed", "1", "--namespace-map", fmt.Sprintf("bench=late-%s-%d", name, b.N)}, q...)
			out, err := exec.Command(bin, args...).CombinedOutput()
			if err != nil {
				b.Fatalf("kwrec %s: %v\n%s", strings.Join(args, " "), err, out)
			}
			m := regexp.MustCompile(`lateness p50 (\S+), p99 (\S+), max (\S+); errors: (.*)`).FindStringSubmatch(string(out))
			if m == nil {
				b.Fatalf("kwrec push printed no lateness:\n%s", out)
			}
			for i, p := range []string{"p50", "p99", "max"} {
				d, err := time.ParseDuration(m[i+1])
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(d)/1e6, "lateness-"+name+"-"+p+"-ms")
			}
			b.Logf("kwrec push --speed 1 %s: lateness p50 %s, p99 %s, max %s; errors: %s", strings.Join(q, " "), m[1], m[2], m[3], m[4])
		}
	}
}

// pushYAML returns n objects, two ConfigMaps to a Deployment, as YAML
// without namespaces.
func pushYAML(n int) string {
	var sb strings.Builder
	for i := range n {
		if i%3 == 2 {
			fmt.Fprintf(&sb, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, labels: {app: web-%d, tier: bench}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web-%d}}
  template:
    metadata: {labels: {app: web-%d}}
    spec:
      containers: [{name: web, image: registry.k8s.io/pause:3.10, ports: [{containerPort: 8080}], env: [{name: MODE, value: fast}]}]
`, i, i, i, i)
			continue
		}
		fmt.Fprintf(&sb, `---
apiVersion: v1
kind: ConfigMap
metadata: {name: settings-%d, labels: {tier: bench}}
data: {mode: fast, size: "%d", text: %q}
`, i, i, strings.Repeat("lorem ipsum ", 40))
	}
	return sb.String()
}

// updateConfigMaps updates the ConfigMaps among the first n objects of
// namespace bench, ticks times, each tick one kubectl apply
// --server-side of them all, back to back; it returns the changes made.
func updateConfigMaps(b *testing.B, kubeconfig string, n, ticks int) int {
	var made int
	for t := range ticks {
		var sb strings.Builder
		for i := range n {
			if i%3 == 2 {
				continue
			}
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings-%d, namespace: bench}\ndata: {tick: \"%d\"}\n", i, t)
			made++
		}
		cmd := exec.Command("kubectl", "--kubeconfig", kubeconfig, "apply", "--server-side", "--field-manager", "ticker", "-f", "-")
		cmd.Stdin = strings.NewReader(sb.String())
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("kubectl apply: %v\n%s", err, out)
		}
	}
	return made
}

// startRecordAll starts kwrec record --all into path, returns once it is
// recording, and returns the function that stops it (SIGINT) and waits:
// call it once the recording holds what was made (see [waitHolds]).
func startRecordAll(b *testing.B, bin, kubeconfig, path string, args ...string) func() {
	cmd := exec.Command(bin, append([]string{"record", "--all", "--kubeconfig", kubeconfig, "-o", path}, args...)...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "is recorded; watching") {
			break
		}
	}
	go func() {
		for sc.Scan() {
		}
	}()
	return func() {
		cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("kwrec record --all: %v", err)
		}
	}
}

// timed runs a command and returns its wall time.
func timed(b *testing.B, name string, args ...string) time.Duration {
	start := time.Now()
	out, err := exec.Command(name, args...).CombinedOutput()
	d := time.Since(start)
	if err != nil {
		b.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	if strings.Contains(string(out), "refused") {
		b.Fatalf("%s %s refused writes:\n%s", name, strings.Join(args, " "), out)
	}
	return d
}

// kubectlB runs kubectl against kubeconfig.
func kubectlB(b *testing.B, kubeconfig string, args ...string) {
	out, err := exec.Command("kubectl", append([]string{"--kubeconfig", kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}
