package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// retention deletes the oldest parts of a rotated recording while it is
// written (kwrec record --keep, --keep-for). The recording stays whole:
// before the parts up to k-1 go, the state at part k's start
// (cmd/kwrec/internal/cut.Base) is written over part k-1 as a rebased
// part, which supersedes the parts before it and which part k reads on
// from. The state is its own part, so rebasing costs the state's bytes,
// not a part's and the state (as rewriting part k would).
//
// Every step leaves a readable recording (see [keepStep]): the new state
// is written to a temporary file and renamed over part k-1, the parts
// before it are superseded from then on, and only then deleted.
type retention struct {
	opts retentionOptions

	mu      sync.Mutex // one pass at a time
	oldest  int        // the oldest whole part kept
	base    int        // the rebased part before it holding the state at its start, 0 for none
	state   int64      // the base's bytes
	largest int64      // the largest whole part seen
	warned  bool       // that the budget cannot hold the newest whole part and the state
	seen    int        // the newest part seen started
	ended   map[int]time.Time
}

// retentionOptions configure a [retention]. Out is required; the zero
// value of every other field is a default.
type retentionOptions struct {
	// Out is -o: the parts are cassettes.PartName(Out, k).
	Out string
	// Keep keeps the newest Keep parts; 0: no limit.
	Keep int
	// KeepFor drops the parts whose last line is older; 0: no limit.
	KeepFor time.Duration
	// MaxSize is --max-size. With Keep it makes a budget of Keep parts
	// of MaxSize bytes, the state included: the parts kept, the state
	// they start from and the part being written up to its size stay
	// within it, and while a new state is written beside the old one the
	// disk holds at most one part more. 0: no budget in bytes.
	MaxSize int64
	// Clock tells when parts end, for KeepFor. Default: the real clock.
	Clock clock.Clock
	// Log receives a line for each pass. Default: none.
	Log io.Writer
	// Step, when not nil, is called before each step of a pass that
	// changes the disk. An error aborts the pass there as a killed
	// recorder would stop: nothing after it is done, nothing before it
	// undone, a temporary file left as it is. Tests kill the retention
	// at each step with it. Default: no hook.
	Step func(keepStep) error
}

// keepStep is a step of a retention pass, named by what it is about to
// do to the disk.
type keepStep struct {
	Op   keepOp
	Name string // the file it is about to create, write, rename over, or delete
	Part int    // the oldest part the pass keeps
}

// keepOp is what a [keepStep] does.
type keepOp int

const (
	// stepCreate creates the temporary file of the new state beside the
	// part it will replace (Name).
	stepCreate keepOp = iota + 1
	// stepWrite writes the state into the temporary file (Name), empty
	// until then, and syncs it.
	stepWrite
	// stepRename renames the temporary file over the part before the
	// oldest kept (Name): from then on the parts before it are
	// superseded.
	stepRename
	// stepDelete deletes a superseded part (Name): the old state, or a
	// part before the new one.
	stepDelete
)

func (o keepOp) String() string {
	switch o {
	case stepCreate:
		return "create"
	case stepWrite:
		return "write"
	case stepRename:
		return "rename"
	case stepDelete:
		return "delete"
	}
	return fmt.Sprintf("keepOp(%d)", int(o))
}

func newRetention(opts retentionOptions) *retention {
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &retention{opts: opts, oldest: 1, seen: 1, ended: map[int]time.Time{}}
}

// started notes that part newest is being written: the parts before it
// ended by now, as far as the recorder's clock tells.
func (r *retention) started(newest int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := r.seen + 1; k <= newest; k++ {
		r.ended[k-1] = r.opts.Clock.Now()
		fmt.Fprintf(r.opts.Log, "kwrec: recording: part %d started (%s)\n", k, cassettes.PartName(r.opts.Out, k))
	}
	r.seen = max(r.seen, newest)
}

// untilExpiry is how long until --keep-for drops the oldest part that has
// ended; false when nothing will expire without a new part.
func (r *retention) untilExpiry() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	end, ok := r.ended[r.oldest]
	if r.opts.KeepFor <= 0 || !ok || r.oldest >= r.seen-1 {
		return 0, false // the newest whole part is always kept
	}
	return max(r.opts.KeepFor-r.opts.Clock.Since(end), 0) + time.Millisecond, true
}

// apply deletes the parts the limits no longer keep. newest is the part
// being written, or with finished the last one, written. A pass that
// finds the state larger than it was told (the budget counts the last
// state written) drops more parts in a second one.
func (r *retention) apply(newest int, finished bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := newest - 1 // the newest part whole: the oldest kept may be no newer
	if finished {
		last = newest
		if _, ok := r.ended[newest]; !ok {
			r.ended[newest] = r.opts.Clock.Now()
		}
	}
	for {
		k, err := r.oldestKept(newest, last, finished)
		if err != nil || k <= r.oldest {
			return err
		}
		if err := r.rebase(k); err != nil {
			return err
		}
	}
}

// oldestKept returns the oldest part the limits keep, no newer than
// last.
func (r *retention) oldestKept(newest, last int, finished bool) (int, error) {
	k := r.oldest
	if r.opts.Keep > 0 {
		k = max(k, newest-r.opts.Keep+1)
	}
	if r.opts.KeepFor > 0 {
		for k < last {
			end, ok := r.ended[k]
			if !ok || r.opts.Clock.Since(end) <= r.opts.KeepFor {
				break
			}
			k++
		}
	}
	if r.opts.Keep > 0 && r.opts.MaxSize > 0 {
		var sizes []int64 // of parts r.oldest to last
		for j := r.oldest; j <= last; j++ {
			fi, err := os.Stat(cassettes.PartName(r.opts.Out, j))
			if err != nil {
				return 0, fmt.Errorf("keeping parts within %d bytes: %w", int64(r.opts.Keep)*r.opts.MaxSize, err)
			}
			sizes = append(sizes, fi.Size())
			r.largest = max(r.largest, fi.Size())
		}
		b := budget{total: int64(r.opts.Keep) * r.opts.MaxSize, part: r.opts.MaxSize, largest: r.largest, state: r.state, finished: finished}
		drop, fits := b.drop(sizes[max(k-r.oldest, 0):])
		if !fits && !r.warned {
			r.warned = true
			fmt.Fprintf(r.opts.Log, "kwrec: keep: warning: a budget of %d parts of %d bytes cannot hold the newest whole part, the part being written and the state: the disk may hold more; raise --keep or --max-size\n",
				r.opts.Keep, r.opts.MaxSize)
		}
		k += drop
	}
	return min(k, last), nil
}

// budget is what a recording kept within total bytes may hold: parts of
// part bytes (--max-size), the largest whole one so far largest, the
// state the oldest kept starts from state bytes (the last written: the
// next is about as large).
type budget struct {
	total, part, largest, state int64
	finished                    bool // no part is being written, none will be
}

// drop returns how many of the oldest parts, of those whose sizes are
// sizes (the whole ones, oldest first), to drop: the fewest that leave
// the state, the parts kept and the part being written, until it is as
// large as the largest whole part, within the budget; and, for the next
// pass, which writes its state before the old one is deleted, room for
// that state within one part more. The newest whole part is always kept:
// false when even it does not fit.
func (b budget) drop(sizes []int64) (int, bool) {
	var kept int64
	for _, s := range sizes {
		kept += s
	}
	over := func(kept int64) bool {
		if b.finished {
			return b.state+kept > b.total
		}
		writing := max(b.part, b.largest)
		return b.state+kept+writing > b.total || 2*b.state+kept+writing > b.total+b.part
	}
	n := 0
	for n < len(sizes)-1 && over(kept) {
		kept -= sizes[n]
		n++
	}
	return n, !over(kept)
}

// rebase writes the state at part k's start over part k-1, then deletes
// the parts before it. A recorder killed in between leaves them
// superseded, not in the way: the recording reads from its newest
// rebased part.
func (r *retention) rebase(k int) error {
	var names []string
	if r.base > 0 {
		names = append(names, cassettes.PartName(r.opts.Out, r.base))
	}
	for j := r.oldest; j <= k; j++ {
		names = append(names, cassettes.PartName(r.opts.Out, j))
	}
	part, into := cassettes.PartName(r.opts.Out, k), cassettes.PartName(r.opts.Out, k-1)
	rec, err := cut.Read(names...)
	if err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	res, err := cut.Base(rec, part)
	if err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	form, err := cassettes.FormOf(part)
	if err != nil {
		return err
	}
	opts := cassettes.WriterOptions{Compress: form.Compressed}
	n, err := r.replace(k, into, func(w io.Writer) error { return res.Write(w, opts) })
	if err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	superseded := names[:len(names)-2] // the old state, the parts before k-1
	dropped := fmt.Sprintf("part %d", r.oldest)
	if k-1 > r.oldest {
		dropped = fmt.Sprintf("parts %d-%d", r.oldest, k-1)
	}
	r.oldest, r.base, r.state = k, k-1, n
	fmt.Fprintf(r.opts.Log, "kwrec: keep: dropped %s; %s, rebased, now holds only the state at resourceVersion %d, where part %d starts (%d bytes)\n",
		dropped, into, res.RV, k, n)
	var errs []error
	for _, name := range superseded {
		if err := r.at(stepDelete, name, k); err != nil {
			return fmt.Errorf("keeping parts from %s: %w", part, err)
		}
		if err := os.Remove(name); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// replace writes path's new content with write, atomically: to a
// temporary file beside it, synced, renamed over it. It returns the
// bytes written. k is the oldest part the pass keeps.
func (r *retention) replace(k int, path string, write func(io.Writer) error) (int64, error) {
	dir, name := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	if err := r.at(stepCreate, path, k); err != nil {
		return 0, err
	}
	tmp, err := os.CreateTemp(dir, "."+name+".tmp*")
	if err != nil {
		return 0, err
	}
	if err := r.at(stepWrite, tmp.Name(), k); err != nil {
		tmp.Close()
		return 0, err
	}
	cw := &countWriter{w: tmp}
	err = write(cw)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	if err := r.at(stepRename, path, k); err != nil {
		return 0, err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		os.Remove(tmp.Name())
		return 0, err
	}
	return cw.n, nil
}

// at calls the Step hook, if any, before step op on name of the pass
// that keeps the parts from k on.
func (r *retention) at(op keepOp, name string, k int) error {
	if r.opts.Step == nil {
		return nil
	}
	return r.opts.Step(keepStep{Op: op, Name: name, Part: k})
}

// countWriter counts the bytes written through it.
type countWriter struct {
	w io.Writer
	n int64
}

func (c *countWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// checkKeep checks --keep and --keep-for against the other flags.
func (f *recordFlags) checkKeep() error {
	switch {
	case f.keep == 0 && f.keepFor == 0:
		return nil
	case f.keep < 0 || f.keep == 1:
		return fmt.Errorf("--keep %d: keep at least 2 parts: the part being written and the whole one before it, which is rebased", f.keep)
	case f.keepFor < 0:
		return fmt.Errorf("--keep-for %v: want a positive duration such as 24h", f.keepFor)
	case f.maxSize == "" && f.rotate == 0:
		return errors.New("--keep and --keep-for delete the oldest parts of a rotated recording: add --max-size or --rotate")
	case f.deltas:
		return errors.New("--keep and --keep-for do not work with --deltas: a delta may name a frame in a part they delete; run kwrec compact on the kept parts instead")
	}
	return nil
}
