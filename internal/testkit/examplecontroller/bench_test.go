package examplecontroller_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/internal/testkit/examplecontroller"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// benchObjects is how many mirror=true ConfigMaps the benchmark
// reconciles, round robin.
const benchObjects = 1000

// bench is the benchmark's control plane and recording, made once.
var bench struct {
	once     sync.Once
	cp       *controlplanetest.ControlPlane
	dir      string
	cassette string // a recorded list of benchObjects ConfigMaps
	err      error
	ns       int // live namespaces made so far
	cpStart  time.Duration
}

func TestMain(m *testing.M) {
	code := replaytest.Main(m)
	if bench.cp != nil {
		bench.cp.Stop()
		os.RemoveAll(bench.dir)
	}
	os.Exit(code)
}

// BenchmarkReconcile times one reconcile of a mirror=true ConfigMap (a
// read, a server-side apply, and on the first visit of each object an
// Update and the Lease's read and Update), through an Overlay replay of a
// recorded list of 1,000 of them and against the real control plane.
// Both run the reconciler directly with an uncached client, so every read
// is a request. It needs the control plane (to record the list); without
// it, it is skipped.
func BenchmarkReconcile(b *testing.B) {
	bench.once.Do(func() { bench.err = benchSetUp() })
	if errors.Is(bench.err, controlplanetest.ErrNoBinaries) {
		b.Skip(bench.err)
	} else if bench.err != nil {
		b.Fatal(bench.err)
	}
	b.Run("replay", func(b *testing.B) {
		r, err := replay.Open(bench.cassette, replay.Options{Writes: replay.WritesOverlay})
		if err != nil {
			b.Fatal(err)
		}
		defer r.Close()
		reconcileLoop(b, r.Config(), "bench")
	})
	b.Run("live", func(b *testing.B) {
		bench.ns++
		ns := fmt.Sprintf("bench-%d", bench.ns)
		if err := makeConfigMaps(b.Context(), kubernetes.NewForConfigOrDie(bench.cp.Config), ns); err != nil {
			b.Fatal(err)
		}
		reconcileLoop(b, bench.cp.Config, ns)
	})
}

func reconcileLoop(b *testing.B, cfg *rest.Config, ns string) {
	c, err := client.New(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	rec := &examplecontroller.Reconciler{Client: c, Leases: c}
	ctx := b.Context()
	b.ResetTimer()
	for i := range b.N {
		req := ctrl.Request{NamespacedName: client.ObjectKey{Namespace: ns, Name: fmt.Sprintf("cm-%04d", i%benchObjects)}}
		if _, err := rec.Reconcile(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}

// benchSetUp starts the control plane, makes benchObjects ConfigMaps in
// namespace bench and records their list.
func benchSetUp() error {
	if _, err := controlplanetest.AssetsDir(); err != nil {
		return err
	}
	start := time.Now()
	cp, err := controlplanetest.StartEnv()
	if err != nil {
		return err
	}
	bench.cpStart = time.Since(start)
	bench.cp = cp
	if bench.dir, err = os.MkdirTemp("", "kwrec-mirror-bench"); err != nil {
		return err
	}
	ctx := context.Background()
	if err := makeConfigMaps(ctx, kubernetes.NewForConfigOrDie(cp.Config), "bench"); err != nil {
		return err
	}
	bench.cassette = filepath.Join(bench.dir, "bench.kwrec.zst")
	opts := recorder.Options{}
	w, err := cassettes.Create(bench.cassette, recorder.Header(controlplanetest.KubeVersion, opts), cassettes.WriterOptions{})
	if err != nil {
		return err
	}
	rec, err := recorder.New(w, opts)
	if err != nil {
		return errors.Join(err, w.Close())
	}
	cfg := rest.CopyConfig(cp.Config)
	cfg.ContentType = "application/json" // as kwrec record and controller-runtime read
	rec.WrapConfig(cfg)
	_, err = kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("bench").List(ctx, metav1.ListOptions{})
	return errors.Join(err, rec.Close(), w.Close())
}

// makeConfigMaps creates namespace ns and benchObjects mirror=true
// ConfigMaps in it.
func makeConfigMaps(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make([]error, benchObjects)
	sem := make(chan struct{}, 32)
	for i := range benchObjects {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Labels: map[string]string{"mirror": "true"}},
				Data: map[string]string{"i": fmt.Sprint(i)}}
			_, errs[i] = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// BenchmarkMirrorRun times one whole run of the mirror controller over
// its script (the cassette's recorded changes), each way a test can run
// it:
//   - bubble: TestMirrorReplay, in a synctest bubble, run as its own test
//     process (synctest needs a *testing.T, which a benchmark has not),
//     once (x1) and ten times in a row (x10): the first run in a process
//     also builds what the process keeps (the schemes, the OpenAPI type
//     converters of writes), so (x10 - x1) / 9 is one run more;
//   - process: that test process with no test, to subtract;
//   - wallclock: the same replay with replaytest.ControllerOptions, whose
//     Settle and Linger are wall-clock durations;
//   - live: the controller on the real control plane (envtest's
//     kube-apiserver and etcd) while the script runs with no gaps, until
//     the world is the one the script ends in; the control plane is
//     started once, before (BenchmarkReconcile's), and its start is not
//     counted but reported (cp-start-s). Skipped without the control
//     plane.
//
// -count N runs the four in turn, N rounds.
func BenchmarkMirrorRun(b *testing.B) {
	b.Run("bubble/x1", func(b *testing.B) { runTestProcess(b, "^TestMirrorReplay$", 1) })
	b.Run("bubble/x10", func(b *testing.B) { runTestProcess(b, "^TestMirrorReplay$", 10) })
	b.Run("process", func(b *testing.B) { runTestProcess(b, "^$", 1) })
	b.Run("wallclock", func(b *testing.B) {
		for b.Loop() {
			r, err := replay.Open(filepath.Join("testdata", cassette), replaytest.ControllerOptions())
			if err != nil {
				b.Fatal(err)
			}
			final := runManager(b, r.Config(), namespace, func(ctx context.Context, mgr ctrl.Manager) ([]object, error) {
				r.Play()
				select {
				case <-r.Consumed():
				case <-ctx.Done():
					return nil, ctx.Err()
				}
				var l corev1.ConfigMapList
				err := mgr.GetCache().List(ctx, &l, client.InNamespace(namespace))
				return objects(l.Items), err
			})
			r.Close()
			if d := cmp.Diff(wantFinal(), final); d != "" {
				b.Fatalf("final ConfigMaps (-want +got):\n%s", d)
			}
		}
	})
	b.Run("live", func(b *testing.B) {
		bench.once.Do(func() { bench.err = benchSetUp() })
		if errors.Is(bench.err, controlplanetest.ErrNoBinaries) {
			b.Skip(bench.err)
		} else if bench.err != nil {
			b.Fatal(bench.err)
		}
		cs := kubernetes.NewForConfigOrDie(bench.cp.Config)
		for b.Loop() {
			bench.ns++
			ns := fmt.Sprintf("mirror-%d", bench.ns)
			if err := setUp(b.Context(), cs, ns); err != nil {
				b.Fatal(err)
			}
			runManager(b, bench.cp.Config, ns, func(ctx context.Context, mgr ctrl.Manager) ([]object, error) {
				if err := play(ctx, cs, ns, 0); err != nil {
					return nil, err
				}
				// Polled: a live server has no "the controller is idle".
				for {
					var l corev1.ConfigMapList
					if err := mgr.GetAPIReader().List(ctx, &l, client.InNamespace(ns)); err != nil {
						return nil, err
					}
					if got := objects(l.Items); cmp.Equal(wantFinal(), got) {
						return got, nil
					}
					select {
					case <-ctx.Done():
						return nil, ctx.Err()
					case <-time.After(10 * time.Millisecond):
					}
				}
			})
		}
		b.ReportMetric(bench.cpStart.Seconds(), "cp-start-s")
	})
}

// runManager runs the controller on cfg, watching namespace ns, until its
// cache has synced and then until until returns, at most a minute.
func runManager(b *testing.B, cfg *rest.Config, ns string, until func(context.Context, ctrl.Manager) ([]object, error)) []object {
	b.Helper()
	mgr, err := newManager(cfg, ns)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(b.Context(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			b.Errorf("manager: %v", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the cache did not sync")
	}
	out, err := until(ctx, mgr)
	if err != nil {
		b.Fatal(err)
	}
	return out
}

// runTestProcess runs this test binary with -test.run=run -test.count=n
// once per iteration.
func runTestProcess(b *testing.B, run string, n int) {
	for b.Loop() {
		out, err := exec.CommandContext(b.Context(), os.Args[0], "-test.run="+run, fmt.Sprintf("-test.count=%d", n)).CombinedOutput()
		if err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
}
