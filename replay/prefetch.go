package replay

import "io"

// prefetchDepth is how many frames a body reads ahead of its client.
const prefetchDepth = 32

// prefetch reads a body's recorded frames from the cassette file in its own
// goroutine, ahead of the client: decompressing and decoding a frame then
// overlaps with the client decoding the one before, so a replay from a file
// ([Open]) costs the client about what one from memory does.
type prefetch struct {
	ch   chan fetched
	stop chan struct{}
}

type fetched struct {
	data []byte
	err  error
}

// startPrefetch reads frames [0, n) of iv in order. A file source's frames
// are not reused by its reader (index.FrameReader.Next), so they are
// handed over as they are.
func startPrefetch(src source, iv *ivState, n int) *prefetch {
	pf := &prefetch{ch: make(chan fetched, prefetchDepth), stop: make(chan struct{})}
	go func() {
		it, err := src.frames(iv.in, 0)
		if err != nil {
			pf.send(fetched{err: err})
			return
		}
		defer it.close()
		for i := 0; i < n; i++ {
			d, err := it.next()
			if err == io.EOF {
				err = frameMissing(iv.in.ID, i)
			}
			if !pf.send(fetched{data: d, err: err}) || err != nil {
				return
			}
		}
	}()
	return pf
}

func (pf *prefetch) send(f fetched) bool {
	select {
	case pf.ch <- f:
		return true
	case <-pf.stop:
		return false
	}
}
