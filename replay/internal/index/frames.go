package index

import "time"

// frameChunk is how many frames a chunk of a [FrameList] holds.
const frameChunk = 4096

// Bits of a packed frame's word: its offset past its chunk's first
// frame, its length and its line number past the first frame's.
const (
	packOffBits  = 30 // 1 GiB
	packLenBits  = 20 // 1 MiB
	packLineBits = 64 - packOffBits - packLenBits
)

// FrameList is an interaction's frames, in order, in chunks of 4,096: it
// grows a chunk at a time and never copies the chunks it has filled, so
// an index of a million-frame watch is never held twice while Open builds
// it (as growing and then trimming one slice did). Its zero value is an
// empty list.
//
// A chunk holds its frames in 16 bytes each (a [Frame] takes 24) while
// every frame's offset, length and line number fit in one word beside its
// arrival time, relative to the chunk's first frame; a chunk with a frame
// that does not fit (a line of a megabyte or more, a gap of a gigabyte, a
// line number past math.MaxInt32) holds whole frames instead.
type FrameList struct {
	c []frameChunkOf
	n int
}

// frameChunkOf is one chunk of a [FrameList]: packed frames relative to
// base, or, once one did not fit, whole ones.
type frameChunkOf struct {
	base   Frame // the first frame: where offsets and lines count from
	packed []packedFrame
	wide   []Frame // not nil once a frame did not fit
}

// packedFrame is a [Frame] relative to its chunk's base: w holds the
// offset (low packOffBits), the length and the line number's difference.
type packedFrame struct {
	at int64
	w  uint64
}

// pack returns f relative to base, and false if it does not fit.
func pack(base, f Frame) (packedFrame, bool) {
	off, line := f.off-base.off, int64(f.line)-int64(base.line)
	if off < 0 || off >= 1<<packOffBits || f.n < 0 || int64(f.n) >= 1<<packLenBits ||
		base.line == 0 || f.line == 0 || line < 0 || line >= 1<<packLineBits {
		return packedFrame{}, false
	}
	w := uint64(off) | uint64(f.n)<<packOffBits | uint64(line)<<(packOffBits+packLenBits)
	return packedFrame{at: int64(f.At), w: w}, true
}

// unpack returns the frame p is relative to base.
func unpack(base Frame, p packedFrame) Frame {
	return Frame{
		At:   time.Duration(p.at),
		off:  base.off + int64(p.w&(1<<packOffBits-1)),
		n:    int32(p.w >> packOffBits & (1<<packLenBits - 1)),
		line: base.line + int32(p.w>>(packOffBits+packLenBits)),
	}
}

// Len returns the number of frames.
func (l *FrameList) Len() int { return l.n }

// At returns frame i (0-based).
func (l *FrameList) At(i int) Frame {
	c := &l.c[i/frameChunk]
	if c.wide != nil {
		return c.wide[i%frameChunk]
	}
	return unpack(c.base, c.packed[i%frameChunk])
}

// Append adds f after the last frame. The first chunk grows by doubling,
// so that an interaction of a few frames stays small; every later one is
// made whole.
func (l *FrameList) Append(f Frame) {
	if l.n%frameChunk == 0 {
		l.c = append(l.c, frameChunkOf{base: f})
	}
	c := &l.c[len(l.c)-1]
	if c.wide == nil {
		if p, ok := pack(c.base, f); ok {
			c.packed = appendChunk(c.packed, p, l.n > 0)
			l.n++
			return
		}
		c.wide = make([]Frame, 0, cap(c.packed))
		for _, p := range c.packed {
			c.wide = append(c.wide, unpack(c.base, p))
		}
		c.packed = nil
	}
	c.wide = appendChunk(c.wide, f, l.n > 0)
	l.n++
}

// appendChunk appends v to c, a chunk's frames: the chunk is made whole
// at once when later says it is not the list's first, else it doubles.
func appendChunk[T any](c []T, v T, later bool) []T {
	if len(c) == cap(c) {
		size := min(max(2*cap(c), 4), frameChunk)
		if later && len(c) == 0 {
			size = frameChunk
		}
		grown := make([]T, len(c), size)
		copy(grown, c)
		c = grown
	}
	return append(c, v)
}

// Slice returns the frames as one new slice.
func (l *FrameList) Slice() []Frame {
	out := make([]Frame, 0, l.n)
	for i := range l.n {
		out = append(out, l.At(i))
	}
	return out
}
