package replay

import (
	"context"
	"errors"
)

// prefetchBatch is the most frames a body's read-ahead hands its client at
// once, and prefetchBytes about the most bytes; prefetchDepth is how many
// batches wait. Batches grow only while the client is busy: a client that
// waits gets each frame as it is read.
const (
	prefetchBatch = 64
	prefetchBytes = 256 << 10
	prefetchDepth = 2
	// prefetchFree is room for every batch there is, so that none the
	// client hands back is dropped (and a new one made, a garbage of
	// prefetchBytes per batch): prefetchDepth in the channel, one the
	// read-ahead waits to send, one it fills, and the client's.
	prefetchFree = prefetchDepth + 3
)

// prefetch reads a body's recorded frames from the cassette file in its own
// goroutine, ahead of the client: decompressing and decoding a frame then
// overlaps with the client decoding the one before, so a replay from a file
// ([Open]) costs the client about what one from memory does. Frames go to
// the client in batches, so that the two goroutines do not hand over, and
// wake each other, once a frame: on two cores that traffic cost a JSON
// client up to a tenth of its rate. A batch's frames are copied into its
// own buffer, and the client hands each batch back once it has served it,
// to be filled again: a replay allocates no memory per frame that the
// client's garbage collector would have to reclaim (on two cores the
// collector competes with the client as the read-ahead does).
type prefetch struct {
	ch   chan *readBatch
	free chan *readBatch // served batches, to fill again
	stop chan struct{}
	// pending is the batch the client is taking frames from, next the
	// frame it takes next; only the client's goroutine touches them.
	pending *readBatch
	next    int
}

// readBatch is frames read ahead, their bytes one after the other in
// data, then err if the reading failed after them.
type readBatch struct {
	ends []int // where each frame ends in data
	data []byte
	err  error
}

func (fb *readBatch) add(d []byte) {
	fb.data = append(fb.data, d...)
	fb.ends = append(fb.ends, len(fb.data))
}

// frame returns frame k of the batch; past the last, the batch's error.
func (fb *readBatch) frame(k int) ([]byte, error) {
	if k >= len(fb.ends) {
		return nil, fb.err
	}
	start := 0
	if k > 0 {
		start = fb.ends[k-1]
	}
	return fb.data[start:fb.ends[k]:fb.ends[k]], nil
}

// errPrefetchStopped ends a read-ahead whose body stopped.
var errPrefetchStopped = errors.New("kwrec replay: read-ahead stopped")

// startPrefetch reads frames [0, n) of iv in order.
func startPrefetch(src indexSource, iv *ivState, n int) *prefetch {
	pf := &prefetch{ch: make(chan *readBatch, prefetchDepth), free: make(chan *readBatch, prefetchFree), stop: make(chan struct{})}
	go func() {
		batch := pf.batch()
		err := src.scan(iv.in, n, func(i int, d []byte) error {
			if len(batch.ends) > 0 && len(batch.data)+len(d) > cap(batch.data) {
				// Hand the batch over as it is rather than grow its buffer:
				// a grown buffer is garbage once a later batch is made.
				if !pf.send(batch) {
					return errPrefetchStopped
				}
				batch = pf.batch()
			}
			batch.add(d)
			if i == n-1 || len(batch.ends) == prefetchBatch || len(batch.data) >= prefetchBytes {
				if !pf.send(batch) {
					return errPrefetchStopped
				}
			} else if !pf.offer(batch) {
				return nil
			}
			batch = pf.batch()
			return nil
		})
		if err != nil && err != errPrefetchStopped {
			batch.err = err
			pf.send(batch)
		}
	}()
	return pf
}

// batch returns an empty batch: a served one if there is one.
func (pf *prefetch) batch() *readBatch {
	select {
	case fb := <-pf.free:
		fb.ends, fb.data = fb.ends[:0], fb.data[:0]
		return fb
	default:
		return &readBatch{ends: make([]int, 0, prefetchBatch), data: make([]byte, 0, prefetchBytes)}
	}
}

// send hands batch over, waiting for room; false once the body stopped.
func (pf *prefetch) send(batch *readBatch) bool {
	select {
	case pf.ch <- batch:
		return true
	case <-pf.stop:
		return false
	}
}

// offer hands batch over if there is room now.
func (pf *prefetch) offer(batch *readBatch) bool {
	select {
	case pf.ch <- batch:
		return true
	default:
		return false
	}
}

// take returns the next frame, waiting for it until closed is closed or
// ctx is done. Its bytes are valid until the next call: the batch they are
// in is then handed back to be filled again.
func (pf *prefetch) take(ctx context.Context, closed <-chan struct{}) ([]byte, error) {
	if pf.pending == nil || pf.next >= len(pf.pending.ends) && pf.pending.err == nil {
		if pf.pending != nil {
			select {
			case pf.free <- pf.pending:
			default:
			}
			pf.pending = nil
		}
		select {
		case pf.pending = <-pf.ch:
		case <-closed:
			return nil, errClosedBody
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		pf.next = 0
	}
	d, err := pf.pending.frame(pf.next)
	pf.next++
	return d, err
}

// ready reports whether a frame is read and waiting.
func (pf *prefetch) ready() bool {
	return pf.pending != nil && (pf.next < len(pf.pending.ends) || pf.pending.err != nil) || len(pf.ch) > 0
}
