package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// retention deletes the oldest parts of a rotated recording while it is
// written (kwrec record --keep, --keep-for), rebasing the oldest part it
// keeps first (cmd/kwrec/internal/cut.Rebase) so that the recording replays from
// it.
type retention struct {
	out     string        // -o: the parts are cassettes.PartName(out, k)
	keep    int           // keep the newest keep parts; 0: no limit
	keepFor time.Duration // drop parts whose last line is older; 0: no limit
	clock   clock.Clock
	log     io.Writer

	mu     sync.Mutex // one pass at a time
	oldest int        // the oldest part on disk
	seen   int        // the newest part seen started
	ended  map[int]time.Time
}

func newRetention(out string, keep int, keepFor time.Duration, log io.Writer) *retention {
	return &retention{out: out, keep: keep, keepFor: keepFor, clock: clock.RealClock{}, log: log, oldest: 1, seen: 1, ended: map[int]time.Time{}}
}

// started notes that part newest is being written: the parts before it
// ended by now, as far as the recorder's clock tells.
func (r *retention) started(newest int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k := r.seen + 1; k <= newest; k++ {
		r.ended[k-1] = r.clock.Now()
		fmt.Fprintf(r.log, "kwrec: recording: part %d started (%s)\n", k, cassettes.PartName(r.out, k))
	}
	r.seen = max(r.seen, newest)
}

// untilExpiry is how long until --keep-for drops the oldest part that has
// ended; false when nothing will expire without a new part.
func (r *retention) untilExpiry() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	end, ok := r.ended[r.oldest]
	if r.keepFor <= 0 || !ok || r.oldest >= r.seen-1 {
		return 0, false // the newest whole part is always kept
	}
	return max(r.keepFor-r.clock.Since(end), 0) + time.Millisecond, true
}

// apply deletes the parts the limits no longer keep. newest is the part
// being written, or with finished the last one, written.
func (r *retention) apply(newest int, finished bool) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := newest - 1 // the newest part whole: the oldest kept may be no newer
	if finished {
		last = newest
		if _, ok := r.ended[newest]; !ok {
			r.ended[newest] = r.clock.Now()
		}
	}
	k := r.oldest
	if r.keep > 0 {
		k = max(k, newest-r.keep+1)
	}
	if r.keepFor > 0 {
		for k < last {
			end, ok := r.ended[k]
			if !ok || r.clock.Since(end) <= r.keepFor {
				break
			}
			k++
		}
	}
	k = min(k, last)
	if k <= r.oldest {
		return nil
	}
	return r.rebase(k)
}

// rebase rewrites part k as a rebased part, then deletes the parts
// before it. A crash in between leaves them superseded, not in the way:
// the recording reads from its newest rebased part.
func (r *retention) rebase(k int) error {
	var names []string
	for j := r.oldest; j <= k; j++ {
		names = append(names, cassettes.PartName(r.out, j))
	}
	part := names[len(names)-1]
	rec, err := cut.Read(names...)
	if err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	res, err := cut.Rebase(rec, part)
	if err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	form, err := cassettes.FormOf(part)
	if err != nil {
		return err
	}
	opts := cassettes.WriterOptions{Compress: form.Compressed}
	if err := cassettes.WriteAtomic(part, func(w io.Writer) error { return res.Write(w, opts) }); err != nil {
		return fmt.Errorf("keeping parts from %s: %w", part, err)
	}
	var errs []error
	for _, n := range names[:len(names)-1] {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	deleted := fmt.Sprintf("part %d", r.oldest)
	if k-1 > r.oldest {
		deleted = fmt.Sprintf("parts %d-%d", r.oldest, k-1)
	}
	fmt.Fprintf(r.log, "kwrec: keep: part %d rebased (%s starts with the state at resourceVersion %d); deleted %s\n", k, part, res.RV, deleted)
	r.oldest = k
	return errors.Join(errs...)
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
