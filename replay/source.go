package replay

import (
	"fmt"
	"io"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timeline"
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
