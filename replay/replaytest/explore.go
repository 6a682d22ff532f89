package replaytest

import (
	stdcmp "cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/explore"
	"github.com/kwrec/kwrec/replay"
)

// FaultKind is a kind of fault [Explore] injects.
type FaultKind = explore.FaultKind

// The fault kinds. Watch faults are placed after each recorded change of a
// collection the code under test watched; list faults on each list it
// made; write faults on each write it made (create, update, patch, delete,
// deletecollection), in the reference run.
const (
	// FaultExpired ends the watch with a 410 Expired ERROR event: the
	// client must list again, and finds the world where its watch left.
	FaultExpired = explore.FaultExpired
	// FaultBehind is a 410 as a watch that fell behind gets it: the
	// world moves past the next recorded change as the error comes
	// (replay.Edit.Skip 1), so the client's re-list holds a change its
	// watch never sent, a deletion perhaps.
	FaultBehind = explore.FaultBehind
	// FaultReset resets the watch's connection.
	FaultReset = explore.FaultReset
	// FaultList500 and FaultList503 answer a list with 500 InternalError
	// and 503 ServiceUnavailable.
	FaultList500 = explore.FaultList500
	FaultList503 = explore.FaultList503
	// FaultConflict, FaultWrite500 and FaultThrottled answer a write with
	// 409 Conflict, 500 InternalError and 429 TooManyRequests with
	// Retry-After: 1 (client-go waits and retries a 429 itself).
	FaultConflict  = explore.FaultConflict
	FaultWrite500  = explore.FaultWrite500
	FaultThrottled = explore.FaultThrottled
	// FaultGet500 and FaultGet503 answer a get with 500 InternalError
	// and 503 ServiceUnavailable.
	FaultGet500 = explore.FaultGet500
	FaultGet503 = explore.FaultGet503
	// The watch-open faults refuse the request that opens a watch (an
	// informer's initial sync included, which client-go v0.37 makes a
	// streaming watch): FaultWatchCompacted as a cluster whose etcd
	// compacted the resourceVersion asked for (200 and an ERROR 410
	// Expired "too old resource version", and so every later watch from
	// that version or older: the client must list again);
	// FaultWatch429 with Retry-After: 1, FaultWatch500, FaultWatch503;
	// FaultWatchReset resets the connection before the first byte
	// (client-go retries that itself).
	FaultWatchCompacted = explore.FaultWatchCompacted
	FaultWatch429       = explore.FaultWatch429
	FaultWatch500       = explore.FaultWatch500
	FaultWatch503       = explore.FaultWatch503
	FaultWatchReset     = explore.FaultWatchReset
	// FaultWatchCut410 and FaultWatchCutReset fail a watch after its
	// first frame, with a 410 ERROR event or a reset: for a streaming
	// list (an informer's initial sync), part-way through its initial
	// events.
	FaultWatchCut410   = explore.FaultWatchCut410
	FaultWatchCutReset = explore.FaultWatchCutReset
	// FaultBookmarkReset resets a streaming list once its initial events
	// are out, just before the bookmark that ends them.
	FaultBookmarkReset = explore.FaultBookmarkReset
	// FaultTimeout ends a watch after a change as the server ends one at
	// its timeoutSeconds: a clean end of the stream, no error.
	FaultTimeout = explore.FaultTimeout
)

// AllFaults are the kinds [Explore] injects by default.
var AllFaults = slices.Clone(explore.AllFaults)

// Faults selects the fault points [Explore] tries.
type Faults struct {
	// Kinds are the kinds tried; nil for [AllFaults].
	Kinds []FaultKind
	// Max, when above 0, tries a sample of Max points, drawn with Seed;
	// 0 tries every point.
	Max  int
	Seed uint64
	// Ignore are fields left out of the comparison of worlds, each a
	// path into an object's JSON, such as {"metadata", "annotations",
	// "example.com/count"}: what the code under test keeps by history
	// (a count of its reconciles) rather than by the world it sees.
	Ignore [][]string
	// CRDs are given to every replay of the exploration, the reference
	// run's included (see [CRDs]).
	CRDs *replay.CRDs
	// AllowDeletes lets a point's run delete objects the reference run
	// never deleted. By default that fails the point: the object's data
	// was lost for its users, even when the code under test creates it
	// again later and the world converges.
	AllowDeletes bool
	// SettleWithin bounds, in bubble time, how long a run may go without
	// a request before the recording has played, and how long it may
	// keep making requests after: a run past it fails with "did not
	// settle" and the requests it kept making, and never hangs the test.
	// 0 means [DefaultSettleWithin].
	SettleWithin time.Duration
	// Depth 2 tries two faults at once: Max pairs of points (by default
	// as many pairs as there are points) drawn with Seed, the second
	// fault placed after the first, named "first+second". Bugs in
	// recovery code show only when recovery itself fails. 0 or 1: one
	// fault a point.
	Depth int
	// Check, when set, is an invariant of the world that must hold at
	// every quiescent moment of every run, the reference's included:
	// each time the code under test has settled before the next recorded
	// change is sent, and at the end. A run whose world breaks it fails
	// at the first moment it does, with Check's error: a world wrong on
	// the way, not only at the end.
	Check func(world []replay.Object) error
}

// DefaultSettleWithin is [Faults.SettleWithin]'s default.
const DefaultSettleWithin = 10 * time.Minute

// Point is one fault [Explore] injects: its subtest name and the edit.
//
// Name says what is injected where, for example
// "410@configmaps/default:rv=215" (after the change at recorded
// resourceVersion 215 of the ConfigMaps of default) or
// "409@update:configmaps/default/alpha:nth=2" (the second update of
// ConfigMap default/alpha).
type Point = explore.Point

// Environment variables of [Explore].
const (
	// EnvExploreOut names a directory: each failing point is written
	// there as a copy of the cassette with the point's edit in its header,
	// ready to replay with replay.Open (or kwrec serve, kwrec show).
	EnvExploreOut = "KWREC_EXPLORE_OUT"
	// EnvExploreShard, "i/n" (1 <= i <= n), runs the points whose rank
	// is i modulo n: one shard of a CI job matrix.
	EnvExploreShard = "KWREC_EXPLORE_SHARD"
)

// Explore runs body over the cassette name (see [Path]) with
// [BubbleOptions], each run in its own synctest bubble ([Run]):
// first once without faults, the reference, then once per fault point,
// each a parallel subtest named by its point, so that
//
//	go test -run 'TestMirror/409@update:configmaps/default/alpha:nth=2'
//
// reruns that point alone (after the reference, which finds the points).
// The points come from what the reference run did (see [FaultKind]),
// selected by faults and by $KWREC_EXPLORE_SHARD; Explore returns them.
//
// A point fails when body fails under it, or when the world the replay
// ends in (every object, recorded and written: [replay.Replayer.World])
// differs from the reference's, server-set fields aside (as
// [FormatWrites] sets them aside): the code under test did not converge.
// body runs the code under test until the replay is consumed, as with
// [Run]; it may assert more. As for [Run], the package's TestMain calls
// [Main].
//
// A failure says what was injected and where, with the diff of the
// worlds. With $KWREC_EXPLORE_OUT set, a failing point's cassette is
// written there. Once every point has run, the test logs how many were
// tried, how fast, and which failed.
func Explore(t *testing.T, name string, faults Faults, body func(t *testing.T, r *replay.Replayer)) []Point {
	t.Helper()
	x := &exploration{name: name, ignore: faults.Ignore, crds: faults.CRDs, allowDeletes: faults.AllowDeletes, check: faults.Check, body: body,
		settle: stdcmp.Or(faults.SettleWithin, DefaultSettleWithin)}
	x.h = Load(t, name) // read once, replayed once per point
	ref := BubbleOptions()
	ref.CRDs = faults.CRDs
	var refR atomic.Pointer[replay.Replayer]
	ref.Settled = x.checker(t, "the reference run", &refR)
	run(t, x.h, ref, x.settle, func(t *testing.T, r *replay.Replayer) {
		refR.Store(r)
		body(t, r)
		x.checkEnd(t, "the reference run", r)
		if t.Failed() {
			return
		}
		w, err := worldOf(r, faults.Ignore)
		if err != nil {
			t.Fatalf("replaytest: the world of the reference run: %v", err)
		}
		x.ref.world, x.ref.changes, x.ref.requests = w, r.Changes(), append(r.Requests(), r.ObjectRequests()...)
		x.ref.deleted = map[string]bool{}
		for _, d := range explore.Deleted(r.Writes()) {
			x.ref.deleted[d] = true
		}
	})
	if x.ref.world == nil {
		t.Fatalf("replaytest: the reference run (no fault) failed: exploration needs a body that passes first")
	}
	points, err := shard(faultPoints(x.ref.changes, x.ref.requests, faults), os.Getenv(EnvExploreShard))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		slices.Sort(x.failed) // in the order of the points' names, not of their ends
		elapsed := x.end.Sub(x.start)
		t.Logf("replaytest: explored %d of %d fault points of %s in %v (%.0f a second): %d failed %v",
			x.ran, len(points), name, elapsed.Round(time.Millisecond), float64(x.ran)/elapsed.Seconds(), len(x.failed), x.failed)
	})
	for _, p := range points {
		t.Run(p.Name, func(t *testing.T) { x.explore(t, p) })
	}
	return points
}

// exploration is what the subtests of one [Explore] share: its cassette,
// body and reference run, and what the points' runs found.
type exploration struct {
	name         string
	h            *replay.History
	ignore       [][]string
	crds         *replay.CRDs
	allowDeletes bool
	check        func([]replay.Object) error
	settle       time.Duration
	body         func(t *testing.T, r *replay.Replayer)
	ref          struct {
		world    []byte
		changes  []replay.Change
		requests []replay.RequestCount
		deleted  map[string]bool // the objects the reference run deleted, by path
	}

	mu     sync.Mutex
	failed []string
	ran    int
	// The points' span: parallel subtests start once the test function
	// returns, beside those of any other Explore of the same test.
	start, end time.Time
}

// explore is the parallel subtest of point p: body runs with p's edit
// and must end in the reference run's world.
func (x *exploration) explore(t *testing.T, p Point) {
	t.Parallel()
	x.mu.Lock()
	if x.start.IsZero() {
		x.start = time.Now()
	}
	x.mu.Unlock()
	opts := BubbleOptions()
	opts.Edits = p.Edits()
	opts.CRDs = x.crds
	var cur atomic.Pointer[replay.Replayer]
	opts.Settled = x.checker(t, "with "+p.Name, &cur)
	fired := false
	// Deferred: synctest.Test ends a failed test with FailNow.
	defer func() {
		if !fired && !t.Failed() {
			t.Logf("replaytest: %s never fired: the run did not reach that point", p.Name)
		}
		x.mu.Lock()
		x.ran++
		x.end = time.Now()
		if t.Failed() {
			x.failed = append(x.failed, p.Name)
		}
		x.mu.Unlock()
		if t.Failed() {
			writeFailing(t, x.name, p)
		}
	}()
	run(t, x.h, opts, x.settle, func(t *testing.T, r *replay.Replayer) {
		t.Logf("replaytest: injected %s", p)
		cur.Store(r)
		x.body(t, r)
		x.checkEnd(t, "with "+p.Name, r)
		for _, e := range r.Edits() {
			fired = fired || e.Fired > 0
		}
		if t.Failed() {
			return
		}
		w, err := worldOf(r, x.ignore)
		if err != nil {
			t.Fatalf("replaytest: the world after %s: %v", p.Name, err)
		}
		if d := explore.Diff(x.ref.world, w); d != "" {
			t.Errorf("replaytest: with %s (%s) the world ends unlike the reference run's: the code under test did not converge:\n%s", p.Name, p, d)
		}
		if x.allowDeletes {
			return
		}
		for _, d := range explore.Deleted(r.Writes()) {
			if !x.ref.deleted[d] {
				t.Errorf("replaytest: with %s (%s) the code under test deleted %s, which the reference run never deleted: its data was lost for its users, even if it was created again later (Faults.AllowDeletes allows it)", p.Name, p, d)
			}
		}
	})
}

// faultPoints lists the points of the kinds faults selects: after each
// change of a watched resource, on each list and on each write.
func faultPoints(changes []replay.Change, requests []replay.RequestCount, faults Faults) []Point {
	kinds := faults.Kinds
	if kinds == nil {
		kinds = AllFaults
	}
	return explore.Points(changes, requests, explore.Select{Kinds: kinds, Max: faults.Max, Seed: faults.Seed, Depth: faults.Depth})
}

// resourceName is resource.group as kubectl names it, the resource alone
// for the core group.
func resourceName(group, resource string) string { return explore.ResourceName(group, resource) }

// shard keeps the points of shard spec ("i/n"), all for "".
func shard(points []Point, spec string) ([]Point, error) {
	out, err := explore.Shard(points, spec)
	if err != nil {
		return nil, fmt.Errorf("replaytest: %s=%q: %w", EnvExploreShard, spec, err)
	}
	return out, nil
}

// worldOf is r's world as text to compare (see [explore.World]).
func worldOf(r *replay.Replayer, ignore [][]string) ([]byte, error) { return explore.World(r, ignore) }

// writeFailing writes the cassette name with p's edit in its header into
// $KWREC_EXPLORE_OUT, when set.
func writeFailing(t *testing.T, name string, p Point) {
	dir := os.Getenv(EnvExploreOut)
	if dir == "" {
		return
	}
	c, err := cassettes.Load(Path(name))
	if err != nil {
		t.Errorf("replaytest: %s: %v", EnvExploreOut, err)
		return
	}
	for _, e := range p.Edits() {
		c.Header.Edits = append(c.Header.Edits, e.String())
	}
	if c.Header.Labels == nil {
		c.Header.Labels = map[string]string{}
	}
	c.Header.Labels["explored-by"] = t.Name()
	out := filepath.Join(dir, explore.FileName(p.Name)+".kwrec.zst")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Errorf("replaytest: %s: %v", EnvExploreOut, err)
		return
	}
	if err := cassettes.Save(out, c); err != nil {
		t.Errorf("replaytest: %s: %v", EnvExploreOut, err)
		return
	}
	t.Logf("replaytest: wrote %s: replay it with replay.Open, kwrec serve or kwrec show", out)
}

// checker returns the Settled hook that checks Faults.Check at each
// quiescent moment of a run (what names it), reporting the first failure
// only; nil without a Check.
func (x *exploration) checker(t *testing.T, what string, r *atomic.Pointer[replay.Replayer]) func() {
	if x.check == nil {
		return nil
	}
	var moments atomic.Int64
	var failed atomic.Bool
	return func() {
		n := moments.Add(1)
		rr := r.Load()
		if rr == nil || failed.Load() {
			return
		}
		w, err := rr.World()
		if err == nil {
			err = x.check(w)
		}
		if err != nil && !failed.Swap(true) {
			t.Errorf("replaytest: %s, the world broke Faults.Check at quiescent moment %d, before the next recorded change: %v", what, n, err)
		}
	}
}

// checkEnd checks Faults.Check on r's world at the end of a run.
func (x *exploration) checkEnd(t *testing.T, what string, r *replay.Replayer) {
	if x.check == nil || t.Failed() {
		return
	}
	w, err := r.World()
	if err == nil {
		err = x.check(w)
	}
	if err != nil {
		t.Errorf("replaytest: %s, the world broke Faults.Check at the end: %v", what, err)
	}
}
