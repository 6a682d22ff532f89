package replaytest

import (
	"testing"
	"testing/synctest"
	"time"

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
// fails the test if one is left blocked.
func Run(t *testing.T, name string, opts replay.Options, body func(t *testing.T, r *replay.Replayer)) {
	t.Helper()
	run(t, Load(t, name), opts, body)
}

// run is [Run] of a loaded history.
func run(t *testing.T, h *replay.History, opts replay.Options, body func(t *testing.T, r *replay.Replayer)) {
	t.Helper()
	synctest.Test(t, func(t *testing.T) {
		r, err := h.Replayer(opts)
		if err != nil {
			t.Fatalf("replaytest: %v", err)
		}
		t.Cleanup(func() { r.Close() })
		body(t, r)
	})
}
