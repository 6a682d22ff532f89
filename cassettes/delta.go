package cassettes

import (
	"bufio"
	"bytes"
	"io"
	"slices"

	"github.com/kwrec/kwrec/internal/cassettefile"
	"github.com/kwrec/kwrec/internal/wire"
)

// DefaultDeltaBudget is how many bytes of frames a reader of a compressed
// cassette may have to keep for later deltas (see the package doc, "Object
// deltas") when [WriterOptions.DeltaBudget] is zero.
const DefaultDeltaBudget = 64 << 20

// MaxDeltaChain is how many deltas in a row a Writer builds on one
// object's versions before it writes the next version whole: a random
// read of one frame rebuilds at most this many frames.
const MaxDeltaChain = 32

// deltaWriter writes a compressed cassette's watch frames as deltas
// against the previous version of their object (see the package doc).
type deltaWriter struct {
	budget int64 // the most kept bytes
	kept   int64 // bytes of frames marked keep and not yet consumed
	ivs    map[int]*deltaIv
	enc    cassettefile.DeltaEncoder
	ops    []byte
}

// deltaIv is an interaction's state in a deltaWriter.
type deltaIv struct {
	n    int                 // frames written
	objs map[string]*keptObj // the kept frame of each object
}

// keptObj is the last version of an object, kept as a base.
type keptObj struct {
	ord   int    // its frame number in the interaction
	depth int    // how many deltas that copy lead to it from a whole frame
	data  []byte // its bytes (the writer's copy)
}

func newDeltaWriter(budget int64) *deltaWriter {
	return &deltaWriter{budget: budget, ivs: map[int]*deltaIv{}}
}

// frame appends to buf the line of frame f of interaction id: the whole
// frame, or a delta against its object's previous version.
func (d *deltaWriter) frame(buf []byte, id int, f Frame) []byte {
	iv := d.ivs[id]
	if iv == nil {
		iv = &deltaIv{objs: map[string]*keptObj{}}
		d.ivs[id] = iv
	}
	ord := iv.n
	iv.n++
	typ, key, ok := wire.EventKey(f.Data)
	if !ok || key == "" {
		return appendFrame(buf, id, f, true, false)
	}
	prev := iv.objs[key]
	if prev != nil {
		d.kept -= int64(len(prev.data))
		delete(iv.objs, key)
	}
	keep := typ != "DELETED" && d.kept+int64(len(f.Data)) <= d.budget
	depth := 0
	if prev == nil {
		buf = appendFrame(buf, id, f, true, keep)
	} else {
		// A delta, even one that only inserts (the chain's end, or a
		// frame with nothing in common with its base): it consumes the
		// base, which a reader then frees.
		ops := d.ops[:0]
		if prev.depth+1 < MaxDeltaChain {
			ops = d.enc.Append(ops, prev.data, f.Data)
			depth = prev.depth + 1
		}
		if depth == 0 || len(ops) >= len(f.Data) {
			ops, depth = cassettefile.AppendInsertOnly(ops[:0], f.Data), 0
		}
		d.ops = ops
		buf = cassettefile.AppendDeltaLine(buf, id, f.At.String(), keep, prev.ord, ops)
	}
	if keep {
		o := prev
		if o == nil {
			o = &keptObj{}
		}
		o.ord, o.depth, o.data = ord, depth, append(o.data[:0], f.Data...)
		iv.objs[key] = o
		d.kept += int64(len(o.data))
	}
	return buf
}

// end frees interaction id's kept frames.
func (d *deltaWriter) end(id int) {
	if iv := d.ivs[id]; iv != nil {
		for _, o := range iv.objs {
			d.kept -= int64(len(o.data))
		}
		delete(d.ivs, id)
	}
}

// decodeLine parses a non-header line as decodeEntry does, frame lines
// with their keep and delta keys, which it returns in r.ext.
func (r *Reader) decodeLine(line []byte) (Entry, *ParseError) {
	line, x, err := cassettefile.CutFrameExt(line)
	r.ext = x
	n := r.sc.LineNo()
	if err != nil {
		return Entry{}, lineError(n, "bad delta frame line: %v (a delta line is read only as a Writer writes it)", err)
	}
	if x.Delta {
		return Entry{Line: n, ID: x.ID, Frame: &Frame{At: x.At}}, nil
	}
	return decodeEntry(n, line, r.sc.Check())
}

// check validates e against the entries before it, then rebuilds a delta
// frame from its base and keeps what later deltas need.
func (r *Reader) check(e *Entry) error {
	if err := r.validate(e); err != nil {
		return err
	}
	switch {
	case e.Frame != nil:
		data, err := r.sc.Frame(e.ID, r.ext, e.Frame.Data)
		if err != nil {
			return r.bad("%v", err)
		}
		e.Frame.Data = data
	case e.End != nil:
		r.sc.End(e.ID)
	}
	return nil
}

// deltaFilter passes a cassette's text through with its seek comments
// dropped and its frames whole: a delta rebuilt and written as the Writer
// writes that frame, the keep key removed. What it cannot rebuild passes
// as it is, for a reader to report.
type deltaFilter struct {
	pieceReader // of next
	br          *bufio.Reader
	t           cassettefile.DeltaTable
	line        []byte
	deltas      bool // a frame line with a delta or kept for one was read
}

func newDeltaFilter(r io.Reader) *deltaFilter {
	f := &deltaFilter{br: bufio.NewReaderSize(newSeekFilter(r), 64<<10)}
	f.more = f.next
	return f
}

// next returns the next line, newline included, whole frames.
func (f *deltaFilter) next() ([]byte, error) {
	line, err := readWholeLine(f.br, f.line[:0])
	f.line = line
	body, nl := bytes.CutSuffix(line, []byte("\n"))
	if !nl && err == nil {
		return line, nil
	}
	out, ok := f.frame(body)
	if !ok {
		return line, err
	}
	if nl {
		out = append(out, '\n')
	}
	return out, err
}

// frame returns line (without its newline) with its frame whole, and
// false if the line is not a frame line or not one to rewrite.
func (f *deltaFilter) frame(line []byte) ([]byte, bool) {
	id, ok := frameID(line)
	if !ok {
		if id, ok := endID(line); ok {
			f.t.End(id)
		}
		return nil, false
	}
	if !cassettefile.HasFrameExt(line) {
		// Counted; kept by nobody.
		_, _, _ = f.t.Frame(id, cassettefile.FrameExt{}, nil)
		return nil, false
	}
	f.deltas = true
	cut, x, err := cassettefile.CutFrameExt(slices.Clone(line))
	if err != nil {
		_, _, _ = f.t.Frame(id, cassettefile.FrameExt{}, nil) // counted
		return nil, false
	}
	var data []byte
	if !x.Delta {
		_, _, data, ok = cassettefile.ParseFrame(slices.Clone(cut))
		if !ok {
			_, _, _ = f.t.Frame(id, cassettefile.FrameExt{}, nil) // counted
			return nil, false
		}
		if _, _, err := f.t.Frame(id, x, data); err != nil {
			return nil, false
		}
		return cut, true
	}
	if data, _, err = f.t.Frame(id, x, nil); err != nil {
		return nil, false
	}
	out := appendFrame(nil, x.ID, Frame{At: x.At, Data: data}, true, false)
	return out[:len(out)-1], true
}

// frameID returns the interaction of a frame line, in any spelling.
func frameID(line []byte) (int, bool) {
	if id, ok := canonicalID(line, `{"frame":`); ok {
		return id, true
	}
	if !bytes.Contains(line, []byte(`"frame"`)) {
		return 0, false
	}
	id, _, _, ok := cassettefile.ParseFrame(slices.Clone(bytes.TrimSpace(line)))
	return id, ok
}

// endID returns the interaction of an end line as a Writer writes it.
func endID(line []byte) (int, bool) { return canonicalID(line, `{"end":`) }

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

// readWholeLine appends the next line of br to buf, newline included if
// there is one.
func readWholeLine(br *bufio.Reader, buf []byte) ([]byte, error) {
	for {
		frag, err := br.ReadSlice('\n')
		buf = append(buf, frag...)
		if err != bufio.ErrBufferFull {
			return buf, err
		}
	}
}

// compressText writes the text src to s with every frame whole, or with
// deltas where they can be (frames as a Writer writes them).
func compressText(s *segmenter, src io.Reader, deltas bool) error {
	f := newDeltaFilter(src)
	var d *deltaWriter
	if deltas {
		d = newDeltaWriter(DefaultDeltaBudget)
	}
	var buf, tmp []byte
	for {
		line, err := f.next()
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 {
			out := line
			if d != nil && bytes.HasSuffix(line, []byte("\n")) {
				out, buf, tmp = d.line(line, buf, tmp)
			}
			if werr := s.write(out); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
	}
}

// line returns the line (newline included) to write for a whole text
// line: a frame as a Writer writes it goes through d, an end line frees
// its interaction, any other line is counted and passes as it is.
func (d *deltaWriter) line(line, buf, tmp []byte) (out, buf2, tmp2 []byte) {
	body := line[:len(line)-1]
	id, ok := frameID(body)
	if !ok {
		if id, ok := endID(body); ok {
			d.end(id)
		}
		return line, buf, tmp
	}
	tmp = append(tmp[:0], body...)
	_, at, data, ok := cassettefile.ParseCanonical(tmp, cassettefile.CheckNone)
	if ok {
		buf = appendFrame(buf[:0], id, Frame{At: at, Data: data}, true, false)
		ok = bytes.Equal(buf, line)
	}
	if !ok {
		// Not as a Writer writes it: kept as it is, and counted.
		if iv := d.ivs[id]; iv != nil {
			iv.n++
		} else {
			d.ivs[id] = &deltaIv{n: 1, objs: map[string]*keptObj{}}
		}
		return line, buf, tmp
	}
	buf = d.frame(buf[:0], id, Frame{At: at, Data: data})
	return buf, buf, tmp
}
