package replay

import (
	"fmt"
	"io"
	"sync"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/fanout"
)

// frameRef names frame i (0-based) of interaction in.
type frameRef struct {
	in *cassettes.Interaction
	i  int
}

// cursor reads the recorded frames one body serves: frames of one or a few
// interactions, each mostly in increasing order (an edit may repeat one).
// It keeps one open reader per interaction.
type cursor struct {
	src indexSource
	its map[*cassettes.Interaction]*openIter
}

type openIter struct {
	it    indexIter
	pos   int // the frame next() returns next
	last  []byte
	lastI int
}

// frame returns the bytes of frame i of in, valid until the next call for in.
func (c *cursor) frame(in *cassettes.Interaction, i int) ([]byte, error) {
	o := c.its[in]
	if o != nil && o.lastI == i {
		return o.last, nil
	}
	if o == nil || i < o.pos {
		if o != nil {
			o.it.close()
		}
		it, err := c.src.frames(in, i)
		if err != nil {
			return nil, err
		}
		if c.its == nil {
			c.its = map[*cassettes.Interaction]*openIter{}
		}
		o = &openIter{it: it, pos: i, lastI: -1}
		c.its[in] = o
	}
	for o.pos <= i {
		d, err := o.it.next()
		if err == io.EOF {
			return nil, frameMissing(in.ID, o.pos)
		}
		if err != nil {
			return nil, err
		}
		o.last, o.lastI = d, o.pos
		o.pos++
	}
	return o.last, nil
}

func frameMissing(id, i int) error {
	return fmt.Errorf("kwrec replay: interaction %d has no frame %d in the cassette: it changed since it was opened", id, i+1)
}

func (c *cursor) close() {
	for in, o := range c.its {
		o.it.close()
		delete(c.its, in)
	}
}

// raws returns a copy of the recorded bytes of each object, reading the
// frames they are in with one pass over the recording.
func (s objects) raws(t *timeline.Timeline, objs []timeline.Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	err := s.Each(t, objs, func(k int, raw []byte) error {
		out[k] = append([]byte(nil), raw...)
		return nil
	})
	return out, err
}

// objects reads the recorded bytes of objects from a replay's source, for
// its world ([overlay.Objects]).
type objects struct{ src indexSource }

// Each calls fn with the recorded bytes of each of objs (each frame read
// once), which are valid only during the call.
func (s objects) Each(t *timeline.Timeline, objs []timeline.Object, fn func(k int, raw []byte) error) error {
	frameOf := map[frameRef]int{} // frame -> index in refs
	var refs []frameRef
	users := [][]int{} // per ref: the objects in it
	for k, o := range objs {
		if o.Ref.In == nil {
			raw, err := t.Bytes(o.Ref)
			if err != nil {
				return err
			}
			if err := fn(k, raw); err != nil {
				return err
			}
			continue
		}
		key := frameRef{in: o.Ref.In, i: int(o.Ref.I)}
		j, ok := frameOf[key]
		if !ok {
			j = len(refs)
			frameOf[key] = j
			refs = append(refs, key)
			users = append(users, nil)
		}
		users[j] = append(users[j], k)
	}
	return s.src.readMany(refs, func(j int, data []byte) error {
		for _, k := range users[j] {
			raw, err := objs[k].Ref.Of(data)
			if err != nil {
				return err
			}
			if err := fn(k, raw); err != nil {
				return err
			}
		}
		return nil
	})
}

// body returns the whole recorded body of in.
func (s objects) body(in *cassettes.Interaction) ([]byte, error) {
	it, err := s.src.frames(in, 0)
	if err != nil {
		return nil, err
	}
	defer it.close()
	var b []byte
	for {
		d, err := it.next()
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return nil, err
		}
		b = append(b, d...)
	}
}

// frameSource is where a body's recorded bytes come from: the read-ahead
// of its unedited recorded frames, its collection's hub of recorded events
// (package fanout), and a cursor for the rest. Close may come from another
// goroutine than the reads, so a lock guards them.
type frameSource struct {
	mu     sync.Mutex
	cursor cursor
	pf     *prefetch   // reads the unedited recorded frames ahead
	hub    *fanout.Hub // makes the frames of recorded events, shared
	done   bool        // closed: the frames are out, or the body is
}

// recorded returns frame i of the body's interaction; seq says it is the
// next of its unedited frames, which the read-ahead reads.
func (s *frameSource) recorded(b *body, i int, seq bool) ([]byte, error) {
	s.mu.Lock()
	if s.done {
		s.mu.Unlock()
		return nil, errClosedBody
	}
	if seq {
		if s.pf == nil {
			s.pf = startPrefetch(b.s.src, b.p.iv, b.p.recN)
		}
		pf := s.pf
		s.mu.Unlock()
		return pf.take(b.ctx, b.closed)
	}
	defer s.mu.Unlock()
	return s.cursor.frame(b.p.iv.in, i)
}

// ref returns the recorded bytes ref names (a copy-free view, valid until
// the next read of that interaction's frames).
func (s *frameSource) ref(b *body, ref timeline.Ref) ([]byte, error) {
	if ref.In == nil {
		return b.p.tl.Bytes(ref)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		if isClosed(b.closed) {
			return nil, errClosedBody
		}
		// The recorded frames are out, and a write moved an object out
		// of the watch's selection: its DELETED carries the version the
		// watch last sent, read once from the recording.
		raws, err := objects{b.s.src}.raws(b.p.tl, []timeline.Object{{Ref: ref}})
		if err != nil {
			return nil, err
		}
		return raws[0], nil
	}
	d, err := s.cursor.frame(ref.In, int(ref.I))
	if err != nil {
		return nil, err
	}
	return ref.Of(d)
}

// hubFor returns the hub that makes the body's recorded events, attaching
// to it at the first one, first; nil once closed.
func (s *frameSource) hubFor(b *body, first int) *fanout.Hub {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.hub == nil && !s.done {
		s.hub = b.s.fan.attach(b.s, b.p.tl, b.p.proto, first)
	}
	return s.hub
}

// prefetched reports whether the read-ahead has a frame waiting.
func (s *frameSource) prefetched() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pf != nil && s.pf.ready()
}

// hubHas reports whether the hub has made recorded event n's frame.
func (s *frameSource) hubHas(n int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hub != nil && s.hub.Has(n)
}

// close releases the readers and the hub; the reads that follow fail, or
// read the recording once (ref).
func (s *frameSource) close(f *sharing) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
	s.cursor.close()
	if s.pf != nil {
		close(s.pf.stop)
		s.pf = nil
	}
	if s.hub != nil {
		f.hubs.Detach(s.hub)
		s.hub = nil
	}
}
