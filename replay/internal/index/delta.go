package index

import (
	"fmt"
	"sort"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cassettefile"
)

// A frame of the compressed form may be a delta against an earlier frame
// of its interaction (see the cassettes package doc, "Object deltas").
// The index pass gets every frame whole from the cassettes.Reader and
// notes, per delta that copies, which frame it copies from. Reading a
// frame back then rebuilds it from its base: a FrameReader and Scan keep
// the frames they have read that later deltas copy from (at most the
// Writer's cassettes.WriterOptions.DeltaBudget), and ReadFrames those
// that a later frame it reads copies from, so reading an interaction in
// order never walks a chain; a frame whose base is not at hand (a read
// from the middle) rebuilds its chain, at most cassettes.MaxDeltaChain
// frames, in one forward pass of a cursor of its own, which decodes from
// a seek point up to the base.

// noteBase records frame i's base, as the Scanner's Base says it (1 + its number,
// 0: a whole frame).
func noteBase(in *Interaction, i, base int) {
	if in.bases == nil {
		if base == 0 {
			return
		}
		in.bases = make([]int32, i, i+1)
	}
	in.bases = append(in.bases, int32(base))
}

// baseOf returns 1 + the number of the frame frame i of in copies from,
// or 0.
func baseOf(in *Interaction, i int) int {
	if in.bases == nil {
		return 0
	}
	return int(in.bases[i])
}

// parseLine parses the line of frame loc of in, whole or a delta, and
// reports false if it is not that frame's line.
func parseLine(line []byte, in *Interaction, loc Frame, dst []byte) (cassettes.Frame, cassettefile.FrameExt, bool) {
	id, at, data, x, ok := cassettefile.ParseFrameLine(line, dst)
	return cassettes.Frame{At: at, Data: data}, x, ok && id == in.ID && at == loc.At
}

// keptFrames are the frames a pass has read that later deltas copy from,
// until one does, held packed against a dictionary made of the first of
// them (the versions of a watch's objects are alike: a quarter of their
// bytes on Pods). A nil *keptFrames keeps nothing.
type keptFrames struct {
	m       map[int]*cassettefile.PackedFrame
	dict    *cassettefile.PackDict
	scratch []byte // a kept frame's chunks, decoded
	// only, if not nil, are the frames to keep: the bases of the frames
	// a ReadFrames names.
	only map[int]bool
}

// put keeps a copy of frame i's data, packed, unless only leaves it out.
func (k *keptFrames) put(i int, data []byte) {
	if k.only != nil && !k.only[i] {
		return
	}
	if k.m == nil {
		k.m = map[int]*cassettefile.PackedFrame{}
		k.dict = cassettefile.NewPackDict(data)
	}
	k.m[i] = cassettefile.PackWith(data, k.dict)
}

// take returns kept frame i and forgets it.
func (k *keptFrames) take(i int) (*cassettefile.PackedFrame, bool) {
	if k == nil {
		return nil, false
	}
	pf, ok := k.m[i]
	delete(k.m, i)
	return pf, ok
}

// read reads the reader's next frame, from the frames it kept or the
// file, and keeps it if a later delta may copy from it.
func (fr *FrameReader) read() (cassettes.Frame, error) {
	if fr.kept == nil && fr.in.bases != nil {
		fr.kept = &keptFrames{}
	}
	if fr.rc == nil {
		rc := fr.c.x.cursor()
		fr.rc = &rc
	}
	return fr.c.x.readFrame(&fr.c, fr.rc, fr.in, fr.i, nil, fr.kept)
}

// readFrame reads frame i of in with c, into buf if not nil. A delta is
// rebuilt from its base, taken out of kept if it is there, else
// rebuilt from the file with rc; with kept not nil, a frame a later
// delta may copy from goes into it (a copy, as the frame is the
// caller's).
func (x *Index) readFrame(c, rc *cursor, in *Interaction, i int, buf []byte, kept *keptFrames) (cassettes.Frame, error) {
	loc := in.Frames.At(i)
	f, ext, err := c.frame(in, loc, buf)
	if err != nil {
		return f, err
	}
	if ext.Delta {
		if f.Data, err = x.applyDelta(c, rc, in, i, ext, kept); err != nil {
			return cassettes.Frame{}, err
		}
	}
	if kept != nil && ext.Keep {
		kept.put(i, f.Data)
	}
	return f, nil
}

// applyDelta rebuilds frame i of in, the delta ext: against a list's
// frame, which every reader shares, or against a frame of in, taken out
// of kept if it is there, else rebuilt with rc. The delta consumes its
// base, whether it copies from it or not (the end of a chain only
// inserts). A delta that does not apply is an error of c's line.
func (x *Index) applyDelta(c, rc *cursor, in *Interaction, i int, ext cassettefile.FrameExt, kept *keptFrames) ([]byte, error) {
	var pf *cassettefile.PackedFrame
	var base []byte
	if ext.From == 0 {
		var ok bool
		if pf, ok = kept.take(ext.Base); !ok {
			if b := baseOf(in, i); b != 0 {
				var err error
				if base, err = x.rebuild(rc, in, b-1); err != nil {
					return nil, err
				}
			}
		}
	}
	return x.apply(c, in.Frames.At(i), ext, pf, base, kept)
}

// apply rebuilds the frame at loc, the delta ext: for a delta against a
// list, from that list's frame, else from pf (a kept frame) or base. A
// packed frame's chunks are decoded into kept's scratch, if kept is not
// nil. A delta that does not apply is an error of c's line.
func (x *Index) apply(c *cursor, loc Frame, ext cassettefile.FrameExt, pf *cassettefile.PackedFrame, base []byte, kept *keptFrames) ([]byte, error) {
	if ext.From != 0 {
		var err error
		if pf, err = x.sharedFrame(ext.From, ext.Base); err != nil {
			return nil, err
		}
	}
	var data []byte
	var err error
	if pf != nil {
		var scratch []byte
		if kept != nil {
			scratch = kept.scratch
		}
		data, scratch, err = pf.ApplyDelta(nil, ext.Ops, scratch)
		if kept != nil {
			kept.scratch = scratch
		}
	} else {
		data, err = cassettefile.ApplyDelta(nil, base, ext.Ops)
	}
	if err != nil {
		return nil, c.fail(loc, err)
	}
	return data, nil
}

// rebuild returns frame k of in, reading the frames of its delta chain in
// file order with c, a cursor other than the one reading the frame
// that needs it.
func (x *Index) rebuild(c *cursor, in *Interaction, k int) ([]byte, error) {
	x.rebuilt.Add(1)
	chain := []int{k}
	for b := baseOf(in, k); b != 0; b = baseOf(in, b-1) {
		chain = append(chain, b-1)
	}
	var data []byte
	for j := len(chain) - 1; j >= 0; j-- {
		loc := in.Frames.At(chain[j])
		f, ext, err := c.frame(in, loc, nil)
		if err != nil {
			return nil, err
		}
		if !ext.Delta {
			data = f.Data
			continue
		}
		// (A delta against a list's frame starts the chain.)
		if data, err = x.apply(c, loc, ext, nil, data, nil); err != nil {
			return nil, err
		}
	}
	return data, nil
}

// sharedFrame returns frame k of interaction id, a frame the Writer
// marked shared (a list whose items later deltas of other interactions
// copy from): read from the file once, then kept for every reader of the
// index, packed. What is kept is at most half the Writer's delta budget
// of list text (packed, about a tenth of it on lists of objects alike).
func (x *Index) sharedFrame(id, k int) (*cassettefile.PackedFrame, error) {
	key := cassettefile.FrameID{ID: id, Frame: k}
	x.sharedMu.Lock()
	defer x.sharedMu.Unlock()
	if b, ok := x.shared[key]; ok {
		return b, nil
	}
	n := sort.Search(len(x.Interactions), func(n int) bool { return x.Interactions[n].ID >= id })
	if n == len(x.Interactions) || x.Interactions[n].ID != id || k >= x.Interactions[n].Frames.Len() {
		return nil, fmt.Errorf("cassette: %s: a delta names frame %d of interaction %d, which the index does not have", x.names[0], k, id)
	}
	in := x.Interactions[n]
	c := x.cursor()
	defer c.close()
	loc := in.Frames.At(k)
	f, ext, err := c.frame(in, loc, nil)
	if err != nil {
		return nil, err
	}
	if ext.Delta {
		return nil, c.fail(loc, nil) // a shared frame is whole: the file changed
	}
	if x.shared == nil {
		x.shared = map[cassettefile.FrameID]*cassettefile.PackedFrame{}
	}
	pf := cassettefile.Pack(f.Data)
	x.shared[key] = pf
	return pf, nil
}
