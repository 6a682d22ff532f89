package cassettes

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
)

// rotation is what a [Writer] with [WriterOptions.MaxSize] or
// [WriterOptions.Rotate] needs to start its next part.
type rotation struct {
	path    string        // as given to Create
	header  Header        // part 1's
	opts    WriterOptions // each part's, without MaxSize and Rotate
	maxSize int64
	every   time.Duration
	clock   clock.PassiveClock
	part    int
	started time.Time     // when the current part started
	file    *countingFile // the current part's
}

// countingFile counts the bytes written to a part file. The count is
// atomic: the zstd encoder may write from its own goroutine.
type countingFile struct {
	f *os.File
	n atomic.Int64
}

func (c *countingFile) Write(p []byte) (int, error) {
	n, err := c.f.Write(p)
	c.n.Add(int64(n))
	return n, err
}

// due reports whether the next line starts a new part.
func (r *rotation) due() bool {
	return (r.maxSize > 0 && r.file.n.Load() >= r.maxSize) ||
		(r.every > 0 && r.clock.Since(r.started) >= r.every)
}

// createParts is [Create] with rotation: part 1 now, the others as
// [Writer.write] finds them due.
func createParts(path string, h Header, opts WriterOptions) (*Writer, error) {
	if opts.MaxSize < 0 || opts.Rotate < 0 {
		return nil, errors.New("cassette: MaxSize and Rotate must not be negative")
	}
	r := &rotation{path: path, maxSize: opts.MaxSize, every: opts.Rotate, clock: opts.Clock, part: 1}
	if r.clock == nil {
		r.clock = clock.RealClock{}
	}
	opts.MaxSize, opts.Rotate = 0, 0
	r.opts = opts
	h.Part = 1
	r.header = h
	name := PartName(path, 1)
	f, err := os.Create(name)
	if err != nil {
		return nil, fileError(name, err)
	}
	r.file, r.started = &countingFile{f: f}, r.clock.Now()
	w, err := NewWriter(r.file, h, opts)
	if err != nil {
		f.Close()
		os.Remove(name)
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	w.mu.Lock()
	w.closer, w.name, w.rot = f, name, r
	w.mu.Unlock()
	return w, nil
}

// rotate ends the current part, a whole cassette file on its own, and
// starts the next with its header; w.mu is held. Interactions still open
// go on in the next part.
func (w *Writer) rotate() {
	r := w.rot
	if w.flushLocked() != nil {
		return
	}
	if w.seg != nil {
		if err := w.seg.close(); err != nil {
			w.fail(err)
			return
		}
	}
	err := w.closer.Close()
	w.closer = nil
	if err != nil {
		w.fail(err)
		return
	}
	r.part++
	w.name = PartName(r.path, r.part)
	// The part gets its name once its header line is in it: a recorder
	// killed in between leaves no part that cannot say which it is.
	dir, base := filepath.Split(w.name)
	if dir == "" {
		dir = "."
	}
	f, err := os.CreateTemp(dir, "."+base+".tmp*")
	if err != nil {
		w.fail(err)
		return
	}
	w.closer = f
	r.file, r.started = &countingFile{f: f}, r.clock.Now()
	if err := w.setOutput(r.file, compressionOf(r.opts)); err != nil {
		w.fail(err)
		return
	}
	h := r.header
	h.Part = r.part
	line, err := encodeHeader(h)
	if err != nil { // it encoded for part 1
		w.fail(err)
		return
	}
	w.rot = nil // the header line starts the part: no rotation before it
	w.write(line)
	w.rot = r
	if w.flushLocked() != nil {
		return
	}
	if err := os.Rename(f.Name(), w.name); err != nil {
		w.fail(err)
		return
	}
	if r.opts.OnPart != nil {
		r.opts.OnPart(r.part)
	}
}
