package cassettefile

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/internal/wire"
)

// A delta (see the cassettes package doc, "Object deltas") rebuilds a
// frame from an earlier frame, its base: a sequence of ops, each starting
// with a uvarint tag t:
//
//	t&1 == 0  insert: the t>>1 bytes that follow (t>>1 >= 1)
//	t&1 == 1  copy: t>>1 bytes (>= 1) of the base from offset p+d, where
//	          the zigzag varint d follows and p is where the previous copy
//	          ended in the base (0 at first)
//
// Offsets relative to the previous copy are small when base and frame
// differ in a few places, as two versions of one object do: most ops are
// 2 to 4 bytes, and an insert's bytes stay as they are in the frame, so
// the JSON in them stays readable and compressible.

// ErrBadDelta is what [ApplyDelta] wraps when a delta does not decode
// against its base.
var ErrBadDelta = errors.New("bad delta")

// MaxDeltaOutput bounds what ApplyDelta builds: a frame is one line of at
// most this many bytes (cassettes.MaxLineSize).
const MaxDeltaOutput = 256 << 20

// ApplyDelta appends to dst the frame delta rebuilds from base.
func ApplyDelta(dst, base, delta []byte) ([]byte, error) {
	// One allocation, not a doubling's; only for a delta that reads
	// within base, so that a corrupt one costs no more than its bytes.
	if size, _, hi, ok := deltaShape(delta); ok && hi <= len(base) {
		dst = slices.Grow(dst, size)
	}
	return applyDeltaAt(dst, base, 0, len(base), delta)
}

// applyDeltaAt is ApplyDelta against a base of total bytes of which base
// holds those from origin on: enough for every copy of delta.
func applyDeltaAt(dst, base []byte, origin, total int, delta []byte) ([]byte, error) {
	p := 0 // where the previous copy ended in the base
	start := len(dst)
	for i := 0; i < len(delta); {
		t, n := binary.Uvarint(delta[i:])
		if n <= 0 {
			return dst, fmt.Errorf("%w: bad op at byte %d", ErrBadDelta, i)
		}
		at := i
		i += n
		ln := t >> 1
		if ln == 0 || ln > MaxDeltaOutput || uint64(len(dst)-start)+ln > MaxDeltaOutput {
			return dst, fmt.Errorf("%w: op at byte %d has length %d", ErrBadDelta, at, ln)
		}
		if t&1 == 0 {
			if ln > uint64(len(delta)-i) {
				return dst, fmt.Errorf("%w: insert at byte %d of %d bytes runs past the delta's end", ErrBadDelta, at, ln)
			}
			dst = append(dst, delta[i:i+int(ln)]...)
			i += int(ln)
			continue
		}
		d, n := binary.Varint(delta[i:])
		if n <= 0 {
			return dst, fmt.Errorf("%w: copy at byte %d has no offset", ErrBadDelta, at)
		}
		i += n
		off := int64(p) + d
		if off < 0 || off > int64(total) || ln > uint64(int64(total)-off) {
			return dst, fmt.Errorf("%w: copy at byte %d of %d bytes from offset %d is outside the base's %d bytes", ErrBadDelta, at, ln, off, total)
		}
		rel := off - int64(origin)
		if rel < 0 || rel+int64(ln) > int64(len(base)) {
			return dst, fmt.Errorf("%w: copy at byte %d of %d bytes from offset %d is outside the %d bytes at hand from %d", ErrBadDelta, at, ln, off, len(base), origin)
		}
		dst = append(dst, base[rel:rel+int64(ln)]...)
		p = int(off) + int(ln)
	}
	return dst, nil
}

// DeltaCopies reports whether delta copies anything from its base: a
// delta that only inserts is a whole frame, which a reader can rebuild
// without the base. A delta that does not decode counts as copying (let
// ApplyDelta say what is wrong).
func DeltaCopies(delta []byte) bool {
	_, lo, _, ok := deltaShape(delta)
	return !ok || lo >= 0
}

// deltaShape returns how many bytes a delta builds and the bytes of the
// base its copies read, lo to hi (-1 and -1 when it copies nothing); ok
// false when it does not decode (ApplyDelta says why).
func deltaShape(delta []byte) (size, lo, hi int, ok bool) {
	lo, hi = -1, -1
	p := int64(0)
	for i := 0; i < len(delta); {
		t, n := binary.Uvarint(delta[i:])
		if n <= 0 {
			return 0, -1, -1, false
		}
		i += n
		ln := t >> 1
		if ln > MaxDeltaOutput || uint64(size)+ln > MaxDeltaOutput {
			return 0, -1, -1, false
		}
		size += int(ln)
		if t&1 == 0 {
			if ln > uint64(len(delta)-i) {
				return 0, -1, -1, false
			}
			i += int(ln)
			continue
		}
		d, n := binary.Varint(delta[i:])
		if n <= 0 {
			return 0, -1, -1, false
		}
		i += n
		off := p + d
		end := off + int64(ln)
		if off < 0 || end > 1<<40 {
			return 0, -1, -1, false
		}
		if lo < 0 || off < int64(lo) {
			lo = int(off)
		}
		hi = max(hi, int(end))
		p = end
	}
	return size, lo, hi, true
}

// minMatch is the shortest copy a DeltaEncoder writes: a copy's op costs
// 2 to 6 bytes, and a short one often matches by chance.
const minMatch = 8

// hashBits sizes a DeltaEncoder's table over the base.
const hashBits = 13

// DeltaEncoder writes deltas (see [ApplyDelta]): an LZ77 matcher whose
// dictionary is the base, with a hash table of its 4-byte sequences, as
// LZ4 with an external dictionary. Before hashing it tries the base at
// the place the last copy suggests, which finds the rest of an object
// after a changed field at once. Its zero value is ready; it keeps its
// table between calls. Not safe for concurrent use.
type DeltaEncoder struct {
	table [1 << hashBits]int32 // base offset + 1; 0: none
}

func hash4(b []byte, i int) uint32 {
	return binary.LittleEndian.Uint32(b[i:]) * 2654435761 >> (32 - hashBits)
}

// matchLen returns how many bytes a and b share from their starts.
func matchLen(a, b []byte) int {
	n := 0
	for len(a) >= 8 && len(b) >= 8 {
		x := binary.LittleEndian.Uint64(a) ^ binary.LittleEndian.Uint64(b)
		if x != 0 {
			return n + bits.TrailingZeros64(x)>>3
		}
		n += 8
		a, b = a[8:], b[8:]
	}
	for len(a) > 0 && len(b) > 0 && a[0] == b[0] {
		n++
		a, b = a[1:], b[1:]
	}
	return n
}

// Append appends to dst a delta that rebuilds target from base.
func (e *DeltaEncoder) Append(dst, base, target []byte) []byte {
	return e.AppendRange(dst, base, 0, len(base), target)
}

// AppendRange appends to dst a delta that rebuilds target from base,
// copying only from base[lo:hi] (a list's item within the whole list):
// the delta's offsets are base's.
func (e *DeltaEncoder) AppendRange(dst, base []byte, lo, hi int, target []byte) []byte {
	return e.AppendRangeAt(dst, base, 0, lo, hi, target)
}

// AppendRangeAt is AppendRange with base holding the frame's bytes from
// origin on (those of a PackedFrame's Range): lo, hi and the delta's
// offsets are the frame's.
func (e *DeltaEncoder) AppendRangeAt(dst, base []byte, origin, lo, hi int, target []byte) []byte {
	lo, hi = lo-origin, hi-origin
	clear(e.table[:])
	for i := lo; i+4 <= hi; i++ {
		e.table[hash4(base, i)] = int32(i + 1)
	}
	base = base[:hi]
	p := 0      // where the last copy ended in the frame, as ApplyDelta counts
	guess := lo // where the next copy likely starts, before any copy
	lit := 0    // where the pending insert starts in target
	for i := 0; i+minMatch <= len(target); {
		// Candidates: the base where the last copy ended, shifted by what
		// was inserted since (a changed value of the same length), and
		// the hash table's.
		best, bestLen := -1, 0
		if c := guess + (i - lit); c >= lo && c < len(base) {
			if n := matchLen(base[c:], target[i:]); n >= minMatch {
				best, bestLen = c, n
			}
		}
		if bestLen < 64 {
			if c := int(e.table[hash4(target, i)]) - 1; c >= 0 && c != best {
				if n := matchLen(base[c:], target[i:]); n >= minMatch && n > bestLen {
					best, bestLen = c, n
				}
			}
		}
		if best < 0 {
			i++
			continue
		}
		// Extend the match back over the pending insert.
		for i > lit && best > lo && target[i-1] == base[best-1] {
			i, best, bestLen = i-1, best-1, bestLen+1
		}
		dst = appendInsert(dst, target[lit:i])
		dst = binary.AppendUvarint(dst, uint64(bestLen)<<1|1)
		dst = binary.AppendVarint(dst, int64(best+origin-p))
		p = best + origin + bestLen
		guess = best + bestLen
		i += bestLen
		lit = i
	}
	return appendInsert(dst, target[lit:])
}

// appendInsert appends an insert of lit, if not empty.
func appendInsert(dst, lit []byte) []byte {
	if len(lit) == 0 {
		return dst
	}
	dst = binary.AppendUvarint(dst, uint64(len(lit))<<1)
	return append(dst, lit...)
}

// AppendInsertOnly appends a delta that inserts all of target: a frame
// written as a delta that needs no base.
func AppendInsertOnly(dst, target []byte) []byte { return appendInsert(dst, target) }

// FrameExt is what a frame line says beyond a frame's offset and bytes
// (see the cassettes package doc, "Object deltas"): whether a later
// delta may use the frame as its base, and whether the line is itself a
// delta.
type FrameExt struct {
	// Keep says a later frame of the interaction may be a delta against
	// this one.
	Keep bool
	// Shared says a later frame of any interaction may be a delta
	// against this one, any number of them: a list whose items are the
	// versions a watch then sends first. A reader keeps it to the
	// cassette's end.
	Shared bool
	// Delta is set for a delta line: the frame is Delta applied to the
	// frame Base (0-based) of interaction From, or of its own
	// interaction when From is 0.
	Delta bool
	From  int
	Base  int
	Ops   []byte
	// ID and At are a delta line's interaction and offset.
	ID int
	At time.Duration
}

const (
	keepKey, sharedKey         = `,"keep":true`, `,"shared":true`
	fromKey, baseKey, deltaKey = `,"from":`, `,"base":`, `,"delta":"`
	maxDigits                  = 9 // of an interaction or frame number in a delta line
)

// headEnd returns the index in line of the byte after the closing quote
// of a canonical frame line's at value, or -1 if line does not start
// like one.
func headEnd(line []byte) int {
	const prefix, atKey = `{"frame":`, `,"at":"`
	if !bytes.HasPrefix(line, []byte(prefix)) {
		return -1
	}
	i := len(prefix)
	for i < len(line) && line[i] >= '0' && line[i] <= '9' {
		i++
	}
	if !bytes.HasPrefix(line[i:], []byte(atKey)) {
		return -1
	}
	i += len(atKey)
	j := bytes.IndexByte(line[i:], '"')
	if j < 0 {
		return -1
	}
	return i + j + 1
}

// HasFrameExt reports whether line is a frame line as a Writer writes it
// with a keep, shared or delta key: what [CutFrameExt] would find.
func HasFrameExt(line []byte) bool {
	p := headEnd(line)
	if p < 0 {
		return false
	}
	for _, k := range []string{keepKey, sharedKey, fromKey, baseKey} {
		if bytes.HasPrefix(line[p:], []byte(k)) {
			return true
		}
	}
	return false
}

// cutKey removes key from line at p if it is there, shifting the rest in
// place, and reports whether it was.
func cutKey(line []byte, p int, key string) ([]byte, bool) {
	if !bytes.HasPrefix(line[p:], []byte(key)) {
		return line, false
	}
	n := copy(line[p:], line[p+len(key):])
	return line[:p+n], true
}

// number reads the decimal number at the start of b (no leading zero, at
// most maxDigits digits) and returns it and its length, 0 if there is
// none.
func number(b []byte) (int, int) {
	v, i := 0, 0
	for i < len(b) && i < maxDigits && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int(b[i]-'0')
		i++
	}
	if i > 1 && b[0] == '0' {
		return 0, 0
	}
	return v, i
}

// CutFrameExt reads the keep, shared and delta keys of a frame line
// written as a Writer writes it ({"frame":N,"at":"D","keep":true,...},
// {"frame":N,"at":"D","shared":true,...} and
// {"frame":N,"at":"D","keep":true,"from":M,"base":K,"delta":"S"}, keep
// and from optional) and returns the line without the keep and shared
// keys, shifted in place (line must be a private copy). For any other
// line it returns line and a zero FrameExt. err says what is wrong with
// a line that starts as a delta line and is not one.
func CutFrameExt(line []byte) (out []byte, x FrameExt, err error) {
	p := headEnd(line)
	if p < 0 {
		return line, x, nil
	}
	line, x.Keep = cutKey(line, p, keepKey)
	line, x.Shared = cutKey(line, p, sharedKey)
	rest := line[p:]
	if r, ok := bytes.CutPrefix(rest, []byte(fromKey)); ok {
		n := 0
		if x.From, n = number(r); n == 0 || x.From == 0 {
			return line, x, errors.New(`"from" is not an interaction number`)
		}
		if rest = r[n:]; !bytes.HasPrefix(rest, []byte(baseKey)) {
			return line, x, errors.New(`a "from" frame line needs "base" after it, as {"frame":N,"at":"D","from":M,"base":K,"delta":"S"}`)
		}
	}
	rest, ok := bytes.CutPrefix(rest, []byte(baseKey))
	if !ok {
		return line, x, nil
	}
	if x.Shared {
		return line, x, errors.New(`a delta line cannot be "shared"`)
	}
	x.Base, p = number(rest)
	if p == 0 {
		return line, x, errors.New(`"base" is not a frame number`)
	}
	s, ok := bytes.CutPrefix(rest[p:], []byte(deltaKey))
	if !ok || len(s) < 2 || !bytes.HasSuffix(s, []byte(`"}`)) {
		return line, x, errors.New(`a "base" frame line needs "delta" after it, as {"frame":N,"at":"D","base":K,"delta":"S"}`)
	}
	ops, ok := fastBytes(s[:len(s)-2])
	if !ok {
		return line, x, errors.New(`"delta" is not a string in the "bytes" form`)
	}
	id, at, _, _, ok := frameHead(line)
	if !ok {
		return line, x, errors.New(`bad "frame" or "at"`)
	}
	x.Delta, x.Ops, x.ID, x.At = true, ops, id, at
	return line, x, nil
}

// ParseFrameLine parses a frame line read again after a check (see
// [ParseFrameInto]), whole or a delta (see [CutFrameExt]; data is then
// nil), and reports false if it is not one. line must be a private copy.
func ParseFrameLine(line, dst []byte) (id int, at time.Duration, data []byte, x FrameExt, ok bool) {
	line, x, err := CutFrameExt(line)
	if err != nil {
		return 0, 0, nil, x, false
	}
	if x.Delta {
		return x.ID, x.At, nil, x, true
	}
	id, at, data, ok = ParseFrameInto(line, dst)
	return id, at, data, x, ok
}

// AppendDeltaLine appends a delta frame line, newline included: frame at
// of interaction id is ops applied to frame base of interaction from, or
// of its own interaction when from is 0.
func AppendDeltaLine(b []byte, id int, at string, keep bool, from, base int, ops []byte) []byte {
	b = append(b, `{"frame":`...)
	b = strconv.AppendInt(b, int64(id), 10)
	b = append(b, `,"at":"`...)
	b = append(b, at...)
	b = append(b, '"')
	if keep {
		b = append(b, keepKey...)
	}
	if from != 0 {
		b = append(b, fromKey...)
		b = strconv.AppendInt(b, int64(from), 10)
	}
	b = append(b, baseKey...)
	b = strconv.AppendInt(b, int64(base), 10)
	b = append(b, deltaKey[:len(deltaKey)-1]...)
	b = AppendBytesString(b, ops)
	return append(b, '}', '\n')
}

// appendSharedFrameLine appends the line of a whole frame that later
// deltas of any interaction may copy from.
func appendSharedFrameLine(buf []byte, id int, at time.Duration, data []byte) []byte {
	start := len(buf)
	buf = AppendFrameLine(buf, id, at, data, true, false)
	p := start + headEnd(buf[start:])
	buf = append(buf, sharedKey...)
	copy(buf[p+len(sharedKey):], buf[p:len(buf)-len(sharedKey)])
	copy(buf[p:], sharedKey)
	return buf
}

// MaxDeltaChain is how many deltas in a row a DeltaWriter builds on one
// object's versions before it writes the next version whole
// (cassettes.MaxDeltaChain).
const MaxDeltaChain = 32

// DeltaTable is a reader's side of deltas: each open interaction's frame
// count and its kept frames, the bases of later deltas, and the shared
// frames of every interaction, the bases of deltas in later ones. Its
// zero value is ready.
type DeltaTable struct {
	ivs     map[int]*keptIv
	shared  map[FrameID]*PackedFrame // to the end
	scratch []byte                   // a packed frame's chunks, decoded
	// lend rebuilds each frame into rebuilt, which the next call reuses:
	// a borrowing Scanner's frames are valid until its next line.
	lend    bool
	rebuilt []byte
}

// FrameID names frame Frame (0-based) of interaction ID.
type FrameID struct{ ID, Frame int }

type keptIv struct {
	n    int                  // frames read
	kept map[int]*PackedFrame // kept frames by number, until a delta consumes them
	// dict packs its kept frames: made from the first of them, as the
	// versions of a watch's objects are alike.
	dict *PackDict
}

// Frame takes the next frame of interaction id, whose line said x: data
// is its bytes, unless the line is a delta. It returns the frame's bytes
// and, for a delta that copies from a frame of its own interaction, 1 +
// that frame's number (a delta against a shared frame starts a chain as
// a whole frame does: 0).
func (t *DeltaTable) Frame(id int, x FrameExt, data []byte) ([]byte, int, error) {
	if t.ivs == nil {
		t.ivs = map[int]*keptIv{}
	}
	iv := t.ivs[id]
	if iv == nil {
		iv = &keptIv{}
		t.ivs[id] = iv
	}
	ord := iv.n
	iv.n++
	base := 0
	var dst []byte // nil: a new frame
	if t.lend {
		dst = t.rebuilt[:0]
	}
	switch {
	case x.Delta && x.From != 0:
		pf, ok := t.shared[FrameID{x.From, x.Base}]
		if !ok {
			return nil, 0, fmt.Errorf("frame %d of interaction %d is a delta against frame %d of interaction %d, which is not a \"shared\" frame before it", ord, id, x.Base, x.From)
		}
		var err error
		if data, t.scratch, err = pf.ApplyDelta(dst, x.Ops, t.scratch); err != nil {
			return nil, 0, fmt.Errorf("frame %d of interaction %d against frame %d of interaction %d: %v", ord, id, x.Base, x.From, err)
		}
	case x.Delta:
		pf, ok := iv.kept[x.Base]
		switch {
		case ok:
			delete(iv.kept, x.Base)
		case x.Base >= ord:
			return nil, 0, fmt.Errorf("frame %d of interaction %d is a delta against frame %d, which is not before it", ord, id, x.Base)
		default:
			return nil, 0, fmt.Errorf("frame %d of interaction %d is a delta against frame %d, which is not kept (no \"keep\", or already the base of another delta)", ord, id, x.Base)
		}
		var err error
		if data, t.scratch, err = pf.ApplyDelta(dst, x.Ops, t.scratch); err != nil {
			return nil, 0, fmt.Errorf("frame %d of interaction %d against frame %d: %v", ord, id, x.Base, err)
		}
		if DeltaCopies(x.Ops) {
			base = x.Base + 1
		}
	}
	if t.lend && x.Delta {
		t.rebuilt = data
	}
	if x.Keep {
		if iv.kept == nil {
			iv.kept = map[int]*PackedFrame{}
			iv.dict = NewPackDict(data)
		}
		iv.kept[ord] = PackWith(data, iv.dict)
	}
	if x.Shared {
		if t.shared == nil {
			t.shared = map[FrameID]*PackedFrame{}
		}
		t.shared[FrameID{id, ord}] = Pack(data)
	}
	return data, base, nil
}

// End frees interaction id's kept frames (not its shared ones).
func (t *DeltaTable) End(id int) { delete(t.ivs, id) }

// DeltaWriter writes a compressed cassette's watch frames as deltas
// against the previous version of their object (see the cassettes
// package doc, "Object deltas"), and an object's first version in a watch
// as a delta against its item in a list written before: what a
// cassettes.Writer with Deltas uses.
type DeltaWriter struct {
	budget int64 // the most kept and shared bytes
	kept   int64 // bytes of frames marked keep and not yet consumed, and of shared frames
	shared int64 // bytes of shared frames: at most half the budget, or all of it with listsOnly
	// listsOnly writes deltas against lists alone: no frame is kept.
	listsOnly bool
	ivs       map[int]*deltaIv
	// items are the list items written in shared frames, by the key
	// their object has in a watch event (wire.EventKey): the latest
	// list's.
	items   map[string]sharedItem
	enc     DeltaEncoder
	ops     []byte
	scratch []byte // a packed frame's chunks, decoded
}

// sharedItem is an object's item in a shared frame: frame ord of
// interaction id, bytes lo to hi of frame.
type sharedItem struct {
	id, ord, lo, hi int
	frame           *PackedFrame // shared by its items
}

// deltaIv is an interaction's state in a DeltaWriter.
type deltaIv struct {
	n    int                 // frames written
	objs map[string]*keptObj // the kept frame of each object
	// dict packs its kept frames, as a reader's DeltaTable does: made
	// from the first of them.
	dict *PackDict
}

// keptObj is the last version of an object, kept as a base.
type keptObj struct {
	ord   int          // its frame number in the interaction
	depth int          // how many deltas that copy lead to it from a whole frame
	frame *PackedFrame // its bytes, packed
}

// NewDeltaWriter returns a DeltaWriter that keeps at most budget bytes
// of frames for later deltas.
func NewDeltaWriter(budget int64) *DeltaWriter {
	return &DeltaWriter{budget: budget, ivs: map[int]*deltaIv{}, items: map[string]sharedItem{}}
}

// NewListDeltaWriter returns a DeltaWriter that writes a watch event as a
// delta against its object's item in a list before it, and no other
// deltas: it keeps no frame, and at most budget bytes of lists.
func NewListDeltaWriter(budget int64) *DeltaWriter {
	d := NewDeltaWriter(budget)
	d.listsOnly = true
	return d
}

func newDeltaIv(n int) *deltaIv {
	return &deltaIv{n: n, objs: map[string]*keptObj{}}
}

// Frame appends to buf the line of frame data of interaction id at at:
// the whole frame, or a delta against its object's previous version, or
// against its item in a list.
func (d *DeltaWriter) Frame(buf []byte, id int, at time.Duration, data []byte) []byte {
	iv := d.ivs[id]
	if iv == nil {
		iv = newDeltaIv(0)
		d.ivs[id] = iv
	}
	ord := iv.n
	iv.n++
	typ, key, ok := wire.EventKey(data)
	if !ok {
		return d.list(buf, id, ord, at, data)
	}
	if key == "" {
		return AppendFrameLine(buf, id, at, data, true, false)
	}
	prev := iv.objs[key]
	if prev != nil {
		d.kept -= int64(prev.frame.Len())
		delete(iv.objs, key)
	}
	keep := !d.listsOnly && typ != "DELETED" && d.kept+int64(len(data)) <= d.budget
	depth := 0
	switch {
	case prev != nil:
		// A delta, even one that only inserts (the chain's end, or a
		// frame with nothing in common with its base): it consumes the
		// base, which a reader then frees.
		ops := d.ops[:0]
		if prev.depth+1 < MaxDeltaChain {
			base, _, err := prev.frame.Range(d.scratch[:0], 0, prev.frame.Len())
			d.scratch = base
			if err == nil {
				ops = d.enc.Append(ops, base, data)
				depth = prev.depth + 1
			}
		}
		if depth == 0 || len(ops) >= len(data) {
			ops, depth = AppendInsertOnly(ops[:0], data), 0
		}
		d.ops = ops
		buf = AppendDeltaLine(buf, id, at.String(), keep, 0, prev.ord, ops)
	default:
		// No earlier version kept in this watch (its first, or the
		// budget was spent): against its item in the latest list, if
		// there is one and that saves bytes.
		if it, ok := d.items[itemKey(key, data)]; ok {
			base, origin, err := it.frame.Range(d.scratch[:0], it.lo, it.hi)
			d.scratch = base
			ops := d.ops[:0]
			if err == nil {
				ops = d.enc.AppendRangeAt(ops, base, origin, it.lo, it.hi, data)
			}
			d.ops = ops
			if err == nil && len(ops)*crossDiv < len(data) {
				depth = 1
				buf = AppendDeltaLine(buf, id, at.String(), keep, it.id, it.ord, ops)
				break
			}
		}
		buf = AppendFrameLine(buf, id, at, data, true, keep)
	}
	if keep {
		if iv.dict == nil {
			iv.dict = NewPackDict(data)
		}
		iv.objs[key] = &keptObj{ord: ord, depth: depth, frame: PackWith(data, iv.dict)}
		d.kept += int64(len(data))
	}
	return buf
}

// crossDiv: a delta against a list's item is written only when it is
// smaller than 1/crossDiv of the frame.
const crossDiv = 2

// itemKey is the key of a watch event's object among list items (see
// wire.ListItemKeys): its EventKey key, or a Table-form row's uid.
func itemKey(key string, data []byte) string {
	if strings.HasPrefix(key, "Table/") {
		return wire.TableItemKey(data)
	}
	return key
}

// list appends the line of a frame that is not a watch event: shared,
// with its items noted, if it is a list with items and the budget has
// room for it (shared frames take at most half of it, so that object
// deltas keep the rest; all of it with lists only), else whole. A shared frame stays in the budget
// to the end, as a reader keeps it.
func (d *DeltaWriter) list(buf []byte, id, ord int, at time.Duration, data []byte) []byte {
	most := d.budget / 2
	if d.listsOnly {
		most = d.budget
	}
	if n := int64(len(data)); d.kept+n > d.budget || d.shared+n > most {
		return AppendFrameLine(buf, id, at, data, true, false)
	}
	keys, items := wire.ListItemKeys(data)
	if len(items) == 0 {
		return AppendFrameLine(buf, id, at, data, true, false)
	}
	// Counted whole, as the budget is what a reader may hold whole
	// (one that does not pack).
	pf := Pack(data)
	d.kept += int64(len(data))
	d.shared += int64(len(data))
	for k, key := range keys {
		d.items[key] = sharedItem{id: id, ord: ord, lo: items[k][0], hi: items[k][1], frame: pf}
	}
	return appendSharedFrameLine(buf, id, at, data)
}

// Resume goes on with interaction id after n of its frames were written
// elsewhere: none of them is kept, so the next frame of each object is
// written whole.
func (d *DeltaWriter) Resume(id, n int) {
	d.ivs[id] = newDeltaIv(n)
}

// End frees interaction id's kept frames.
func (d *DeltaWriter) End(id int) {
	if iv := d.ivs[id]; iv != nil {
		for _, o := range iv.objs {
			d.kept -= int64(o.frame.Len())
		}
		delete(d.ivs, id)
	}
}

// Line returns the line (newline included) to write for a whole text
// line: a frame as a Writer writes it goes through d, an end line frees
// its interaction, any other line is counted and passes as it is.
func (d *DeltaWriter) Line(line, buf, tmp []byte) (out, buf2, tmp2 []byte) {
	body := line[:len(line)-1]
	id, ok := FrameLineID(body)
	if !ok {
		if id, ok := EndLineID(body); ok {
			d.End(id)
		}
		return line, buf, tmp
	}
	tmp = append(tmp[:0], body...)
	_, at, data, ok := ParseCanonical(tmp, CheckNone)
	if ok {
		buf = AppendFrameLine(buf[:0], id, at, data, true, false)
		ok = bytes.Equal(buf, line)
	}
	if !ok {
		// Not as a Writer writes it: kept as it is, and counted.
		if iv := d.ivs[id]; iv != nil {
			iv.n++
		} else {
			d.ivs[id] = newDeltaIv(1)
		}
		return line, buf, tmp
	}
	buf = d.Frame(buf[:0], id, at, data)
	return buf, buf, tmp
}

// FrameLineID returns the interaction of a frame line, in any spelling.
func FrameLineID(line []byte) (int, bool) {
	if id, ok := canonicalID(line, `{"frame":`); ok {
		return id, true
	}
	if !bytes.Contains(line, []byte(`"frame"`)) {
		return 0, false
	}
	id, _, _, ok := ParseFrame(slices.Clone(bytes.TrimSpace(line)))
	return id, ok
}

// EndLineID returns the interaction of an end line as a Writer writes it.
func EndLineID(line []byte) (int, bool) { return canonicalID(line, `{"end":`) }

// canonicalID reads the number after prefix at the start of line.
func canonicalID(line []byte, prefix string) (int, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(prefix))
	if !ok {
		return 0, false
	}
	id, i := 0, 0
	for ; i < len(rest) && i < 9 && rest[i] >= '0' && rest[i] <= '9'; i++ {
		id = id*10 + int(rest[i]-'0')
	}
	return id, i > 0 && i < len(rest) && rest[i] == ','
}
