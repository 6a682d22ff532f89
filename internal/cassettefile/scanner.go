package cassettefile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"
)

// MaxLineSize bounds one line of the text form (cassettes.MaxLineSize):
// longer lines are refused rather than read into memory.
const MaxLineSize = 256 << 20

// borrowBufferSize is the text buffer of a Scanner that lends its lines
// ([ScanOptions.Borrow]) of a compressed file: a line up to this long (a
// list of thousands of objects) is lent from it as decoded, not gathered
// into another buffer first.
const borrowBufferSize = 4 << 20

// ZstdMagic is what a compressed cassette starts with: zstd's magic
// bytes (cassettes.IsCompressed).
const ZstdMagic = "\x28\xb5\x2f\xfd"

// compressed reports whether b starts with [ZstdMagic].
func compressed(b []byte) bool { return string(b[:min(len(b), len(ZstdMagic))]) == ZstdMagic }

// What [Scanner.Start] and [Scanner.NextFile] report of a file that does
// not start a cassette's stream; package cassettes words them for users.
var (
	// ErrEmptyFile: the file has no byte.
	ErrEmptyFile = errors.New("empty file")
	// ErrCutMagic: the file is the start of zstd's magic and nothing
	// more, what a recorder killed inside its first write leaves of the
	// compressed form; [Scanner.Pos] is then where it was cut.
	ErrCutMagic = errors.New("cut inside the zstd magic")
	// ErrBadZstd wraps the zstd decoder's refusal of the stream.
	ErrBadZstd = errors.New("bad zstd stream")
)

// ErrNoNewline comes with a last line that has no newline: complete if it
// parses, else cut. (io.ErrUnexpectedEOF is the zstd decoder's: a cut
// compressed stream.)
var ErrNoNewline = errors.New("last line without a newline")

// ErrLineTooLong is what [Scanner.ReadLine] returns for a line longer
// than [MaxLineSize].
var ErrLineTooLong = errors.New("line too long")

// Part is one file of a cassette: the only one, or a part of a rotated
// recording.
type Part struct {
	R    io.Reader
	Name string
}

// File is what a Scanner tells of a file it started reading.
type File struct {
	// Start is the offset of the file's text in the texts of all the
	// files end to end.
	Start      int64
	Compressed bool
}

// ScanOptions configure a [Scanner]. The zero value is a public
// cassettes.Reader's: every JSON frame checked as valid (CheckValid),
// every line copied, one decoding goroutine.
type ScanOptions struct {
	// Check is how much of a JSON frame's value the Reader checks (see
	// [ParseCanonical]).
	Check Check
	// Ahead decodes a compressed file's next block on a second goroutine
	// (see [NewDecoder]): for a reader that reads the whole file at once.
	Ahead bool
	// Borrow lends each line from the Scanner's buffer instead of copying
	// it: a line is then valid only until the next ReadLine, and so is a
	// frame [Scanner.Frame] rebuilds from a delta (into one buffer). For a
	// reader that takes what it needs from each entry at once, such as an
	// index's, it saves a copy of every line and frame.
	Borrow bool
}

// Scanner reads the lines of a cassette's text form from its files,
// compressed or plain (told by zstd's magic bytes, file by file): the one
// line reader of the format, under a cassettes.Reader whether a user or
// kwrec's index reads the cassette. As it reads it keeps where each line
// is in the text form, where each file's text starts and the compressed
// form's seek comments, which an index needs to read a frame back later;
// and it rebuilds the frames that delta lines write (see [DeltaTable]).
//
// The files of a rotated recording read as one stream: offsets are then
// in the texts of all the files end to end.
type Scanner struct {
	opts  ScanOptions
	parts []Part
	file  int // parts[file] is being read

	cr  *countingReader
	br  *bufio.Reader
	dec *zstd.Decoder
	// long is the buffer a borrowed line longer than br's buffer is
	// gathered in, kept for the next one.
	long []byte
	line int // lines read in the file

	files   []File
	off     int64 // bytes of text read
	lineOff int64 // where the last line read starts
	lineLen int   // its length without the newline
	seeks   []SeekPoint

	deltas DeltaTable
	base   int
}

// Scanned is a Scanner handed to cassettes.NewReader in place of an
// io.Reader: the Reader then reads through it as it is, with the options
// it was made with. It is how kwrec's index gets a cassettes.Reader over
// a Scanner of its own (checking frames only as far as it needs, lending
// lines, telling where each line is): package cassettes exports only what
// users call, and no one outside this module can make a Scanned. Its own
// Read is never called.
type Scanned struct{ S *Scanner }

// Read fails: a Scanned is read through its Scanner (cassettes.NewReader).
func (Scanned) Read([]byte) (int, error) { return 0, errScannedRead }

var errScannedRead = errors.New("cassettefile: a Scanned is read through its Scanner, not as an io.Reader")

// countingReader counts the compressed bytes handed to the zstd decoder.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// NewScanner returns a Scanner of the cassette in parts (one file, or a
// rotated recording's parts in order); [Scanner.Start] starts it.
func NewScanner(parts []Part, opts ScanOptions) *Scanner {
	s := &Scanner{opts: opts, parts: parts}
	s.deltas.lend = opts.Borrow
	return s
}

// Check returns how much of a JSON frame's value a reader checks.
func (s *Scanner) Check() Check { return s.opts.Check }

// Parts returns how many files the cassette has.
func (s *Scanner) Parts() int { return len(s.parts) }

// Name returns the name of the file being read.
func (s *Scanner) Name() string { return s.parts[s.file].Name }

// File returns the number (from 0) of the file being read.
func (s *Scanner) File() int { return s.file }

// Start starts reading the first file.
func (s *Scanner) Start() error { return s.startFile() }

// NextFile starts the next file at the end of one, and reports whether
// there was one.
func (s *Scanner) NextFile() (bool, error) {
	if s.file+1 >= len(s.parts) {
		return false, nil
	}
	s.Close()
	s.file++
	return true, s.startFile()
}

// startFile starts reading parts[s.file] at its first byte.
func (s *Scanner) startFile() error {
	cr := &countingReader{r: s.parts[s.file].R}
	raw := bufio.NewReaderSize(cr, 64<<10)
	s.cr, s.br, s.dec, s.line = cr, raw, nil, 0
	s.files = append(s.files, File{Start: s.off})
	magic, err := raw.Peek(4)
	switch {
	case len(magic) == 0 && (err == io.EOF || err == nil):
		return ErrEmptyFile
	case err != nil && err != io.EOF:
		return err
	case len(magic) < len(ZstdMagic) && strings.HasPrefix(ZstdMagic, string(magic)):
		raw.Discard(len(magic))
		return ErrCutMagic
	}
	if !compressed(magic) {
		return nil
	}
	dec, err := NewDecoder(raw, s.opts.Ahead)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrBadZstd, err)
	}
	s.dec = dec
	s.files[s.file].Compressed = true
	size := 64 << 10
	if s.opts.Borrow {
		size = borrowBufferSize
	}
	s.br = bufio.NewReaderSize(dec, size)
	return nil
}

// Compressed reports whether the file being read is in the compressed
// form.
func (s *Scanner) Compressed() bool { return s.dec != nil }

// Close releases the decoder of the file being read.
func (s *Scanner) Close() {
	if s.dec != nil {
		s.dec.Close()
		s.dec = nil
	}
}

// Pos returns the byte offset in the file read so far: for the compressed
// form what the decoder consumed, which at a cut is the file's size.
func (s *Scanner) Pos() int64 {
	if s.dec != nil {
		return s.cr.n
	}
	return s.cr.n - int64(s.br.Buffered())
}

// LineNo returns the number (from 1) in its file of the last line read,
// or of the one ReadLine failed to read.
func (s *Scanner) LineNo() int { return s.line }

// Line returns where the last line read is in the text form: its byte
// offset and its length without the newline.
func (s *Scanner) Line() (off int64, n int) { return s.lineOff, s.lineLen }

// Off returns how many bytes of text have been read.
func (s *Scanner) Off() int64 { return s.off }

// Files returns, for each file started, where its text starts and its
// form.
func (s *Scanner) Files() []File { return s.files }

// Seeks returns the compressed form's seek comments read, in order, each
// at the text offset it claims (whether its compressed offset is right is
// for the index to check). Their Text is, as in the comment, an offset in
// their own file's text: add Files()[p.File].Start.
func (s *Scanner) Seeks() []SeekPoint { return s.seeks }

// keepLong is the largest buffer of a long line a borrowing Scanner
// keeps for the next one. A recording's few large bodies (a list of
// thousands of objects is one line of megabytes) would otherwise hold the
// largest of them for the whole read: 8 MB of kwrec cut's 66 MB live on a
// million-event recording.
const keepLong = 1 << 20

// ReadLine returns the next line without its newline: io.EOF at the end
// of the file, [ErrNoNewline] with a last line that has no newline,
// [ErrLineTooLong]. A line is a copy, or with [ScanOptions.Borrow] valid
// until the next read: in the Scanner's buffer, or in s.long when longer.
func (s *Scanner) ReadLine() ([]byte, error) {
	borrow := s.opts.Borrow
	var acc []byte
	if borrow {
		if cap(s.long) > keepLong {
			s.long = nil
		}
		acc = s.long[:0]
	}
	for {
		frag, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			if len(acc)+len(frag) > MaxLineSize {
				return nil, ErrLineTooLong
			}
			acc = append(acc, frag...)
			continue
		}
		s.line++
		switch {
		case len(acc) > 0:
			frag = append(acc, frag...)
			if borrow {
				s.long = frag[:0]
			}
		case !borrow:
			frag = append([]byte(nil), frag...)
		}
		s.lineOff, s.lineLen = s.off, len(frag)
		s.off += int64(len(frag))
		if err == nil {
			s.lineLen--
			line := frag[:len(frag)-1]
			if len(line) > 0 && line[0] == '#' {
				s.seekComment(line)
			}
			return line, nil
		}
		if err == io.EOF {
			if len(frag) == 0 {
				s.line--
				return nil, io.EOF
			}
			return frag, ErrNoNewline
		}
		return frag, err
	}
}

// seekComment keeps line if it is a seek comment where it says it is; the
// index checks its compressed offset before using it.
func (s *Scanner) seekComment(line []byte) {
	if p, ok := ParseSeekComment(line); ok && s.dec != nil && p.Text == s.lineOff-s.files[s.file].Start {
		p.File = s.file
		s.seeks = append(s.seeks, p)
	}
}

// AtEnd reports whether nothing but blank space follows.
func (s *Scanner) AtEnd() bool {
	for {
		b, err := s.br.ReadByte()
		if err != nil {
			return errors.Is(err, io.EOF)
		}
		if b != ' ' && b != '\n' && b != '\r' && b != '\t' {
			s.br.UnreadByte()
			return false
		}
	}
}

// Frame takes the next frame of interaction id, whose line said x (see
// [DeltaTable.Frame]), and keeps its base for [Scanner.Base].
func (s *Scanner) Frame(id int, x FrameExt, data []byte) ([]byte, error) {
	data, base, err := s.deltas.Frame(id, x, data)
	s.base = base
	return data, err
}

// End frees interaction id's kept frames.
func (s *Scanner) End(id int) { s.deltas.End(id) }

// Base returns, after [Scanner.Frame], 1 + the 0-based number of the
// frame of its interaction that the frame is a delta against and copies
// from, 0 for a whole frame: what a random read of the frame must rebuild
// first.
func (s *Scanner) Base() int { return s.base }
