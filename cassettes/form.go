package cassettes

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// DefaultSegmentSize is how many bytes of text a zstd frame of the
// compressed form holds, about, when [WriterOptions.SegmentSize] is zero.
const DefaultSegmentSize = 16 << 20

// maxWindow is the zstd window of a single-frame cassette (zstd's default
// at this level). A back-reference never reaches further than the window,
// so a decoder needs about this much memory.
const maxWindow = 8 << 20

// segmentWindow caps the window of a segmented cassette. A recording of
// many collections interleaves their watches, so an object's earlier
// version, or the JSON event beside its Table-form one, is megabytes
// back. On a 51-minute record --all (363 MB of text) klauspost's better
// level gives 27.25 MB in 4 MiB segments with a 1 MiB window, 22.67 in
// 16 MiB segments with a 4 MiB window, and 21.75 with an 8 MiB one; but
// every reader of a segment (a replayed body each) holds up to the
// window, and an 8 MiB one took replay.Open of 100k Pod events from 77
// to 100 MB peak.
const segmentWindow = 4 << 20

// windowFor returns the zstd window for segments of size bytes of text
// (size <= 0: one frame).
func windowFor(size int64) int {
	if size <= 0 {
		return maxWindow
	}
	w := zstd.MinWindowSize
	for int64(w) < size && w < segmentWindow {
		w <<= 1
	}
	return w
}

// countingWriter counts the bytes written through it: the compressed
// offset a new zstd frame starts at.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

// segmenter writes the compressed form: text through a buffer into a zstd
// encoder, ending the zstd frame at the first line end after size bytes
// of text and starting the next with a seek comment, so a reader can
// start decoding at any frame.
type segmenter struct {
	out  *bufio.Writer // into enc
	enc  *zstd.Encoder
	cw   *countingWriter
	size int64 // <= 0: one frame
	text int64 // text bytes written
	seg  int64 // text bytes since the current frame began
	buf  []byte
}

// compression is how a [Writer] writes the compressed form.
type compression struct {
	level   zstd.EncoderLevel
	window  int
	segment int // text bytes per zstd frame; < 0: one frame
	// concurrency is the encoder's: 1 compresses in the writing
	// goroutine, 2 or more hand each block to another.
	concurrency int
	// bytesForm writes binary frames in the "bytes" form, not base64.
	bytesForm bool
}

// compressionFor returns the compression of opts (opts.Compress set).
func compressionFor(opts WriterOptions) compression {
	c := compression{level: zstd.SpeedBetterCompression, segment: opts.SegmentSize, concurrency: 1, bytesForm: true}
	switch {
	case opts.Compact:
		// The best level: with a 16 MiB window it reaches an object's
		// list item megabytes back where the better level mostly does
		// not. On target 13's recording (2,000 ConfigMaps, one key of
		// four rewritten) 3.476 MB against 3.970, on target 11's 10
		// minutes 5.424 against 5.826; at 4 or 8 MiB the best level
		// gave target 13 only 4.107 and 4.080. It costs the writer 52
		// MB more and 40% more time; readers, nothing.
		c.level = zstd.SpeedBestCompression
		if c.segment == 0 {
			c.segment = DefaultSegmentSize
		}
		c.window = zstd.MinWindowSize
		for c.window < maxCompactWindow && (c.segment < 0 || c.window < c.segment) {
			c.window <<= 1
		}
	case c.segment == 0:
		c.segment = DefaultSegmentSize
	}
	if c.window == 0 {
		c.window = windowFor(int64(c.segment))
	}
	return c
}

// newSegmenter returns a segmenter on w compressing as c says.
func newSegmenter(w io.Writer, c compression) (*segmenter, error) {
	cw := &countingWriter{w: w}
	// Lower memory: the same bytes (measured), a 4 MiB window's encoder
	// at the better level in 10.2 MB instead of 14.6, which a recorder
	// holds all along.
	enc, err := zstd.NewWriter(cw, zstd.WithEncoderConcurrency(c.concurrency), zstd.WithEncoderLevel(c.level), zstd.WithWindowSize(c.window), zstd.WithLowerEncoderMem(true))
	if err != nil {
		return nil, fmt.Errorf("cassette: zstd encoder: %w", err)
	}
	return &segmenter{out: bufio.NewWriterSize(enc, 256<<10), enc: enc, cw: cw, size: int64(c.segment)}, nil
}

// write writes p, a whole line or a piece of one; the frame may end
// after p only if p ends a line.
func (s *segmenter) write(p []byte) error {
	if _, err := s.out.Write(p); err != nil {
		return err
	}
	s.text += int64(len(p))
	s.seg += int64(len(p))
	if s.size > 0 && s.seg >= s.size && len(p) > 0 && p[len(p)-1] == '\n' {
		return s.nextFrame()
	}
	return nil
}

// nextFrame ends the zstd frame and starts the next with its seek
// comment, flushed at once: a process killed after this leaves an open
// frame, which readers report as a cut stream, never a clean end.
func (s *segmenter) nextFrame() error {
	if err := s.out.Flush(); err != nil {
		return err
	}
	if err := s.enc.Close(); err != nil {
		return err
	}
	s.enc.Reset(s.cw)
	s.buf = cassettefile.AppendSeekComment(s.buf[:0], cassettefile.SeekPoint{Zstd: s.cw.n, Text: s.text})
	if _, err := s.out.Write(s.buf); err != nil {
		return err
	}
	s.text += int64(len(s.buf))
	s.seg = int64(len(s.buf))
	return s.flush()
}

// flush ends a zstd block: everything so far decodes, and the encoder
// keeps its history, so compression stays whole-frame.
func (s *segmenter) flush() error {
	if err := s.out.Flush(); err != nil {
		return err
	}
	return s.enc.Flush()
}

// close ends the last frame.
func (s *segmenter) close() error {
	if err := s.out.Flush(); err != nil {
		return err
	}
	return s.enc.Close()
}

type plainReader struct {
	io.Reader
	dec    *zstd.Decoder
	deltas *deltaFilter // of the compressed form, else nil
}

func (p *plainReader) Close() error {
	if p.dec != nil {
		p.dec.Close()
	}
	return nil
}

// IsCompressed reports whether data starts like the compressed form (zstd's
// magic bytes), the test every reader here uses.
func IsCompressed(data []byte) bool {
	return bytes.HasPrefix(data, []byte(cassettefile.ZstdMagic))
}

// Plain returns the text form of the cassette bytes in r, decompressing
// them when they start with zstd's magic bytes and passing them through
// otherwise. Seek comments are dropped from decompressed text: they
// describe the compressed bytes only. It does not parse the cassette
// (kwrec cat and textconv use it to show even a broken one).
func Plain(r io.Reader) (io.ReadCloser, error) { return plain(r) }

// plain is Plain, its reader's type told.
func plain(r io.Reader) (*plainReader, error) {
	br := bufio.NewReader(r)
	magic, _ := br.Peek(4)
	if !IsCompressed(magic) {
		return &plainReader{Reader: br}, nil
	}
	dec, err := cassettefile.NewDecoder(br, false)
	if err != nil {
		return nil, fmt.Errorf("cassette: zstd: %w", err)
	}
	df := newDeltaFilter(dec)
	return &plainReader{Reader: df, dec: dec, deltas: df}, nil
}

// pieceReader reads out the pieces more returns, one after the other: a
// piece is only asked for once the one before is read, and more's error
// is returned after the piece that came with it.
type pieceReader struct {
	more    func() ([]byte, error)
	pending []byte // the rest of the current piece
	err     error
}

func (r *pieceReader) Read(p []byte) (int, error) {
	for len(r.pending) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		r.pending, r.err = r.more()
	}
	n := copy(p, r.pending)
	r.pending = r.pending[n:]
	return n, nil
}

// seekFilter passes text through without its seek comment lines.
type seekFilter struct {
	br  *bufio.Reader
	mid bool // inside a line
}

func newSeekFilter(r io.Reader) io.Reader {
	s := &seekFilter{br: bufio.NewReaderSize(r, 64<<10)}
	return &pieceReader{more: s.piece}
}

// piece returns the next piece of text, a line or a part of one, skipping
// whole seek comment lines; it is valid until the next call. At the end it
// returns the last piece, maybe empty, with the reader's error.
func (s *seekFilter) piece() ([]byte, error) {
	for {
		frag, err := s.br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			err = nil
		}
		start := !s.mid
		s.mid = len(frag) == 0 || frag[len(frag)-1] != '\n'
		if start && !s.mid && err == nil {
			if _, ok := cassettefile.ParseSeekComment(frag[:len(frag)-1]); ok {
				continue
			}
		}
		return frag, err
	}
}

// Form is how a cassette file is stored, for a command that rewrites it
// (kwrec edit, kwrec lint --fix) to write it back the same way.
type Form struct {
	// Compressed is the compressed form (zstd's magic bytes first).
	Compressed bool
	// Deltas says some watch events are stored as object deltas
	// (kwrec record --deltas, kwrec compact).
	Deltas bool
	// ListDeltas says some watch events are stored as deltas against a
	// list, and none against an earlier event (kwrec record's default).
	ListDeltas bool
}

// options are the WriterOptions that write a cassette in form f: with
// deltas, as kwrec compact does (deltas and the stronger level), so a
// compacted cassette stays as small and a recording made with deltas gets
// no larger.
func (f Form) options() WriterOptions {
	return WriterOptions{Compress: f.Compressed, Compact: f.Compressed && f.Deltas, ListDeltas: f.Compressed && f.ListDeltas}
}

// ReadText returns the whole text form of the cassette bytes in r, as
// [Plain] reads it (deltas rebuilt), and the form they were stored in.
// It does not parse the cassette. On an error (a cut compressed file) it
// returns the text and form of what it read before it.
func ReadText(r io.Reader) ([]byte, Form, error) {
	p, err := plain(r)
	if err != nil {
		return nil, Form{}, err
	}
	defer p.Close()
	text, err := io.ReadAll(p)
	f := Form{Compressed: p.dec != nil}
	if d := p.deltas; d != nil {
		f.Deltas, f.ListDeltas = d.deltas, d.lists && !d.deltas
	}
	return text, f, err
}

// FormOf returns the form of the cassette file at path, reading it
// through; for a cut file, of what is before the cut.
func FormOf(path string) (Form, error) {
	fl, err := os.Open(path)
	if err != nil {
		return Form{}, fileError(path, err)
	}
	defer fl.Close()
	_, f, _ := ReadText(fl)
	return f, nil
}

// Compress writes src, the text form, to dst in the compressed form, in
// segments of [DefaultSegmentSize] each starting with a seek comment;
// with f.Deltas, watch events as object deltas at kwrec compact's level,
// with f.ListDeltas as deltas against lists,
// so that text read with [ReadText] goes back in the form it came in
// (f.Compressed is taken as set). Seek comments in src are dropped (they
// described other compressed bytes), so for text without them
// decompressing the result ([Plain]) gives src back byte for byte.
func Compress(dst io.Writer, src io.Reader, f Form) error {
	f.Compressed = true
	opts := f.options()
	s, err := newSegmenter(dst, compressionFor(opts))
	if err != nil {
		return err
	}
	if err := compressText(s, src, newDeltaWriter(opts)); err != nil {
		s.enc.Close()
		return fmt.Errorf("cassette: compressing: %w", err)
	}
	return s.close()
}
