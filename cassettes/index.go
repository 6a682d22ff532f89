package cassettes

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Index is a cassette's structure without its frame bytes: what replay
// needs to match requests and pace frames, in memory, with the frames
// themselves left in the file and read back on demand. It holds about 50
// bytes per frame, so a 100k-event watch takes a few megabytes whatever
// its frames weigh.
//
// Reading a frame of a plain-text cassette is one positioned read. In the
// compressed form it decodes from the nearest seek comment before the
// frame (see the package doc), at most a segment of text
// ([DefaultSegmentSize]); reading an interaction's frames in order with
// [Index.Frames] decodes each segment once. A compressed cassette without
// seek comments (one zstd frame: written with a negative
// [WriterOptions.SegmentSize], by another tool, or by a kwrec before seek
// comments) is read from its start each time a reader starts: correct,
// only slower.
//
// The file must not change while the index is open. Each frame read is
// checked against the index: its line must still be where it was, as
// long, and a frame of the same interaction at the same offset, else the
// read fails with [ErrModified]. (Its JSON is not validated again: a
// change within a frame that keeps all of that reads as changed.)
//
// Frames, ReadFrames and FrameReaders are safe for concurrent use.
type Index struct {
	Header Header
	// Interactions are as [Read] returns them, except every Frame has
	// Data == nil (At is set): the bytes stay in the file; read them with
	// [Index.Frames] or [Index.ReadFrames].
	Interactions []*Interaction

	file       *os.File
	name       string
	compressed bool
	seeks      []seekState  // in text order
	locs       [][]frameLoc // locs[k][i]: frame i of Interactions[k]
	closed     atomic.Bool
}

// frameLoc is where a frame's line is in the text form.
type frameLoc struct {
	off  int64 // the line's text byte offset
	n    int32 // its length without the newline
	line int32 // its 1-based line number, 0 past math.MaxInt32
}

// seekState is a seek point and whether it has been checked against the
// file: its comment is only a claim until the bytes at its offset decode
// to that comment.
type seekState struct {
	seekPoint
	state atomic.Int32 // seekUnknown, seekGood or seekBad
}

const (
	seekUnknown int32 = iota
	seekGood
	seekBad
)

// IndexOptions configure [OpenIndex]. The zero value indexes without
// looking at frame bytes.
type IndexOptions struct {
	// Visit, if not nil, is called once per frame during OpenIndex's
	// single pass, in file order, with the frame's bytes (valid only
	// during the call): a caller that needs something from every frame
	// (a resourceVersion, a size) gets it without a second pass. in is the
	// *Interaction that ends up in [Index.Interactions], with Request and
	// Response set and Frames up to this one (Data nil); i is the frame's
	// 0-based number in in. A
	// non-nil error stops OpenIndex, which returns it.
	Visit func(in *Interaction, i int, f Frame) error
}

// OpenIndex reads the cassette file path, compressed or plain, in one
// streaming pass and returns its [Index]; Close it when done. It checks
// the cassette as [Load] does and fails with the same errors, except that
// a JSON frame is checked for being one whole value, not for being valid
// JSON, and in a compressed file (whose zstd checksums prove its bytes) not
// at all: [Load] and kwrec lint check every frame. On an error
// wrapping [ErrTruncated] it returns the index of everything before the
// cut and the error, as [Read] does.
func OpenIndex(path string, opts IndexOptions) (*Index, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	x, err := indexFile(f, path, opts)
	if x == nil {
		f.Close()
	}
	return x, err
}

func indexFile(f *os.File, path string, opts IndexOptions) (*Index, error) {
	rd, err := NewReader(f, path)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	// An index needs each frame's bounds, not a proof that it is JSON:
	// kwrec's writer only stores valid JSON frames, lint checks every one,
	// and a compressed file's zstd checksums already prove its bytes are
	// the ones written, so only a plain (hand-editable) file's frames are
	// checked, and only for being whole values. This is most of what
	// makes an open as fast as decompression.
	rd.check = checkBounds
	if rd.dec != nil {
		rd.check = checkNone
	}
	x := &Index{Header: rd.Header(), file: f, name: path, compressed: rd.dec != nil}
	byID := map[int]int{} // interaction ID -> its position in x.Interactions
	for {
		e, err := rd.Next()
		if err != nil && err != io.EOF && !errors.Is(err, ErrTruncated) {
			return nil, err
		}
		if err != nil {
			x.finish(rd.seeks)
			if err == io.EOF {
				err = nil
			}
			return x, err
		}
		switch {
		case e.Request != nil:
			byID[e.ID] = len(x.Interactions)
			x.Interactions = append(x.Interactions, &Interaction{ID: e.ID, At: e.At, Request: *e.Request})
			x.locs = append(x.locs, nil)
		case e.Response != nil:
			x.Interactions[byID[e.ID]].Response = e.Response
		case e.Frame != nil:
			k := byID[e.ID]
			in := x.Interactions[k]
			i := len(in.Frames)
			in.Frames = append(in.Frames, Frame{At: e.Frame.At})
			line := int32(0)
			if e.Line <= math.MaxInt32 {
				line = int32(e.Line)
			}
			x.locs[k] = append(x.locs[k], frameLoc{off: rd.lineOff, n: int32(rd.lineLen), line: line})
			if opts.Visit != nil {
				if err := opts.Visit(in, i, *e.Frame); err != nil {
					return nil, err
				}
			}
		case e.End != nil:
			x.Interactions[byID[e.ID]].End = e.End
		}
	}
}

// finish trims what append over-allocated and keeps the seek points.
func (x *Index) finish(seeks []seekPoint) {
	for k, in := range x.Interactions {
		if n := len(in.Frames); cap(in.Frames)-n > n/8 {
			in.Frames = slices.Clone(in.Frames)
			x.locs[k] = slices.Clone(x.locs[k])
		}
	}
	x.seeks = make([]seekState, len(seeks))
	for i, p := range seeks {
		x.seeks[i].seekPoint = p
	}
}

// Close closes the cassette file. Readers still open fail from then on.
func (x *Index) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	return x.file.Close()
}

// FrameRef names frame I (0-based) of interaction In.
type FrameRef struct {
	In *Interaction
	I  int
}

// locate returns the frame locations of in, which must be one of
// x.Interactions.
func (x *Index) locate(in *Interaction) ([]frameLoc, error) {
	if in != nil {
		k := sort.Search(len(x.Interactions), func(k int) bool { return x.Interactions[k].ID >= in.ID })
		if k < len(x.Interactions) && x.Interactions[k] == in {
			return x.locs[k][:min(len(x.locs[k]), len(in.Frames))], nil
		}
	}
	return nil, fmt.Errorf("cassette: %s: the interaction is not one of this index's Interactions", x.name)
}

func frameRangeError(in *Interaction, i, n int) error {
	return fmt.Errorf("cassette: interaction %d has no frame %d; it has %d (numbered from 0)", in.ID, i, n)
}

// Frames returns a reader of in's frames, from frame from (0-based) on,
// in order. in must be one of x.Interactions; from may be len(in.Frames)
// (the reader is then at its end). Close the reader when done.
func (x *Index) Frames(in *Interaction, from int) (*FrameReader, error) {
	locs, err := x.locate(in)
	if err != nil {
		return nil, err
	}
	if from < 0 || from > len(locs) {
		return nil, frameRangeError(in, from, len(locs))
	}
	return &FrameReader{in: in, locs: locs, i: from, c: cursor{x: x, pos: -1}}, nil
}

// FrameReader reads an interaction's frames from an [Index]'s file, one
// at a time; see [Index.Frames]. It holds at most one zstd decoder and a
// small buffer, released by Close. It is safe for concurrent use.
type FrameReader struct {
	mu     sync.Mutex
	in     *Interaction
	locs   []frameLoc
	i      int // the next frame
	c      cursor
	err    error
	closed bool
}

// Next returns the next frame, or io.EOF after the last. Its Data is the
// caller's: it is not reused. After an error every call returns it.
func (fr *FrameReader) Next() (Frame, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	switch {
	case fr.closed:
		return Frame{}, errors.New("cassette: frame reader is closed")
	case fr.err != nil:
		return Frame{}, fr.err
	case fr.i >= len(fr.locs):
		return Frame{}, io.EOF
	}
	f, err := fr.c.frame(fr.in, fr.in.Frames[fr.i].At, fr.locs[fr.i], nil)
	if err != nil {
		fr.err = err
		fr.c.close()
		return Frame{}, err
	}
	fr.i++
	return f, nil
}

// Close releases the reader's decoder and buffer.
func (fr *FrameReader) Close() error {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	fr.closed = true
	fr.c.close()
	return nil
}

// ReadFrames reads the frames refs name, in file order with one forward
// pass, and calls fn(k, f) with each ref's index k in refs. f.Data is
// valid only during the call. An error from fn stops ReadFrames, which
// returns it. No frame is read if a ref does not name a frame of x.
func (x *Index) ReadFrames(refs []FrameRef, fn func(k int, f Frame) error) error {
	locs := make([]frameLoc, len(refs))
	for k, r := range refs {
		l, err := x.locate(r.In)
		if err != nil {
			return err
		}
		if r.I < 0 || r.I >= len(l) {
			return frameRangeError(r.In, r.I, len(l))
		}
		locs[k] = l[r.I]
	}
	order := make([]int, len(refs))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return locs[order[a]].off < locs[order[b]].off })
	c := cursor{x: x, pos: -1}
	defer c.close()
	var buf []byte
	for _, k := range order {
		r := refs[k]
		if int64(cap(buf)) < int64(locs[k].n) {
			buf = make([]byte, locs[k].n)
		}
		f, err := c.frame(r.In, r.In.Frames[r.I].At, locs[k], buf)
		if err != nil {
			return err
		}
		if err := fn(k, f); err != nil {
			return err
		}
	}
	return nil
}

// plainJump is how far ahead a cursor reads on instead of starting a new
// read (a plain-text cassette) or decoding from a later seek point (the
// compressed form).
const plainJump = 1 << 20

// cursor reads lines of an index's text form at recorded offsets, moving
// forward through the file when it can.
type cursor struct {
	x    *Index
	pos  int64         // text offset of br's next byte; -1: not started
	br   *bufio.Reader // the text; nil: not positioned
	text *bufio.Reader // the text decoded by dec, kept for reuse
	in   *bufio.Reader // the compressed bytes, into dec
	dec  *zstd.Decoder
}

func (c *cursor) close() {
	if c.dec != nil {
		c.dec.Close()
		c.dec = nil
	}
	c.br, c.text, c.in, c.pos = nil, nil, nil, -1
}

// frame reads the line at loc, which must decode to a frame of in at
// offset at. buf, if not nil, holds the line (else a new one is made).
func (c *cursor) frame(in *Interaction, at time.Duration, loc frameLoc, buf []byte) (Frame, error) {
	if err := c.seek(loc.off); err != nil {
		return Frame{}, c.fail(loc, err)
	}
	if buf == nil {
		buf = make([]byte, loc.n)
	}
	buf = buf[:loc.n]
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return Frame{}, c.fail(loc, err)
	}
	c.pos += int64(loc.n)
	switch b, err := c.br.ReadByte(); {
	case err == nil && b != '\n':
		return Frame{}, c.fail(loc, nil)
	case err == nil:
		c.pos++
	case err != io.EOF: // a plain-text cassette's last line has no newline
		return Frame{}, c.fail(loc, err)
	}
	t := bytes.TrimSpace(buf)
	e, ok := jsonFrameLine(int(loc.line), t, checkNone)
	if !ok {
		var perr *ParseError
		if e, perr = decodeEntry(int(loc.line), t, checkNone); perr != nil {
			return Frame{}, c.fail(loc, nil)
		}
	}
	if e.Frame == nil || e.ID != in.ID || e.Frame.At != at {
		return Frame{}, c.fail(loc, nil)
	}
	return *e.Frame, nil
}

// fail turns a failure to read the frame at loc into the error to return:
// an error of the file itself (closed, unreadable) as it is, anything
// else (a line that is not the frame, the file ending early, zstd data
// that no longer decodes) as ErrModified. The cursor starts over next time.
func (c *cursor) fail(loc frameLoc, err error) error {
	c.close()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", c.x.name, pe.Err)
	}
	return &ParseError{File: c.x.name, Line: int(loc.line), Offset: -1, Err: ErrModified,
		Msg: "the cassette changed since it was indexed; reopen it"}
}

// seek positions the cursor at text offset off.
func (c *cursor) seek(off int64) error {
	if c.x.compressed {
		if err := c.seekCompressed(off); err != nil {
			return err
		}
	} else if c.br == nil || off < c.pos || off-c.pos > plainJump {
		sr := io.NewSectionReader(c.x.file, off, math.MaxInt64-off)
		if c.br == nil {
			c.br = bufio.NewReaderSize(sr, 64<<10)
		} else {
			c.br.Reset(sr)
		}
		c.pos = off
	}
	n, err := c.br.Discard(int(off - c.pos))
	c.pos += int64(n)
	return err
}

// seekCompressed starts decoding at the last good seek point at or
// before off, unless the decoder is already between it and off.
func (c *cursor) seekCompressed(off int64) error {
	seeks := c.x.seeks
	j := sort.Search(len(seeks), func(j int) bool { return seeks[j].text > off })
	for j--; ; j-- {
		for j >= 0 && seeks[j].state.Load() == seekBad {
			j--
		}
		start := seekPoint{}
		if j >= 0 {
			start = seeks[j].seekPoint
		}
		if c.br != nil && c.pos <= off && (c.pos >= start.text || off-c.pos <= plainJump) {
			return nil // decoding on is less work than starting over
		}
		ok, err := c.start(start, j >= 0)
		if err != nil || j < 0 {
			return err
		}
		if ok {
			seeks[j].state.Store(seekGood)
			return nil
		}
		seeks[j].state.Store(seekBad)
	}
}

// start starts decoding at p and, if check is set, reports whether the
// bytes there are what p claims: zstd's magic, decoding to p's own seek
// comment. The file start needs no check.
func (c *cursor) start(p seekPoint, check bool) (bool, error) {
	c.br, c.pos = nil, -1
	if check {
		var magic [4]byte
		if _, err := c.x.file.ReadAt(magic[:], p.zstd); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return false, err
			}
			return false, nil // past the end: a claim about another file
		}
		if !bytes.Equal(magic[:], zstdMagic) {
			return false, nil
		}
	}
	sr := io.NewSectionReader(c.x.file, p.zstd, math.MaxInt64-p.zstd)
	if c.in == nil {
		c.in = bufio.NewReaderSize(sr, 64<<10)
	} else {
		c.in.Reset(sr)
	}
	if c.dec == nil {
		dec, err := newDecoder(c.in)
		if err != nil {
			return false, nil
		}
		c.dec = dec
	} else if err := c.dec.Reset(c.in); err != nil {
		return false, nil
	}
	if c.text == nil {
		c.text = bufio.NewReaderSize(c.dec, 64<<10)
	} else {
		c.text.Reset(c.dec)
	}
	if check {
		line, err := c.text.ReadSlice('\n')
		if err != nil || !bytes.Equal(line, appendSeekComment(nil, p)) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return false, err
			}
			return false, nil
		}
		p.text += int64(len(line))
	}
	c.br, c.pos = c.text, p.text
	return true, nil
}
