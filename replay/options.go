package replay

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"k8s.io/utils/clock"
)

// Options configure a [Replayer]. The zero value replays exactly what was
// recorded, as fast as the client reads, answering every other request for
// a recorded collection from its timeline, and idling at the end of a
// watch like a live server.
type Options struct {
	// Matcher decides which recorded interaction answers a request
	// byte for byte. Default [DefaultMatcher].
	Matcher Matcher
	// Speed scales recorded time: 1 is real time, 10 ten times faster.
	// The default 0 skips every recorded wait and serves frames as fast as
	// the client reads; the idle end of a watch then lasts the client's
	// timeoutSeconds. Negative values are refused. Above 0, a watch that
	// falls far behind its schedule is ended cleanly, as kube-apiserver
	// ends a slow watcher (see the package documentation, "Time").
	Speed float64
	// MaxGap caps every wait between frames (after Speed). Default 0: no cap.
	MaxGap time.Duration
	// Clock is the clock waits run on; tests pass a
	// k8s.io/utils/clock/testing.FakeClock and step it when HasWaiters().
	// Default: the real clock.
	Clock clock.Clock
	// Edits are applied after the cassette's own [cassettes.Header.Edits].
	Edits []Edit
	// Strict answers recorded requests only, byte for byte: no timeline
	// views. Default false.
	Strict bool
	// ErrorWhenExhausted makes a fully served replay fail fast instead of
	// idling: once [Replayer.Consumed] is closed, a request with no remaining
	// match fails with [ErrExhausted], and every stream that would idle
	// (a recorded watch that the recording stopped, or a timeline watch
	// with no events left) ends with a body read error wrapping
	// [ErrExhausted], so no test can hang. Default false.
	ErrorWhenExhausted bool
	// Linger is how long, once [Replayer.Done] is closed, the clients must
	// have made no request before the cassette counts as consumed
	// ([Replayer.Consumed]): the code under test may still react to the
	// last recorded change. Waits run on Clock. Default 0: consumed when
	// done.
	Linger time.Duration
	// Settle paces recorded changes by the code under test instead of by
	// the recording: before a watch sends a recorded change no client has
	// been sent yet, it waits until Settle has passed since the last
	// request and since the previous recorded change. At speed 0 a
	// controller then reconciles each change before the next comes
	// (a workqueue merges changes to one object that come faster than it
	// reconciles), deterministically. Only recorded changes wait: the
	// code under test's own writes reach its watches at once, and one
	// ends the wait. Waits run on Clock (in a synctest bubble, see
	// replaytest.Run, they cost no wall time). Default 0: no wait.
	Settle time.Duration
	// Settled, with Settle, is called each time the code under test has
	// settled (Settle has passed with no request), before the next
	// recorded change is sent: a quiescent moment, at which a test may
	// check the world ([Replayer.World]). It must not block. Default nil.
	Settled func()
	// Hold keeps every recorded change back until [Replayer.Play]: lists
	// and gets answer the state the recording starts with, watches send
	// their initial state, and then wait. A controller registers its
	// handlers after its informers start; without Hold, at speed 0 the
	// informers can run through the whole recording first, and the
	// handlers see only the final state. Writes of the code under test
	// are never held. Default false.
	Hold bool
	// Writes says what happens to a write that matches no recorded one.
	// Default [WritesStrict]: it fails with [ErrNoMatch].
	Writes WriteMode
	// DisableGarbageCollection, in [WritesOverlay] mode, leaves the
	// dependents of what the code under test deletes as they are, as a bare
	// API server and envtest do. By default kwrec collects them as
	// kube-controller-manager's garbage collector does on a cluster
	// (ownerReferences with background, foreground and orphan
	// propagation); see the package documentation, "Writes".
	DisableGarbageCollection bool
	// WorldClock puts every client of the replay on one clock, the
	// world's, as on a real cluster: the world is at At plus Speed times
	// the wall time since the replay began (Speed 0 holds it there), and
	// every get, list, watch start and write is answered as the recorded
	// cluster was at that time, from its timelines (recorded lists are not
	// replayed byte for byte). A watch sends each recorded change once the
	// world reaches the time it was recorded. [Replayer.WorldClock] plays,
	// pauses, seeks and sets the speed; a seek back ends every open watch
	// with a 410 Expired, as a real server never goes back. Default false:
	// the consumption clock, where "now" moves as each client consumes the
	// recording, which a controller test wants (see the package
	// documentation, "Time"). It excludes Hold and Settle, which pace the
	// consumption clock.
	WorldClock bool
	// At is where a WorldClock replay's world starts, as kwrec cut takes a
	// point: a duration from the recording's start ("90s"), an RFC 3339
	// time, "rv=N" (just after the recorded change N) or "end". Default
	// "": the start. One outside the recording is refused with an error
	// naming its range.
	At string
	// Paused holds a WorldClock replay's world at At until
	// [WorldClock.Play].
	Paused bool
	// WritesOut, in [WritesOverlay] mode, receives every write applied, as
	// an interaction with its request and answer (see [Replayer.Writes]).
	// The Replayer does not close it. Default nil.
	WritesOut *cassettes.Writer
	// CRDs, in [WritesOverlay] mode, are created in the replay's world
	// before it serves anything (see [LoadCRDs]). Default nil.
	CRDs *CRDs
	// Logf, when set, is told what the replay does that no client is
	// told: a custom resource written whose definition (and so schema)
	// neither the recording nor CRDs holds, once per resource. Default
	// nil.
	Logf func(format string, args ...any)
}

// check refuses options no replay can take.
func (opts Options) check() error {
	if !(opts.Speed >= 0) || math.IsInf(opts.Speed, 0) { // NaN too
		return fmt.Errorf("speed %v is not a finite number >= 0; use 0 for as fast as possible, 1 for real time", opts.Speed)
	}
	if opts.WorldClock && (opts.Hold || opts.Settle > 0) {
		return errors.New("option WorldClock excludes Hold and Settle: the world's clock paces every client alike")
	}
	if !opts.WorldClock && (opts.At != "" || opts.Paused) {
		return errors.New("options At and Paused need WorldClock")
	}
	if opts.Strict && opts.WorldClock {
		return errors.New("options Strict and WorldClock exclude each other: the world is answered from the timelines Strict turns off")
	}
	if opts.CRDs != nil && opts.Writes != WritesOverlay {
		return errors.New("option CRDs needs WritesOverlay: the definitions are created in the replay's world, as envtest creates them")
	}
	if opts.Strict && opts.Writes == WritesOverlay {
		return errors.New("options Strict and WritesOverlay exclude each other: writes are applied to the timelines Strict turns off")
	}
	return nil
}
