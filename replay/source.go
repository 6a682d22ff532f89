package replay

import (
	"fmt"
	"io"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timeline"
)

// source gives a Replayer the bytes of recorded frames: from memory for a
// loaded cassette ([New]), from the cassette file for an indexed one
// ([Open]), so that a replay holds only the frames it is serving.
type source interface {
	// frames reads in's frames from frame from (0-based) on, in order.
	frames(in *cassettes.Interaction, from int) (frameIter, error)
	// scan calls fn(i, data) for frames i = 0 to n-1 of in, in order,
	// until fn fails; data is only valid during the call.
	scan(in *cassettes.Interaction, n int, fn func(i int, data []byte) error) error
	// readMany calls fn(k, data) for the frame each ref names, in any
	// order; data is only valid during the call.
	readMany(refs []frameRef, fn func(k int, data []byte) error) error
	close() error
}

// frameRef names frame i (0-based) of interaction in.
type frameRef struct {
	in *cassettes.Interaction
	i  int
}

type frameIter interface {
	// next returns the next frame's bytes, valid until the next call; io.EOF after the last.
	next() ([]byte, error)
	close()
}

// memSource serves the frames of a cassette held in memory.
type memSource struct{}

func (memSource) frames(in *cassettes.Interaction, from int) (frameIter, error) {
	return &memIter{frames: in.Frames[min(from, len(in.Frames)):]}, nil
}

func (memSource) scan(in *cassettes.Interaction, n int, fn func(int, []byte) error) error {
	if n > len(in.Frames) {
		return frameMissing(in.ID, len(in.Frames))
	}
	for i, f := range in.Frames[:n] {
		if err := fn(i, f.Data); err != nil {
			return err
		}
	}
	return nil
}

func (memSource) readMany(refs []frameRef, fn func(int, []byte) error) error {
	for k, ref := range refs {
		if err := fn(k, ref.in.Frames[ref.i].Data); err != nil {
			return err
		}
	}
	return nil
}

func (memSource) close() error { return nil }

type memIter struct{ frames []cassettes.Frame }

func (m *memIter) next() ([]byte, error) {
	if len(m.frames) == 0 {
		return nil, io.EOF
	}
	d := m.frames[0].Data
	m.frames = m.frames[1:]
	return d, nil
}

func (m *memIter) close() {}

// cursor reads the recorded frames one body serves: frames of one or a few
// interactions, each mostly in increasing order (an edit may repeat one).
// It keeps one open reader per interaction.
type cursor struct {
	src source
	its map[*cassettes.Interaction]*openIter
}

type openIter struct {
	it    frameIter
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
func (r *Replayer) raws(t *timeline.Timeline, objs []timeline.Object) ([][]byte, error) {
	out := make([][]byte, len(objs))
	err := r.eachRaw(t, objs, func(k int, raw []byte) error {
		out[k] = append([]byte(nil), raw...)
		return nil
	})
	return out, err
}

// eachRaw calls fn with the recorded bytes of each of objs (as raws reads
// them, each frame once), which are valid only during the call.
func (r *Replayer) eachRaw(t *timeline.Timeline, objs []timeline.Object, fn func(k int, raw []byte) error) error {
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
	return r.src.readMany(refs, func(j int, data []byte) error {
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
func (r *Replayer) body(in *cassettes.Interaction) ([]byte, error) {
	it, err := r.src.frames(in, 0)
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
