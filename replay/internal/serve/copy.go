package serve

import (
	"errors"
	"io"
	"net/http"
	"sync"
)

// ErrWrite is a write to the client that failed: it went away.
var ErrWrite = errors.New("kwrec replay: writing to the client")

// Frames is a replayed body read frame by frame.
type Frames interface {
	// Chunk returns the next frame's bytes, valid until the next call;
	// its error is the body's end (io.EOF when clean).
	Chunk() ([]byte, error)
	// Ready reports whether Chunk would return without waiting.
	Ready() bool
}

// CopyFrames writes b's frames to w as they come and flushes once no
// further frame is ready, so that a watch that is behind (at speed 0,
// always) gets its backlog in few large writes: the frames that are ready
// together are gathered in a pooled buffer of writeBatch and written at
// once. An idle watch holds no buffer. It returns b's final error
// (io.EOF at a clean end), or [ErrWrite].
func CopyFrames(w http.ResponseWriter, rc *http.ResponseController, b Frames) error {
	for {
		data, err := b.Chunk()
		if err != nil {
			return err
		}
		if !b.Ready() || len(data) >= writeBatch {
			if _, err := w.Write(data); err != nil {
				return ErrWrite
			}
			rc.Flush()
			continue
		}
		if err := copyBatch(w, rc, b, data); err != nil {
			return err
		}
	}
}

// copyBatch writes data and the frames of b ready after it in one write.
func copyBatch(w http.ResponseWriter, rc *http.ResponseController, b Frames, data []byte) error {
	var err error
	bp := writeBatches.Get().(*[]byte)
	batch := append((*bp)[:0], data...)
	for err == nil && len(batch) < writeBatch && b.Ready() {
		if data, err = b.Chunk(); err == nil {
			batch = append(batch, data...)
		}
	}
	_, werr := w.Write(batch)
	*bp = batch[:0]
	writeBatches.Put(bp)
	if werr != nil {
		return ErrWrite
	}
	rc.Flush()
	return err
}

// writeBatch is about how much CopyFrames gathers for one write: a few
// HTTP/2 frames of the default 16 KB.
const writeBatch = 64 << 10

// writeBatches holds the buffers of CopyFrames. A new one starts at 16 KB
// and grows as a batch needs: a paced watch that is late gathers a few
// small frames, and a thousand of them late together (a burst at speed
// 1 on a busy machine) held large buffers each, garbage whose collection
// made the next bursts later still.
var writeBatches = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// CopyBody writes any other body to w, flushing every read. It returns
// body's final error (io.EOF at a clean end), or [ErrWrite].
func CopyBody(w http.ResponseWriter, rc *http.ResponseController, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return ErrWrite
			}
			rc.Flush()
		}
		if err != nil {
			return err
		}
	}
}
