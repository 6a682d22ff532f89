package cassettes

import (
	"bufio"
	"bytes"
	"cmp"
	"io"
	"slices"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// DefaultDeltaBudget is how many bytes of frames a reader of a compressed
// cassette may have to keep for later deltas (see the package doc, "Object
// deltas") when [WriterOptions.DeltaBudget] is zero.
const DefaultDeltaBudget = 64 << 20

// MaxDeltaChain is how many deltas in a row a Writer builds on one
// object's versions before it writes the next version whole: a random
// read of one frame rebuilds at most this many frames.
const MaxDeltaChain = 32

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
	deltas      bool // a frame line with an object delta or kept for one was read
	lists       bool // a frame line with a delta against a list, or a shared list, was read
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
	id, ok := cassettefile.FrameLineID(line)
	if !ok {
		if id, ok := cassettefile.EndLineID(line); ok {
			f.t.End(id)
		}
		return nil, false
	}
	if !cassettefile.HasFrameExt(line) {
		// Counted; kept by nobody.
		_, _, _ = f.t.Frame(id, cassettefile.FrameExt{}, nil)
		return nil, false
	}
	cut, x, err := cassettefile.CutFrameExt(slices.Clone(line))
	if err != nil {
		_, _, _ = f.t.Frame(id, cassettefile.FrameExt{}, nil) // counted
		return nil, false
	}
	f.deltas = f.deltas || x.Keep || x.Delta && x.From == 0
	f.lists = f.lists || x.Shared || x.From != 0
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
	out := cassettefile.AppendFrameLine(nil, x.ID, x.At, data, true, false)
	return out[:len(out)-1], true
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

// newDeltaWriter returns what writes deltas as opts say (a Writer's, or
// compressText's): object deltas, deltas against lists only (within half
// the delta budget), or none (nil).
func newDeltaWriter(opts WriterOptions) *cassettefile.DeltaWriter {
	budget := cmp.Or(opts.DeltaBudget, DefaultDeltaBudget)
	switch {
	case opts.Deltas || opts.Compact:
		return cassettefile.NewDeltaWriter(budget)
	case opts.ListDeltas:
		return cassettefile.NewListDeltaWriter(budget / 2)
	}
	return nil
}

// compressText writes the text src to s with every frame whole, or with
// the deltas d writes where they can be (frames as a Writer writes them).
func compressText(s *segmenter, src io.Reader, d *cassettefile.DeltaWriter) error {
	f := newDeltaFilter(src)
	var buf, tmp []byte
	for {
		line, err := f.next()
		if err != nil && err != io.EOF {
			return err
		}
		if len(line) > 0 {
			out := line
			if d != nil && bytes.HasSuffix(line, []byte("\n")) {
				out, buf, tmp = d.Line(line, buf, tmp)
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
