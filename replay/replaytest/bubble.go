package replaytest

import (
	stdcmp "cmp"
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	"github.com/kwrec/kwrec/replay"
)

// BubbleSettle is the Settle and Linger of [BubbleOptions]: longer than
// any backoff or retry a controller waits between two requests, since in
// a bubble it costs no wall time.
const BubbleSettle = time.Minute

// BubbleOptions are [ControllerOptions] for [Run]: Settle and Linger of
// [BubbleSettle].
func BubbleOptions() replay.Options {
	opts := ControllerOptions()
	opts.Settle, opts.Linger = BubbleSettle, BubbleSettle
	return opts
}

// Main runs the tests of m and returns their exit code, for the TestMain
// of a package whose controllers run in bubbles ([Run], [Explore]):
//
//	func TestMain(m *testing.M) { os.Exit(replaytest.Main(m)) }
//
// Before the tests it replaces apimachinery's process-wide error handlers
// (utilruntime.ErrorHandlers, to which an informer reports every watch
// that fails with more than an end of stream) with one that only logs
// through klog, as the first of them does. The second rate-limits those
// reports: it sleeps until a millisecond after the last one, whose time it
// keeps for the whole process. A bubble's clock starts at 2000-01-01, so
// the first report in a bubble, measured against a time read outside it
// (at start-up) or in a bubble further along, sleeps for up to decades of
// bubble time; a manager stopped meanwhile gives up after its grace
// period, the informer still asleep, and synctest fails the test with a
// deadlock. Which reports come first depends on scheduling, so without
// Main such a test fails now and then, mostly on a busy machine.
func Main(m *testing.M) int {
	utilruntime.ErrorHandlers = []utilruntime.ErrorHandler{logError}
	return m.Run()
}

// logError logs a reported error as apimachinery's own first handler does.
func logError(ctx context.Context, err error, msg string, keysAndValues ...any) {
	logger := klog.LoggerWithName(klog.FromContext(ctx).WithCallDepth(3), "UnhandledError")
	logger.Error(err, msg, keysAndValues...)
}

// Run runs body in a synctest bubble (testing/synctest) with a Replayer
// of the cassette name (see [Path]) opened with opts inside it, closed
// when body returns:
//
//	replaytest.Run(t, "mirror.kwrec.zst", replaytest.BubbleOptions(), func(t *testing.T, r *replay.Replayer) {
//		mgr, _ := manager.New(r.Config(), manager.Options{...})
//		go mgr.Start(ctx)
//		mgr.GetCache().WaitForCacheSync(ctx)
//		synctest.Wait() // the controller has reconciled the recorded start
//		r.Play()
//		<-r.Consumed()
//		replaytest.CheckWrites(t, r, "mirror")
//	})
//
// In a bubble time moves only when every goroutine in it is durably
// blocked, and then at once to the next timer. So the replay's waits mean
// what they say and cost no wall time: with [BubbleOptions], a recorded
// change is sent once the code under test has made no request for
// [BubbleSettle] of bubble time, which passes only while every goroutine
// is blocked and no timer of theirs (a workqueue's backoff, a client's
// Retry-After wait) is due sooner; the replay is consumed once it has
// stayed so. The outcome no longer depends on how busy the machine is,
// and a controller test takes a tenth of a second. synctest.Wait in body
// waits until every other goroutine is blocked: the code under test is
// idle.
//
// What runs in the bubble must stay in it: the in-process transport of
// [replay.Replayer.Config] does, but a [replay.Server] (TCP), kubectl or
// any other process does not, and a goroutine blocked on a network
// connection is never idle in synctest's sense. Test those with [New]
// and wall-clock Settle and Linger (as `kwrec serve` does). Every
// goroutine body starts must end before body returns (cancel the
// manager's context in a t.Cleanup registered inside body); synctest
// fails the test if one is left blocked. A package whose tests run
// informers in bubbles calls [Main] from its TestMain.
func Run(t *testing.T, name string, opts replay.Options, body func(t *testing.T, r *replay.Replayer)) {
	t.Helper()
	run(t, Load(t, name), opts, 0, body)
}

// run is [Run] of a loaded history; a run that does not settle within
// settle (see [settleWatch]) fails, when settle is above 0.
func run(t *testing.T, h *replay.History, opts replay.Options, settle time.Duration, body func(t *testing.T, r *replay.Replayer)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		r, err := h.Replayer(opts)
		if err != nil {
			t.Fatalf("replaytest: %v", err)
		}
		t.Cleanup(func() { r.Close() })
		if settle > 0 {
			go settleWatch(t, r, settle, opts.Settle)
		}
		body(t, r)
	})
}

// settleWatch fails t when r's run does not settle, and then closes r
// (so that a body waiting for Consumed goes on): when the code under
// test makes no request for bound before the recording has played (it
// stopped watching, or exited); when the recording has not played by
// the time its changes take at one per settle plus bound (the code keeps
// making requests that get nowhere: retrying what never gets through,
// say); or when it is not idle (consumed) within bound after the
// recording has played. Times are bubble time.
func settleWatch(t *testing.T, r *replay.Replayer, bound, settle time.Duration) {
	deadline := time.NewTimer(time.Duration(len(r.Changes())+1)*settle + bound)
	defer deadline.Stop()
	before := requestTotals(r)
	for {
		tick := time.NewTimer(bound)
		select {
		case <-r.Consumed():
			tick.Stop()
			return
		case <-r.Done():
			tick.Stop()
			played := requestTotals(r)
			select {
			case <-r.Consumed():
			case <-time.After(bound):
				t.Errorf("replaytest: the run did not settle: the recording has played, and %v later the code under test was still making requests (%s); a client that retries what never gets through never settles", bound, busiest(played, requestTotals(r)))
				r.Close()
			}
			return
		case <-deadline.C:
			tick.Stop()
			t.Errorf("replaytest: the run did not settle: the recording had not played after %v, the code under test making requests that got it nowhere (%s in the last %v); a client that retries what never gets through never settles", time.Duration(len(r.Changes())+1)*settle+bound, busiest(before, requestTotals(r)), bound)
			r.Close()
			return
		case <-tick.C:
			now := requestTotals(r)
			if maps.Equal(now, before) {
				t.Errorf("replaytest: the run did not settle: the code under test made no request for %v before the recording had played: it stopped watching (or exited), and nothing consumes the recording", bound)
				r.Close()
				return
			}
			before = now
		}
	}
}

// requestTotals are r's requests so far, by "verb resource".
func requestTotals(r *replay.Replayer) map[string]int {
	out := map[string]int{}
	for _, c := range r.Requests() {
		out[c.Verb+" "+resourceName(c.Group, c.Resource)] = c.N
	}
	return out
}

// busiest names the requests made most between from and to, at most
// three, as "N list configmaps".
func busiest(from, to map[string]int) string {
	type made struct {
		what string
		n    int
	}
	var ms []made
	for k, n := range to {
		if d := n - from[k]; d > 0 {
			ms = append(ms, made{k, d})
		}
	}
	slices.SortFunc(ms, func(a, b made) int { return stdcmp.Or(b.n-a.n, strings.Compare(a.what, b.what)) })
	var parts []string
	for i, m := range ms {
		if i == 3 {
			break
		}
		parts = append(parts, fmt.Sprintf("%d %s", m.n, m.what))
	}
	if len(parts) == 0 {
		return "none counted"
	}
	return strings.Join(parts, ", ")
}
