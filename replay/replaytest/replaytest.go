// Package replaytest replays a cassette from a test's testdata directory in
// one call, in the style of net/http/httptest:
//
//	func TestController(t *testing.T) {
//		cfg := replaytest.Config(t, "configmaps.kwrec")
//		cs := kubernetes.NewForConfigOrDie(cfg)
//		// ... run the code under test against cs ...
//	}
//
// Cassettes may be plain text or zstd-compressed; the format is detected
// from the file's first bytes.
//
// A controller test runs best in a synctest bubble ([Run] with
// [BubbleOptions]): exact, the same every run, and a tenth of a second.
// [Explore] then runs it once per fault point of its recording (every
// 410, reset, failed list and failed write) and reports each the
// controller does not survive. Such a package's TestMain calls [Main]
// (see there why).
//
// # Recording
//
// [Config] records instead of replaying when $KWREC_RECORD asks it to, as
// go-vcr users expect of its modes:
//
//	KWREC_RECORD=once  record testdata/NAME only if it does not exist (RecordOnce)
//	KWREC_RECORD=1     re-record testdata/NAME (RecordOnly)
//	unset or 0         replay only (ReplayOnly)
//
// Recording talks to the cluster of the current kubeconfig ($KUBECONFIG,
// else ~/.kube/config) through the kwrec recorder, with redaction on, and
// writes the cassette when the test ends.
package replaytest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/replay"
)

// Path returns where name is looked up: name itself when absolute, else
// testdata/name relative to the test's package directory.
func Path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join("testdata", name)
}

// New opens the cassette name (see [Path]) with [replay.Open] (frames stay
// in the file, so any size replays in little memory) and returns a Replayer
// over it with opts, closed when the test ends. A missing or unreadable
// cassette fails the test at once with the reader's error, which says what
// to do.
func New(t testing.TB, name string, opts replay.Options) *replay.Replayer {
	t.Helper()
	return open(t, name, func(path string) (*replay.Replayer, error) { return replay.Open(path, opts) })
}

// Load loads the cassette name (see [Path]) once with [replay.Load], for
// any number of replays ([replay.History.Replayer]), closed when the test
// ends. A missing or unreadable cassette fails the test at once with the
// reader's error, which says what to do.
func Load(t testing.TB, name string) *replay.History {
	t.Helper()
	return open(t, name, replay.Load)
}

// open opens the cassette name (see [Path]) with openFn, to be closed when
// the test ends, or fails the test with what to do.
func open[T interface{ Close() error }](t testing.TB, name string, openFn func(path string) (T, error)) T {
	t.Helper()
	path := Path(name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("replaytest: cassette %s: %v (record it with the kwrec CLI, or fix the name)", path, err)
	}
	v, err := openFn(path)
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

// CRDs loads the CustomResourceDefinitions of paths (files, or
// directories such as config/crd/bases) with [replay.LoadCRDs], for
// replays in [replay.WritesOverlay] mode: give them to
// [replay.Options.CRDs] or [Faults.CRDs]. A definition the server would
// refuse fails the test with the file, the document and the server's
// words.
//
//	opts := replaytest.ControllerOptions()
//	opts.CRDs = replaytest.CRDs(t, "../config/crd/bases")
//	r := replaytest.New(t, "widgets.kwrec.zst", opts)
func CRDs(t testing.TB, paths ...string) *replay.CRDs {
	t.Helper()
	c, err := replay.LoadCRDs(paths...)
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	return c
}

// Config returns a rest.Config whose clients (typed, dynamic, informers)
// replay the cassette name (see [Path]) with [Defaults]: as fast as the
// client reads, answering unrecorded lists and watches from the recorded
// state, and once every recorded change has been delivered and the
// clients have made no request for a quarter of a second, ending every
// watch with an error that says the cassette is consumed
// ([replay.IsExhausted]), so a test's watch loop ends instead of idling
// like a live server. Use [New] for other options.
//
// With $KWREC_RECORD set (see the package doc) it returns a config to the
// live cluster that records into the cassette instead.
func Config(t testing.TB, name string) *rest.Config {
	t.Helper()
	path := Path(name)
	switch mode := os.Getenv(EnvRecord); mode {
	case "", "0":
	case "once":
		if _, err := os.Stat(path); err != nil {
			return record(t, path)
		}
	case "1":
		return record(t, path)
	default:
		t.Fatalf("replaytest: %s=%q; use once, 1 or 0", EnvRecord, mode)
	}
	return New(t, name, Defaults()).Config()
}

// Linger is how long [Defaults] waits, once every recorded change is
// delivered, for the clients to go quiet before the cassette counts as
// consumed.
const Linger = 250 * time.Millisecond

// Defaults are the options [Config] replays with: ErrorWhenExhausted with
// a Linger of [Linger], so nothing waits on a consumed cassette.
func Defaults() replay.Options {
	return replay.Options{ErrorWhenExhausted: true, Linger: Linger}
}

// Controller replays the cassette name (see [Path]) for a controller: its
// writes applied to the recorded world ([replay.WritesOverlay]), every
// recorded change held until the test calls Play on the Replayer once the
// controller has started ([replay.Options.Hold]: its handlers then see
// each change, not only the final state), each change sent once the
// controller has been idle for [Settle] (so it reconciles every one, in
// the same order every run), and the end of [Defaults]. Wait
// for the replay with Consumed, then compare what the controller wrote
// with [CheckWrites]:
//
//	r := replaytest.Controller(t, "configmaps.kwrec.zst")
//	mgr, _ := manager.New(r.Config(), manager.Options{...})
//	go mgr.Start(ctx)
//	mgr.GetCache().WaitForCacheSync(ctx)
//	r.Play()
//	<-r.Consumed()
//	replaytest.CheckWrites(t, r, "mirror")
func Controller(t testing.TB, name string) *replay.Replayer {
	t.Helper()
	return New(t, name, ControllerOptions())
}

// ControllerOptions are the options of [Controller], to add edits to:
// [Defaults] with Overlay writes, Hold and Settle.
func ControllerOptions() replay.Options {
	opts := Defaults()
	opts.Writes, opts.Hold, opts.Settle = replay.WritesOverlay, true, Settle
	return opts
}

// Settle is how long [Controller] lets the code under test be idle
// before each recorded change ([replay.Options.Settle]): longer than a
// controller takes to start reconciling a change it was sent, even on a
// loaded CI machine: with a quarter of it, a race-enabled
// controller-runtime manager sharing 2 cores with other tests once took
// longer, and its workqueue merged two changes of one object into one
// reconcile (BENCHMARKS.md, BenchmarkTheMachineIsSteady). In a synctest
// bubble ([Run], [BubbleOptions]) no duration decides this.
const Settle = 200 * time.Millisecond

// EnvRecord names the environment variable that switches [Config] to
// recording.
const EnvRecord = "KWREC_RECORD"

// record returns a config to the kubeconfig's cluster that records into
// path; the cassette is closed when t ends.
func record(t testing.TB, path string) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		t.Fatalf("replaytest: %s is set but there is no cluster to record from: %v", EnvRecord, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	opts := recorder.Options{}
	h := recorder.Header("", opts)
	h.Labels = map[string]string{"recorded-by": t.Name()}
	w, err := cassettes.Create(path, h, cassettes.WriterOptions{})
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	rec, err := recorder.New(w, opts)
	if err != nil {
		w.Close()
		t.Fatalf("replaytest: %v", err)
	}
	t.Cleanup(func() {
		if err := errors.Join(rec.Close(), w.Close()); err != nil {
			t.Errorf("replaytest: recording %s: %v", path, err)
		}
	})
	cfg = rest.CopyConfig(cfg)
	rec.WrapConfig(cfg)
	t.Logf("replaytest: recording %s from %s", path, cfg.Host)
	return cfg
}
