package index

import (
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

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cassettefile"
)

// ErrModified means a cassette file changed after an [Index] of it was
// made: a frame's line is no longer where the index says it is. Open the
// index again.
var ErrModified = errors.New("cassette changed since it was indexed")

// Index is a cassette's structure without its frame bytes: what replay
// needs to match requests and pace frames, in memory, with the frames
// themselves left in the file and read back on demand. It holds about 24
// bytes per frame, so a 100k-event watch takes a few megabytes whatever
// its frames weigh.
//
// Reading a frame of a plain-text cassette is one positioned read. In the
// compressed form it decodes from the nearest seek comment before the
// frame (see the cassettes package doc), at most a segment of text
// ([cassettes.DefaultSegmentSize]); reading an interaction's frames in
// order with [Index.Frames] decodes each segment once. A compressed
// cassette without seek comments (one zstd frame: written with a negative
// [cassettes.WriterOptions.SegmentSize], by another tool, or by a kwrec
// before seek comments) is read from its start each time a reader starts:
// correct, only slower.
//
// The file must not change while the index is open. Each frame read is
// checked against the index: its line must still be where it was, as
// long, and a frame of the same interaction at the same offset, else the
// read fails with [ErrModified]. (Its JSON is not validated again: a
// change within a frame that keeps all of that reads as changed.)
//
// Frames, ReadFrames and FrameReaders are safe for concurrent use.
type Index struct {
	Header       cassettes.Header
	Interactions []*Interaction // in order, as [cassettes.Load] has them

	// files are the cassette's: one, or a rotated recording's parts in
	// order, which lines reads; frame offsets are in their texts end to
	// end.
	files  []source
	names  []string
	lines  *cassettefile.Lines
	closed atomic.Bool
	// rebuilt counts the delta chains rebuilt from the file (delta.go):
	// what reading in order avoids.
	rebuilt atomic.Int64
	// shared are the list frames that deltas of other interactions
	// copy from, read once (delta.go).
	sharedMu sync.Mutex
	shared   map[cassettefile.FrameID]*cassettefile.PackedFrame
}

// source is what a file's bytes are read from: the file, or the bytes of
// a cassette in memory ([Read]).
type source interface {
	io.Reader
	io.ReaderAt
	io.Closer
}

// Interaction is a recorded interaction without its frame bytes: a
// [cassettes.Interaction] whose frames are only their offsets and where
// their lines are in the file. Read the bytes with [Index.Frames] or
// [Index.ReadFrames].
type Interaction struct {
	// ID numbers interactions from 1 in the order their requests started.
	ID int
	// At is the request's start offset from the cassette start.
	At       time.Duration
	Request  cassettes.Request
	Response *cassettes.Response // nil when the request failed before any response
	Frames   FrameList
	End      *cassettes.End // nil when the cassette was cut before the end was written
	// bases is, for an interaction with a frame that is a delta (see
	// the cassettes package doc, "Object deltas"), 1 + the number of the
	// frame each of its frames copies from, 0 for a whole frame; nil
	// without deltas (delta.go). Written by Open only.
	bases []int32
}

// Frame is one frame of an [Interaction]: its arrival offset and where
// its line is in the cassette's text form.
type Frame struct {
	// At is the frame's arrival offset from the response headers.
	At   time.Duration
	off  int64 // the line's text byte offset
	n    int32 // its length without the newline
	line int32 // its 1-based line number, 0 past math.MaxInt32
}

// Options configure [Open]. The zero value indexes without looking at
// frame bytes.
type Options struct {
	// Visit, if not nil, is called once per frame during Open's single
	// pass, in file order, with the frame's bytes (valid only during the
	// call): a caller that needs something from every frame (a
	// resourceVersion, a size) gets it without a second pass. in is the
	// *Interaction that ends up in [Index.Interactions], with Request and
	// Response set and Frames up to this one; i is the frame's 0-based
	// number in in. A non-nil error stops Open, which returns it.
	Visit func(in *Interaction, i int, f cassettes.Frame) error
}

// Open reads the cassette name names (see [cassettes.Parts]: a file, or a
// rotated recording's parts as one, by a glob pattern or its first part),
// compressed or plain, in one streaming pass and returns its [Index];
// Close it when done. It checks
// the cassette as [cassettes.Load] does and fails with the same errors,
// except that a JSON frame is checked for being one whole value, not for
// being valid JSON, and in a compressed file (whose zstd checksums prove
// its bytes) not at all: Load and kwrec lint check every frame. On an
// error wrapping [cassettes.ErrTruncated] it returns the index of
// everything before the cut and the error, as [cassettes.Read] does.
func Open(name string, opts Options) (*Index, error) {
	paths, err := cassettes.Parts(name)
	if err != nil {
		return nil, err
	}
	x := &Index{names: paths}
	files := make([]cassettefile.LinesFile, 0, len(paths))
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			x.Close()
			return nil, fileError(p, err)
		}
		x.files = append(x.files, f)
		files = append(files, cassettefile.LinesFile{R: f, Name: p})
	}
	x.lines = cassettefile.NewLines(files)
	err = x.index(opts)
	if err != nil && !errors.Is(err, cassettes.ErrTruncated) {
		x.Close()
		return nil, err
	}
	return x, err
}

// Read indexes the cassette whose text or compressed form is data, as
// [Open] indexes a file: name is only what errors call it. data must not
// change while the Index is in use.
func Read(name string, data []byte, opts Options) (*Index, error) {
	r := memFile{bytes.NewReader(data)}
	x := &Index{files: []source{r}, names: []string{name}, lines: cassettefile.NewLines([]cassettefile.LinesFile{{R: r, Name: name}})}
	err := x.index(opts)
	if err != nil && !errors.Is(err, cassettes.ErrTruncated) {
		return nil, err
	}
	return x, err
}

// memFile is a cassette's bytes held in memory, closed for nothing.
type memFile struct{ *bytes.Reader }

func (memFile) Close() error { return nil }

// index reads the cassette of x's files in one pass: its header, each
// interaction and where each of its frames is.
func (x *Index) index(opts Options) error {
	sc := x.scanner()
	rd, err := cassettes.NewReader(cassettefile.Scanned{S: sc}, sc.Name())
	if err != nil {
		return err
	}
	defer rd.Close()
	x.Header = rd.Header()
	if len(x.files) > 1 {
		x.Header.Part = 0 // the whole recording's
	}
	byID := map[int]*Interaction{}
	for {
		e, err := rd.Next()
		if err != nil && err != io.EOF && !errors.Is(err, cassettes.ErrTruncated) {
			return err
		}
		if err != nil {
			x.finish(sc)
			if err == io.EOF {
				err = nil
			}
			return err
		}
		if err := x.add(e, byID, sc, opts); err != nil {
			return err
		}
	}
}

// scanner is the Scanner the Reader of x's files reads through, which
// tells where each line is and the seek comments, and how much of a
// frame it checks.
func (x *Index) scanner() *cassettefile.Scanner {
	parts := make([]cassettefile.Part, len(x.files))
	plain := false
	for k, f := range x.files {
		parts[k] = cassettefile.Part{R: f, Name: x.names[k]}
		// Frames are checked as the plainest file needs.
		var magic [4]byte
		n, _ := f.ReadAt(magic[:], 0)
		plain = plain || !cassettes.IsCompressed(magic[:n])
	}
	// An index needs each frame's bounds, not a proof that it is JSON:
	// kwrec's writer only stores valid JSON frames, lint checks every one,
	// and a compressed file's zstd checksums already prove its bytes are
	// the ones written, so only a plain (hand-editable) file's frames are
	// checked, and only for being whole values. This is most of what
	// makes an open as fast as decompression.
	check := cassettefile.CheckBounds
	if !plain {
		check = cassettefile.CheckNone
	}
	return cassettefile.NewScanner(parts, cassettefile.ScanOptions{Check: check, Ahead: true, Borrow: true})
}

// add notes entry e, just read through sc, in x: a request starts an
// Interaction (kept in byID by its ID), a response or an end completes
// it, and a frame's place is appended to its Frames and shown to
// opts.Visit.
func (x *Index) add(e cassettes.Entry, byID map[int]*Interaction, sc *cassettefile.Scanner, opts Options) error {
	switch {
	case e.Request != nil:
		in := &Interaction{ID: e.ID, At: e.At, Request: *e.Request}
		byID[e.ID] = in
		x.Interactions = append(x.Interactions, in)
	case e.Response != nil:
		byID[e.ID].Response = e.Response
	case e.Frame != nil:
		in := byID[e.ID]
		i := in.Frames.Len()
		line := int32(0)
		if e.Line <= math.MaxInt32 {
			line = int32(e.Line)
		}
		off, n := sc.Line()
		in.Frames.Append(Frame{At: e.Frame.At, off: off, n: int32(n), line: line})
		noteBase(in, i, sc.Base())
		if opts.Visit != nil {
			if err := opts.Visit(in, i, *e.Frame); err != nil {
				return err
			}
		}
	case e.End != nil:
		byID[e.ID].End = e.End
	}
	return nil
}

// finish keeps where the files' texts are and their seek points, and
// trims the delta bases.
func (x *Index) finish(sc *cassettefile.Scanner) {
	for _, in := range x.Interactions {
		if b := in.bases; cap(b)-len(b) > len(b)/8 {
			in.bases = slices.Clone(b)
		}
	}
	x.lines.Place(sc)
}

// Close closes the cassette's files. Readers still open fail from then
// on.
func (x *Index) Close() error {
	if x.closed.Swap(true) {
		return nil
	}
	var errs []error
	for _, f := range x.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// FrameRef names frame I (0-based) of interaction In.
type FrameRef struct {
	In *Interaction
	I  int
}

// check reports an error unless in is one of x.Interactions.
func (x *Index) check(in *Interaction) error {
	if in != nil {
		k := sort.Search(len(x.Interactions), func(k int) bool { return x.Interactions[k].ID >= in.ID })
		if k < len(x.Interactions) && x.Interactions[k] == in {
			return nil
		}
	}
	return fmt.Errorf("cassette: %s: the interaction is not one of this index's Interactions", x.names[0])
}

func frameRangeError(in *Interaction, i, n int) error {
	return fmt.Errorf("cassette: interaction %d has no frame %d; it has %d (numbered from 0)", in.ID, i, n)
}

// Frames returns a reader of in's frames, from frame from (0-based) on,
// in order. in must be one of x.Interactions; from may be in.Frames.Len()
// (the reader is then at its end). Close the reader when done.
func (x *Index) Frames(in *Interaction, from int) (*FrameReader, error) {
	if err := x.check(in); err != nil {
		return nil, err
	}
	if from < 0 || from > in.Frames.Len() {
		return nil, frameRangeError(in, from, in.Frames.Len())
	}
	return &FrameReader{in: in, i: from, c: x.cursor()}, nil
}

// FrameReader reads an interaction's frames from an [Index]'s file, one
// at a time; see [Index.Frames]. It holds at most one zstd decoder and a
// small buffer, released by Close. It is safe for concurrent use.
type FrameReader struct {
	mu     sync.Mutex
	in     *Interaction
	i      int // the next frame
	c      cursor
	err    error
	closed bool
	// kept are the frames read that later deltas copy from, until they
	// do; rc rebuilds a base not kept (delta.go).
	kept *keptFrames
	rc   *cursor
}

// Next returns the next frame, or io.EOF after the last. Its Data is the
// caller's: it is not reused. After an error every call returns it.
func (fr *FrameReader) Next() (cassettes.Frame, error) {
	fr.mu.Lock()
	defer fr.mu.Unlock()
	switch {
	case fr.closed:
		return cassettes.Frame{}, errors.New("cassette: frame reader is closed")
	case fr.err != nil:
		return cassettes.Frame{}, fr.err
	case fr.i >= fr.in.Frames.Len():
		return cassettes.Frame{}, io.EOF
	}
	f, err := fr.read()
	if err != nil {
		fr.err = err
		fr.c.close()
		return cassettes.Frame{}, err
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
	if fr.rc != nil {
		fr.rc.close()
	}
	fr.kept = nil
	return nil
}

// ReadFrames reads the frames refs name, in file order with one forward
// pass, and calls fn(k, f) with each ref's index k in refs. f.Data is
// valid only during the call. An error from fn stops ReadFrames, which
// returns it. No frame is read if a ref does not name a frame of x.
func (x *Index) ReadFrames(refs []FrameRef, fn func(k int, f cassettes.Frame) error) error {
	locs := make([]Frame, len(refs))
	for k, r := range refs {
		if err := x.check(r.In); err != nil {
			return err
		}
		if r.I < 0 || r.I >= r.In.Frames.Len() {
			return frameRangeError(r.In, r.I, r.In.Frames.Len())
		}
		locs[k] = r.In.Frames.At(r.I)
	}
	order := make([]int, len(refs))
	for k := range order {
		order[k] = k
	}
	sort.SliceStable(order, func(a, b int) bool { return locs[order[a]].off < locs[order[b]].off })
	// A delta whose base is also named takes it from the pass, kept
	// until then, instead of rebuilding its chain from the file.
	// It stays nil for a cassette without deltas: no map on the path
	// that serves list items and gets.
	var kept map[*Interaction]*keptFrames
	for _, r := range refs {
		if b := baseOf(r.In, r.I); b != 0 {
			if kept == nil {
				kept = map[*Interaction]*keptFrames{}
			}
			k := kept[r.In]
			if k == nil {
				k = &keptFrames{only: map[int]bool{}}
				kept[r.In] = k
			}
			k.only[b-1] = true
		}
	}
	c, rc := x.cursor(), x.cursor()
	defer c.close()
	defer rc.close()
	var buf []byte
	for _, k := range order {
		r := refs[k]
		if int64(cap(buf)) < int64(locs[k].n) {
			buf = make([]byte, locs[k].n)
		}
		f, err := x.readFrame(&c, &rc, r.In, r.I, buf, kept[r.In])
		if err != nil {
			return err
		}
		if err := fn(k, f); err != nil {
			return err
		}
	}
	return nil
}

// Scan reads frames from to to-1 (0-based) of in, in order with one
// forward pass, and calls fn(i, f) with each. f.Data is valid only during
// the call. A delta takes its base from the pass, kept until then (as a
// [FrameReader] keeps them: at most the Writer's delta budget), so only a
// delta whose base comes before from rebuilds a chain. An error from fn
// stops Scan, which returns it.
func (x *Index) Scan(in *Interaction, from, to int, fn func(i int, f cassettes.Frame) error) error {
	if err := x.check(in); err != nil {
		return err
	}
	if from < 0 || from > to || to > in.Frames.Len() {
		return frameRangeError(in, max(from, to-1), in.Frames.Len())
	}
	var kept *keptFrames
	if in.bases != nil {
		kept = &keptFrames{}
	}
	c, rc := x.cursor(), x.cursor()
	defer c.close()
	defer rc.close()
	var buf []byte
	for i := from; i < to; i++ {
		if n := int(in.Frames.At(i).n); cap(buf) < n {
			buf = make([]byte, n)
		}
		f, err := x.readFrame(&c, &rc, in, i, buf, kept)
		if err != nil {
			return err
		}
		if err := fn(i, f); err != nil {
			return err
		}
	}
	return nil
}

// cursor reads frame lines of an index's text form at recorded offsets
// (see cassettefile.Cursor).
type cursor struct {
	cassettefile.Cursor
	x   *Index
	dst []byte // a binary frame's bytes, when the caller gives a line buffer
}

func (x *Index) cursor() cursor { return cursor{Cursor: x.lines.Cursor(), x: x} }

func (c *cursor) close() { c.Close() }

// frame reads the line of loc, which must decode to a frame of in at
// loc.At. buf, if not nil, holds the line (else a new one is made), and
// then the frame is valid until the cursor's next read: its data is in
// buf (JSON) or in the cursor's own buffer (binary).
func (c *cursor) frame(in *Interaction, loc Frame, buf []byte) (cassettes.Frame, cassettefile.FrameExt, error) {
	reuse := buf != nil
	buf, err := c.ReadLine(loc.off, int(loc.n), buf)
	if err != nil {
		return cassettes.Frame{}, cassettefile.FrameExt{}, c.fail(loc, err)
	}
	var dst []byte
	if reuse {
		// A binary frame's bytes, decoded, are never more than its line.
		if cap(c.dst) < int(loc.n) {
			c.dst = make([]byte, 0, loc.n)
		}
		dst = c.dst
	}
	f, x, ok := parseLine(bytes.TrimSpace(buf), in, loc, dst)
	if !ok {
		return cassettes.Frame{}, cassettefile.FrameExt{}, c.fail(loc, nil)
	}
	return f, x, nil
}

// fail turns a failure to read the frame at loc into the error to return:
// an error of the file itself (closed, unreadable) as it is, anything
// else (a line that is not the frame, the file ending early, zstd data
// that no longer decodes) as ErrModified. The cursor starts over next time.
func (c *cursor) fail(loc Frame, err error) error {
	name := c.x.lines.Name(loc.off)
	c.Close()
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fileError(name, err)
	}
	return &cassettes.ParseError{File: name, Line: int(loc.line), Offset: -1, Err: ErrModified,
		Msg: "the cassette changed since it was indexed; reopen it"}
}

// fileError names the file once: "x.kwrec: no such file or directory".
func fileError(name string, err error) error {
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("%s: %w", name, err)
}
