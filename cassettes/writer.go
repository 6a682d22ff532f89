package cassettes

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// DefaultFlushInterval is how often a [Writer] pushes buffered lines to its
// output when [WriterOptions.FlushInterval] is zero.
const DefaultFlushInterval = time.Second

// WriterOptions configure a [Writer]. The zero value writes plain text and
// flushes every [DefaultFlushInterval] of real time.
type WriterOptions struct {
	// Compress writes the zstd-compressed form. [Create] turns it on for
	// names ending in ".zst". The compressed form writes binary frames
	// (protobuf watch events) in the "bytes" form, which compresses
	// better than base64; plain text keeps base64, which every kwrec
	// reads (see the package doc).
	Compress bool
	// FlushInterval bounds how long a written line may sit in a buffer
	// before it reaches the output, so a killed process loses at most
	// this much. Default [DefaultFlushInterval].
	FlushInterval time.Duration
	// Clock drives the flush interval. Default: the real clock.
	Clock clock.WithTicker
	// SegmentSize is, for the compressed form, how many bytes of text a
	// zstd frame holds before the Writer ends it at the next line end and
	// starts a new one with a seek comment (see the package doc), so a
	// reader (replay.Open) can start decoding near any line. Default
	// [DefaultSegmentSize]; negative: one zstd frame for the whole
	// cassette, as before seek comments existed.
	SegmentSize int
	// Compact compresses for size rather than for its readers: object
	// deltas (Deltas, whatever it says), zstd's best level (klauspost's,
	// about zstd's 11; the default is its better level) and a window as
	// large as a segment (16 MiB by default, 64 MiB at most) instead of
	// 4 MiB. For finished recordings (kwrec compact): every stream a
	// reader decodes costs it the window, and the writer holds about 50
	// MB more than at the better level.
	Compact bool
	// MaxSize, with [Create], splits the recording into numbered parts
	// (see [PartName]): once the current part file holds MaxSize bytes,
	// the Writer starts the next part at the next line. Sizes are checked
	// as lines are written and counted as they reach the file, so a part
	// ends up to a flush interval's worth of lines past MaxSize.
	// Default 0: one file. [Parts], [Open], [Load] and replay.Open read the
	// parts as one recording (see the package doc).
	MaxSize int64
	// Deltas, with Compress, writes each watch event whose object the
	// interaction sent before as a delta against that object's previous
	// version (see the package doc, "Object deltas"): a much smaller
	// file, less CPU to write, but the Writer and every reader of the
	// cassette hold up to DeltaBudget bytes of frames. Default off: a
	// recording's replay stays within its memory target; kwrec compact
	// turns it on.
	Deltas bool
	// ListDeltas, with Compress, writes each watch event whose object
	// the interaction did not send before as a delta against its item in
	// a list written before (kubectl's Table form included), where that
	// delta is less than half the event, and no other deltas (see the
	// package doc, "Object deltas"). The Writer and every reader hold the
	// lists so used, at most half the DeltaBudget of list text, packed
	// (about a tenth of it on lists of objects alike). kwrec record's default
	// (not with --keep, whose rebased parts would drop a list later
	// deltas name).
	ListDeltas bool
	// DeltaBudget is, with Deltas, the most bytes of frames kept as bases
	// of later deltas at any time: what the Writer holds and what any
	// reader of the cassette may have to hold. Default
	// [DefaultDeltaBudget].
	DeltaBudget int64
	// Rotate, with [Create], starts the next part at the first line
	// written once the current part is Rotate old (by Clock), as
	// MaxSize does by size. Default 0: no rotation by time.
	Rotate time.Duration
	// OnPart, with [Create] and MaxSize or Rotate, is called with n once
	// part n is on disk under its name, its header line written. It is
	// called on the goroutine that wrote the line which started the part,
	// with the Writer locked: it must return at once and not call the
	// Writer (signal another goroutine instead).
	OnPart func(n int)
}

// maxCompactWindow is the largest zstd window a [WriterOptions.Compact]
// cassette uses: 64 MiB, the most a reader accepts.
const maxCompactWindow = 64 << 20

type ivState struct {
	responded bool
	lastAt    time.Duration
}

// Writer appends a cassette's text form line by line as interactions happen;
// it never holds more than the lines written since the last flush. Its
// methods are safe for concurrent use: a recorder calls them from every
// in-flight request. After the first write error every method returns it.
type Writer struct {
	mu        sync.Mutex
	out       *bufio.Writer             // nil for the compressed form
	seg       *segmenter                // nil for plain text
	bytesForm bool                      // binary frames in the "bytes" form
	deltas    *cassettefile.DeltaWriter // object deltas (compressed form), else nil
	closer    io.Closer                 // the file opened by Create, else nil
	dirty     bool
	err       error
	nextID    int
	open      map[int]*ivState
	lastAt    time.Duration
	buf       []byte
	stop      chan struct{}
	done      chan struct{}
	closed    bool
	name      string
	rot       *rotation // with MaxSize or Rotate, else nil
}

// NewWriter starts a cassette on w with header h (its Version is set to
// [Version]) and writes the header line.
//
// [WriterOptions.MaxSize] and [WriterOptions.Rotate] need [Create].
func NewWriter(w io.Writer, h Header, opts WriterOptions) (*Writer, error) {
	if opts.MaxSize != 0 || opts.Rotate != 0 {
		return nil, errors.New("cassette: MaxSize and Rotate write several files: use Create")
	}
	return newWriter(w, h, opts, compressionOf(opts))
}

// compressionOf is how opts compress: nil for plain text.
func compressionOf(opts WriterOptions) *compression {
	if !opts.Compress {
		return nil
	}
	c := compressionFor(opts)
	return &c
}

// newWriter is NewWriter compressing as c says (nil: plain text).
func newWriter(w io.Writer, h Header, opts WriterOptions, c *compression) (*Writer, error) {
	cw := &Writer{open: map[int]*ivState{}, nextID: 1, stop: make(chan struct{}), done: make(chan struct{})}
	if c != nil && c.bytesForm {
		cw.deltas = newDeltaWriter(opts)
	}
	if err := cw.setOutput(w, c); err != nil {
		return nil, err
	}
	line, err := encodeHeader(h)
	if err != nil {
		return nil, fmt.Errorf("cassette: header: %w", err)
	}
	cw.write(line)
	if err := cw.flushLocked(); err != nil {
		return nil, err
	}
	interval := opts.FlushInterval
	if interval <= 0 {
		interval = DefaultFlushInterval
	}
	clk := opts.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	t := clk.NewTicker(interval)
	go cw.flushLoop(t)
	return cw, nil
}

// setOutput makes w the Writer's output, compressed as c says (nil:
// plain text).
func (cw *Writer) setOutput(w io.Writer, c *compression) error {
	cw.out, cw.seg, cw.bytesForm = nil, nil, false
	if c != nil {
		seg, err := newSegmenter(w, *c)
		if err != nil {
			return err
		}
		cw.seg, cw.bytesForm = seg, c.bytesForm
	} else {
		cw.out = bufio.NewWriterSize(w, 256<<10)
	}
	return nil
}

// Create creates the cassette file path and returns a [Writer] on it,
// compressed when path ends in ".zst" or opts.Compress is set. Lines reach
// the file as they are flushed, so a killed recorder leaves the file
// readable up to its last flush. With [WriterOptions.MaxSize] or
// [WriterOptions.Rotate] it writes the parts [PartName](path, 1), 2, ...
// instead of path.
func Create(path string, h Header, opts WriterOptions) (*Writer, error) {
	if strings.HasSuffix(path, ".zst") {
		opts.Compress = true
	}
	if opts.MaxSize != 0 || opts.Rotate != 0 {
		return createParts(path, h, opts)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	w, err := NewWriter(f, h, opts)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	w.closer = f
	w.name = path
	return w, nil
}

func (w *Writer) flushLoop(t clock.Ticker) {
	defer close(w.done)
	defer t.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-t.C():
			w.mu.Lock()
			if w.dirty && w.err == nil {
				_ = w.flushLocked() // the error is sticky and returned by the next call
			}
			w.mu.Unlock()
		}
	}
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		// os errors name the path already: keep only their cause.
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		if w.name != "" {
			w.err = fmt.Errorf("cassette: writing %s: %w", w.name, err)
		} else {
			w.err = fmt.Errorf("cassette: writing: %w", err)
		}
	}
	return w.err
}

func (w *Writer) write(line []byte) {
	if w.err != nil {
		return
	}
	if w.rot != nil && w.rot.due() {
		w.rotate()
		if w.err != nil {
			return
		}
	}
	var err error
	if w.seg != nil {
		err = w.seg.write(line)
	} else {
		_, err = w.out.Write(line)
	}
	if err != nil {
		w.fail(err)
		return
	}
	w.dirty = true
}

func (w *Writer) flushLocked() error {
	if w.err != nil {
		return w.err
	}
	var err error
	if w.seg != nil {
		// Flush ends a zstd block: everything so far decodes, and the
		// encoder keeps its history, so compression stays whole-frame.
		err = w.seg.flush()
	} else {
		err = w.out.Flush()
	}
	if err != nil {
		return w.fail(err)
	}
	w.dirty = false
	return nil
}

// check locks w.mu, which its caller unlocks whatever it returns, and
// returns the state of open interaction id.
func (w *Writer) check(id int) (*ivState, error) {
	w.mu.Lock()
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, errors.New("cassette: writer is closed")
	}
	st := w.open[id]
	if st == nil {
		return nil, fmt.Errorf("cassette: interaction %d is not open", id)
	}
	return st, nil
}

// Request starts a new interaction at offset at from the cassette start
// and returns its ID. Offsets of successive requests must not decrease;
// a smaller one is raised to the previous one.
func (w *Writer) Request(at time.Duration, r Request) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	if w.closed {
		return 0, errors.New("cassette: writer is closed")
	}
	return w.requestLocked(w.nextID, at, r)
}

// RequestAs is [Writer.Request] with the interaction's ID given: id, at
// least the next one Request would take, and later ones number on from
// it. A cut or rebased cassette (cmd/kwrec/internal/cut) keeps the numbers of the
// recording it was made from.
func (w *Writer) RequestAs(id int, at time.Duration, r Request) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("cassette: writer is closed")
	}
	if id < w.nextID {
		return fmt.Errorf("cassette: request %d after request %d; requests are numbered in increasing order", id, w.nextID-1)
	}
	_, err := w.requestLocked(id, at, r)
	return err
}

// requestLocked writes the request line of interaction id; w.mu is held.
func (w *Writer) requestLocked(id int, at time.Duration, r Request) (int, error) {
	if at < w.lastAt {
		at = w.lastAt
	}
	w.lastAt = at
	line, err := encodeRequest(id, at, r)
	if err != nil {
		return 0, fmt.Errorf("cassette: request %d: %w", id, err)
	}
	w.nextID = id + 1
	w.open[id] = &ivState{}
	w.write(line)
	return id, w.err
}

// Response records interaction id's response head.
func (w *Writer) Response(id int, r Response) error {
	st, err := w.check(id)
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	if st.responded {
		return fmt.Errorf("cassette: interaction %d already has a response", id)
	}
	line, err := encodeResponse(id, r)
	if err != nil {
		return fmt.Errorf("cassette: response %d: %w", id, err)
	}
	st.responded = true
	w.write(line)
	return w.err
}

// Frame appends a body frame to interaction id. Frame offsets of one
// interaction must not decrease; a smaller one is raised to the previous.
func (w *Writer) Frame(id int, f Frame) error {
	st, err := w.check(id)
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	if !st.responded {
		return fmt.Errorf("cassette: frame for interaction %d before its response", id)
	}
	if f.At < st.lastAt {
		f.At = st.lastAt
	}
	st.lastAt = f.At
	if w.deltas != nil {
		w.buf = w.deltas.Frame(w.buf[:0], id, f.At, f.Data)
	} else {
		w.buf = cassettefile.AppendFrameLine(w.buf[:0], id, f.At, f.Data, w.bytesForm, false)
	}
	w.write(w.buf)
	return w.err
}

// End records how interaction id ended and closes it.
func (w *Writer) End(id int, e End) error {
	st, err := w.check(id)
	defer w.mu.Unlock()
	if err != nil {
		return err
	}
	if !e.Reason.Valid() {
		return fmt.Errorf("cassette: end of interaction %d: invalid reason %q", id, e.Reason)
	}
	if st.responded && e.At < st.lastAt {
		e.At = st.lastAt
	}
	line, err := encodeEnd(id, e)
	if err != nil {
		return fmt.Errorf("cassette: end %d: %w", id, err)
	}
	delete(w.open, id)
	if w.deltas != nil {
		w.deltas.End(id)
	}
	w.write(line)
	return w.err
}

// WriteInteraction writes a whole interaction (a new ID is assigned) and
// returns its ID. An interaction without End is written without an end
// line, as a cut recording would be.
func (w *Writer) WriteInteraction(in *Interaction) (int, error) {
	id, err := w.Request(in.At, in.Request)
	if err != nil {
		return 0, err
	}
	if in.Response != nil {
		if err := w.Response(id, *in.Response); err != nil {
			return id, err
		}
		for _, f := range in.Frames {
			if err := w.Frame(id, f); err != nil {
				return id, err
			}
		}
	}
	if in.End != nil {
		return id, w.End(id, *in.End)
	}
	return id, nil
}

// Part returns the number of the part the Writer is writing, from 1,
// with [WriterOptions.MaxSize] or [WriterOptions.Rotate]; 0 without.
func (w *Writer) Part() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.rot == nil {
		return 0
	}
	return w.rot.part
}

// Err returns the first error the writer met (a full disk, a closed
// file), or nil. Every later write returns it too; a recorder polls it to
// stop early instead of recording into the void.
func (w *Writer) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Open returns the IDs of interactions not yet ended.
func (w *Writer) Open() []int {
	w.mu.Lock()
	defer w.mu.Unlock()
	ids := make([]int, 0, len(w.open))
	for id := range w.open {
		ids = append(ids, id)
	}
	return ids
}

// Flush pushes every written line to the output now.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.flushLocked()
}

// Close flushes, ends the zstd stream and closes the file opened by
// [Create]. Interactions still open stay without an end line: end them
// first (a recorder ends them with [EndStopped]). Close returns the first
// error the writer met; a cassette whose Close failed is incomplete.
func (w *Writer) Close() error {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return w.err
	}
	w.closed = true
	close(w.stop)
	_ = w.flushLocked()
	if w.seg != nil && w.err == nil {
		if err := w.seg.close(); err != nil {
			w.fail(err)
		}
	}
	if w.closer != nil {
		if err := w.closer.Close(); err != nil {
			w.fail(err)
		}
	}
	err := w.err
	w.mu.Unlock()
	<-w.done
	return err
}

// Write writes a whole cassette to out, compressed or not.
func Write(out io.Writer, c *Cassette, compress bool) error {
	return writeAll(out, c, WriterOptions{Compress: compress})
}

// writeAll writes a whole cassette to out as opts say, flushing once at
// the end.
func writeAll(out io.Writer, c *Cassette, opts WriterOptions) error {
	opts.FlushInterval = time.Hour
	w, err := NewWriter(out, c.Header, opts)
	if err != nil {
		return err
	}
	for _, in := range c.Interactions {
		if _, err := w.WriteInteraction(in); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

// Save writes c to path atomically (see [WriteAtomic]), compressed when
// path ends in ".zst". The old file stays untouched if anything fails.
func Save(path string, c *Cassette) error {
	opts := WriterOptions{Compress: strings.HasSuffix(path, ".zst")}
	return WriteAtomic(path, func(w io.Writer) error { return writeAll(w, c, opts) })
}

// WriteAtomic writes path through write: to a temporary file in the same
// directory, synced, then renamed over path, so readers see the old file
// or the new one, never a part. If write fails the temporary file is
// removed and path is untouched.
func WriteAtomic(path string, write func(io.Writer) error) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		return fileError(path, err)
	}
	defer os.Remove(tmp.Name()) // no-op after the rename
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("cassette: %w", err)
	}
	return nil
}
