package cassettefile

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"io/fs"
	"math"
	"sort"
	"sync/atomic"

	"github.com/klauspost/compress/zstd"
)

// ErrNotALine is what [Cursor.ReadLine] returns when the bytes at the
// offset it was given do not end as a line of that length: the file is
// not what its [Scanner] read.
var ErrNotALine = errors.New("not a line of the text form there")

// Lines reads lines of a cassette's text form back at the offsets a
// [Scanner] told, from its files (one, or a rotated recording's parts,
// whose texts are one text end to end). A line of a plain file is one
// positioned read. In the compressed form it decodes from the nearest
// seek comment before the line, once that comment's claim checks out (its
// bytes are zstd's magic and decode to that comment), else from the
// file's start.
//
// Its cursors are safe for use on different goroutines; the files must
// not change.
type Lines struct {
	files []*linesFile
}

// linesFile is one file of a Lines.
type linesFile struct {
	r          io.ReaderAt
	name       string
	start      int64 // where its text starts in the texts of all the files
	compressed bool
	seeks      []seekState // in text order, at offsets in the file's own text
}

// seekState is a seek point and whether it has been checked against the
// file: its comment is only a claim until the bytes at its offset decode
// to that comment.
type seekState struct {
	SeekPoint
	state atomic.Int32 // seekUnknown, seekGood or seekBad
}

const (
	seekUnknown int32 = iota
	seekGood
	seekBad
)

// LinesFile is one file of a cassette that [Lines] reads.
type LinesFile struct {
	R    io.ReaderAt
	Name string
}

// NewLines returns the Lines of a cassette's files, in order, which
// [Lines.Place] places once a Scanner has read them: until then (and
// past a cut, for the files the Scanner did not start) no offset is in
// them.
func NewLines(files []LinesFile) *Lines {
	l := &Lines{files: make([]*linesFile, len(files))}
	for k, f := range files {
		l.files[k] = &linesFile{r: f.R, name: f.Name, start: math.MaxInt64}
	}
	return l
}

// Place keeps what sc told, having read the files: where each file's text
// starts, its form, and its seek comments.
func (l *Lines) Place(sc *Scanner) {
	for k, fi := range sc.Files() {
		l.files[k].start, l.files[k].compressed = fi.Start, fi.Compressed
	}
	n := make([]int, len(l.files))
	for _, p := range sc.Seeks() {
		n[p.File]++
	}
	for k, fl := range l.files {
		fl.seeks = make([]seekState, 0, n[k])
	}
	for _, p := range sc.Seeks() {
		fl := l.files[p.File]
		fl.seeks = append(fl.seeks, seekState{})
		fl.seeks[len(fl.seeks)-1].SeekPoint = p
	}
}

// FileAt returns the number (from 0) of the file that text offset off is
// in.
func (l *Lines) FileAt(off int64) int {
	k := sort.Search(len(l.files), func(k int) bool { return l.files[k].start > off })
	return max(k-1, 0)
}

func (l *Lines) fileAt(off int64) *linesFile { return l.files[l.FileAt(off)] }

// Name returns the name of the file that text offset off is in.
func (l *Lines) Name(off int64) string { return l.fileAt(off).name }

// Cursor returns a cursor at no line; Close it when done.
func (l *Lines) Cursor() Cursor { return Cursor{l: l, pos: -1} }

// plainJump is how far ahead a cursor reads on instead of starting a new
// read (a plain-text cassette) or decoding from a later seek point (the
// compressed form).
const plainJump = 1 << 20

// Cursor reads lines of a [Lines] at their offsets, moving forward
// through the file when it can. It holds at most one zstd decoder and a
// few buffers, released by Close. Not safe for concurrent use.
type Cursor struct {
	l    *Lines
	fl   *linesFile    // the file br reads
	pos  int64         // text offset of br's next byte; -1: not started
	br   *bufio.Reader // the text; nil: not positioned
	text *bufio.Reader // the text decoded by dec, kept for reuse
	in   *bufio.Reader // the compressed bytes, into dec
	dec  *zstd.Decoder
}

// Close releases the cursor's decoder and buffers; it starts over at its
// next read.
func (c *Cursor) Close() {
	if c.dec != nil {
		c.dec.Close()
		c.dec = nil
	}
	c.br, c.text, c.in, c.pos, c.fl = nil, nil, nil, -1, nil
}

// ReadLine reads the line at text offset off, n bytes long without its
// newline, into buf (a new buffer if buf is nil). An error of a file
// itself (closed, unreadable) is an *fs.PathError; bytes there that are
// not such a line give [ErrNotALine], and a file that ends early or zstd
// data that no longer decodes their own errors.
func (c *Cursor) ReadLine(off int64, n int, buf []byte) ([]byte, error) {
	if err := c.seek(off); err != nil {
		return nil, err
	}
	if buf == nil {
		buf = make([]byte, n)
	}
	buf = buf[:n]
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return nil, err
	}
	c.pos += int64(n)
	switch b, err := c.br.ReadByte(); {
	case err == nil && b != '\n':
		return nil, ErrNotALine
	case err == nil:
		c.pos++
	case err != io.EOF: // a plain-text cassette's last line has no newline
		return nil, err
	}
	return buf, nil
}

// seek positions the cursor at text offset off.
func (c *Cursor) seek(off int64) error {
	if fl := c.l.fileAt(off); fl != c.fl {
		// Another part of a rotated recording: start over in it.
		c.fl, c.br, c.pos = fl, nil, -1
	}
	if c.fl.compressed {
		if err := c.seekCompressed(off); err != nil {
			return err
		}
	} else if c.br == nil || off < c.pos || off-c.pos > plainJump {
		local := off - c.fl.start
		sr := io.NewSectionReader(c.fl.r, local, math.MaxInt64-local)
		if c.br == nil || c.br == c.text {
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
func (c *Cursor) seekCompressed(off int64) error {
	seeks, base := c.fl.seeks, c.fl.start
	j := sort.Search(len(seeks), func(j int) bool { return base+seeks[j].Text > off })
	for j--; ; j-- {
		for j >= 0 && seeks[j].state.Load() == seekBad {
			j--
		}
		start := SeekPoint{}
		if j >= 0 {
			start = seeks[j].SeekPoint
		}
		if c.br != nil && c.pos <= off && (c.pos >= base+start.Text || off-c.pos <= plainJump) {
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

// start starts decoding c.fl at p and, if check is set, reports whether
// the bytes there are what p claims: zstd's magic, decoding to p's own
// seek comment. The file start needs no check.
func (c *Cursor) start(p SeekPoint, check bool) (bool, error) {
	c.br, c.pos = nil, -1
	if check {
		var magic [4]byte
		if _, err := c.fl.r.ReadAt(magic[:], p.Zstd); err != nil {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return false, err
			}
			return false, nil // past the end: a claim about another file
		}
		if !compressed(magic[:]) {
			return false, nil
		}
	}
	sr := io.NewSectionReader(c.fl.r, p.Zstd, math.MaxInt64-p.Zstd)
	if c.in == nil {
		c.in = bufio.NewReaderSize(sr, 64<<10)
	} else {
		c.in.Reset(sr)
	}
	if c.dec == nil {
		dec, err := NewDecoder(c.in, false)
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
		if err != nil || !bytes.Equal(line, AppendSeekComment(nil, p)) {
			var pe *fs.PathError
			if errors.As(err, &pe) {
				return false, err
			}
			return false, nil
		}
		p.Text += int64(len(line))
	}
	c.br, c.pos = c.text, c.fl.start+p.Text
	return true, nil
}
