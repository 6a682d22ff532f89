package cassettefile

import (
	"fmt"
	"slices"

	"github.com/klauspost/compress/s2"
)

// A shared frame (a list later deltas copy from, see the cassettes
// package doc, "Object deltas") stays with a reader, and with the
// Writer, to the end. They hold it packed: cut into chunks of packChunk
// bytes, each compressed with S2 against a dictionary made of the
// frame's first packDict bytes, so that a list of objects of a kind,
// which repeat one another, is held in about a tenth of its bytes
// (12x on target 3's Pods), and a delta decodes only the chunks its
// copies cover (about a microsecond for 8 KiB).
const (
	packChunk = 8 << 10
	packDict  = 32 << 10
)

// PackedFrame is a frame held packed: what a delta against a shared
// frame, or a reader's kept frame, is applied to. Safe for concurrent use
// once made.
type PackedFrame struct {
	n      int      // the frame's length
	dict   *s2.Dict // nil: the chunks are plain S2 (a frame under s2.MinDictSize bytes)
	packed []byte   // the chunks, end to end
	ends   []int32  // where each chunk ends in packed
	held   int      // bytes held: the chunks, and the dictionary if its own
}

// Pack returns data packed against a dictionary of its own first bytes,
// which it holds. It does not keep data.
func Pack(data []byte) *PackedFrame {
	d := NewPackDict(data)
	p := PackWith(data, d)
	if d != nil {
		p.held += d.held
	}
	return p
}

// A PackDict is a dictionary frames alike (the versions of a watch's
// objects) are packed against, made once from one of them: a kept frame
// of a watch of Pods is held in a quarter of its bytes with the watch's
// first frame as dictionary (1.5x in plain S2). Not safe for concurrent
// use; the frames packed with it are.
type PackDict struct {
	enc, dec *s2.Dict
	held     int
	c        []byte // a chunk, encoded: reused by every PackWith
}

// NewPackDict returns a dictionary of sample's first bytes, or nil if
// sample is too short for one (PackWith then packs in plain S2). It does
// not keep sample.
func NewPackDict(sample []byte) *PackDict {
	d := sample[:min(len(sample), packDict)]
	if len(d) < s2.MinDictSize {
		return nil
	}
	// The dictionary frames are decoded with is made apart, so that
	// they do not keep the encoder's table built by its first Encode.
	own := append([]byte(nil), d...)
	return &PackDict{enc: s2.MakeDict(own, nil), dec: s2.MakeDict(own, nil), held: len(own)}
}

// Held returns how many bytes d holds besides the table of the
// encoder it makes on its first use (32 KiB).
func (d *PackDict) Held() int { return d.held }

// PackWith returns data packed against d (plain S2 if d is nil), which
// the frame shares and does not count as held. It does not keep data.
func PackWith(data []byte, d *PackDict) *PackedFrame {
	if d == nil {
		p, _ := pack(data, nil, nil, nil)
		return p
	}
	p, c := pack(data, d.enc, d.dec, d.c)
	d.c = c
	return p
}

// pack packs data against enc, to be decoded with dec (both nil: plain
// S2), encoding each chunk into c (grown as needed, and returned for
// reuse).
func pack(data []byte, enc, dec *s2.Dict, c []byte) (*PackedFrame, []byte) {
	p := &PackedFrame{n: len(data), dict: dec}
	chunks := (len(data) + packChunk - 1) / packChunk
	p.ends = make([]int32, 0, chunks)
	var packed []byte
	for lo := 0; lo < len(data); lo += packChunk {
		src := data[lo:min(lo+packChunk, len(data))]
		c = c[:cap(c)] // Encode writes into c when it is large enough
		if enc != nil {
			c = enc.Encode(c, src)
		} else {
			c = s2.Encode(c, src)
		}
		if chunks == 1 {
			packed = slices.Clone(c) // no spare capacity held
		} else {
			packed = append(packed, c...)
		}
		p.ends = append(p.ends, int32(len(packed)))
	}
	if chunks > 1 {
		packed = slices.Clone(packed)
	}
	p.packed = packed
	p.held += len(p.packed) + 4*len(p.ends)
	return p, c
}

// chunk returns packed chunk k.
func (p *PackedFrame) chunk(k int) []byte {
	lo := int32(0)
	if k > 0 {
		lo = p.ends[k-1]
	}
	return p.packed[lo:p.ends[k]]
}

// Len returns the frame's length.
func (p *PackedFrame) Len() int { return p.n }

// Held returns how many bytes p holds.
func (p *PackedFrame) Held() int { return p.held }

// Range appends to dst the frame's bytes from the start of the chunk
// that holds byte lo to the end of the chunk that holds byte hi-1, and
// returns them with the offset in the frame of their first byte.
func (p *PackedFrame) Range(dst []byte, lo, hi int) ([]byte, int, error) {
	if lo < 0 || hi > p.n || lo >= hi {
		return dst, 0, fmt.Errorf("bytes %d to %d of a frame of %d", lo, hi, p.n)
	}
	first, last := lo/packChunk, (hi-1)/packChunk
	start := len(dst)
	for k := first; k <= last; k++ {
		at := len(dst)
		size := min(packChunk, p.n-k*packChunk)
		dst = slices.Grow(dst, size)[:at+size]
		var out []byte
		var err error
		if p.dict != nil {
			out, err = p.dict.Decode(dst[at:at:at+size], p.chunk(k))
		} else {
			out, err = s2.Decode(dst[at:at:at+size], p.chunk(k))
		}
		if err != nil || len(out) != size || &out[0] != &dst[at] {
			// Packed in this process: a bug, not bad input.
			return dst[:start], 0, fmt.Errorf("chunk %d of a packed frame does not decode: %v", k, err)
		}
	}
	return dst, first * packChunk, nil
}

// ApplyDelta appends to dst the frame delta rebuilds from p, decoding
// the chunks its copies cover into scratch (grown as needed, and
// returned for reuse). Errors are ApplyDelta's.
func (p *PackedFrame) ApplyDelta(dst, delta, scratch []byte) ([]byte, []byte, error) {
	size, lo, hi, ok := deltaShape(delta)
	if !ok || lo < 0 || hi > p.n {
		// No copies, or a bad delta: ApplyDelta says which.
		out, err := applyDeltaAt(dst, nil, 0, p.n, delta)
		return out, scratch, err
	}
	dst = slices.Grow(dst, size)
	base, origin, err := p.Range(scratch[:0], lo, hi)
	if err != nil {
		return dst, base, err
	}
	out, err := applyDeltaAt(dst, base, origin, p.n, delta)
	return out, base, err
}
