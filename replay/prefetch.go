package replay

import "io"

// prefetchBatch is the most frames a body's read-ahead hands its client at
// once, and prefetchBytes about the most bytes; prefetchDepth is how many
// batches wait. Batches grow only while the client is busy: a client that
// waits gets each frame as it is read.
const (
	prefetchBatch = 64
	prefetchBytes = 256 << 10
	prefetchDepth = 2
)

// prefetch reads a body's recorded frames from the cassette file in its own
// goroutine, ahead of the client: decompressing and decoding a frame then
// overlaps with the client decoding the one before, so a replay from a file
// ([Open]) costs the client about what one from memory does. Frames go to
// the client in batches, so that the two goroutines do not hand over, and
// wake each other, once a frame: on two cores that traffic cost a JSON
// client up to a tenth of its rate.
type prefetch struct {
	ch   chan []fetched
	stop chan struct{}
	// pending is the batch the client is taking frames from; only the
	// client's goroutine touches it.
	pending []fetched
}

type fetched struct {
	data []byte
	err  error
}

// startPrefetch reads frames [0, n) of iv in order. A file source's frames
// are not reused by its reader (index.FrameReader.Next), so they are
// handed over as they are.
func startPrefetch(src source, iv *ivState, n int) *prefetch {
	pf := &prefetch{ch: make(chan []fetched, prefetchDepth), stop: make(chan struct{})}
	go func() {
		it, err := src.frames(iv.in, 0)
		if err != nil {
			pf.send([]fetched{{err: err}})
			return
		}
		defer it.close()
		var batch []fetched
		size := 0
		for i := 0; i < n; i++ {
			d, err := it.next()
			if err == io.EOF {
				err = frameMissing(iv.in.ID, i)
			}
			batch = append(batch, fetched{data: d, err: err})
			size += len(d)
			if err != nil || i == n-1 || len(batch) == prefetchBatch || size >= prefetchBytes {
				if !pf.send(batch) || err != nil {
					return
				}
			} else if !pf.offer(batch) {
				continue
			}
			batch, size = make([]fetched, 0, prefetchBatch), 0
		}
	}()
	return pf
}

// send hands batch over, waiting for room; false once the body stopped.
func (pf *prefetch) send(batch []fetched) bool {
	select {
	case pf.ch <- batch:
		return true
	case <-pf.stop:
		return false
	}
}

// offer hands batch over if there is room now.
func (pf *prefetch) offer(batch []fetched) bool {
	select {
	case pf.ch <- batch:
		return true
	default:
		return false
	}
}

// ready reports whether a frame is read and waiting.
func (pf *prefetch) ready() bool { return len(pf.pending) > 0 || len(pf.ch) > 0 }
