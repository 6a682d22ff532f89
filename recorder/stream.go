package recorder

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder/internal/framing"
)

// errBodyClosed is what a Read after Close returns, as net/http does.
var errBodyClosed = errors.New("http: read on closed response body")

// readSize is how much the pump asks the server for at a time.
const readSize = 32 << 10

// stream is a recorded response body. Its pump goroutine reads the server's
// body, timestamps each chunk on arrival, queues it for the client and
// frames it for the cassette; the client's Read takes from the queue. So
// the client sees bytes as soon as they arrive and a slow client does not
// delay the timestamps.
type stream struct {
	rec      *Recorder
	id       int
	ctx      context.Context
	upstream io.ReadCloser
	reqAt    time.Time
	respAt   time.Time
	timeout  time.Duration // the watch's timeoutSeconds, 0 if none
	gzip     bool          // decode a copy of the body for the cassette
	framer   framing.Framer
	ex       *Exchange // request and response head, for frame redaction
	arrival  time.Time // arrival of the chunk being framed; pump only

	mu           sync.Mutex
	cond         sync.Cond // L is &mu; signalled on every change below
	queue        [][]byte
	queued       int
	end          error // what the client reads once the queue is empty
	ctxErr       error
	clientClosed bool
	stopping     bool // Recorder.Close ended the stream
	upClosed     bool
}

var _ io.ReadCloser = (*stream)(nil)

// Read returns bytes the pump queued, waiting for some; it returns early
// when the request's context is done.
func (s *stream) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.queue) == 0 && s.end == nil && s.ctxErr == nil && !s.clientClosed {
		s.cond.Wait()
	}
	switch {
	case s.clientClosed:
		return 0, errBodyClosed
	case len(s.queue) > 0:
		n := copy(p, s.queue[0])
		if n == len(s.queue[0]) {
			s.queue[0] = nil
			s.queue = s.queue[1:]
		} else {
			s.queue[0] = s.queue[0][n:]
		}
		s.queued -= n
		s.cond.Broadcast() // the pump may wait for room
		return n, nil
	case s.ctxErr != nil:
		// A cancelled request reads its context's error, as from
		// net/http, even when the upstream's close error came first.
		return 0, s.ctxErr
	}
	return 0, s.end
}

// Close stops the stream early (the cassette records
// [cassettes.EndStopped]) and releases the connection.
func (s *stream) Close() error {
	s.mu.Lock()
	if s.clientClosed {
		s.mu.Unlock()
		return nil
	}
	s.clientClosed = true
	s.queue, s.queued = nil, 0
	s.cond.Broadcast()
	s.mu.Unlock()
	return s.closeUpstream()
}

// stop is Recorder.Close's way to end the stream.
func (s *stream) stop() {
	s.mu.Lock()
	s.stopping = true
	s.cond.Broadcast()
	s.mu.Unlock()
	s.rec.noteErr(s.closeUpstream())
}

// closeUpstream closes the server's body once; that unblocks the pump's
// read.
func (s *stream) closeUpstream() error {
	s.mu.Lock()
	if s.upClosed {
		s.mu.Unlock()
		return nil
	}
	s.upClosed = true
	s.mu.Unlock()
	return s.upstream.Close()
}

// deliver queues chunk for the client, waiting while the queue is full.
func (s *stream) deliver(chunk []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.queued >= s.rec.opts.MaxBuffered && !s.clientClosed && !s.stopping && s.ctxErr == nil {
		s.cond.Wait()
	}
	if s.clientClosed {
		return
	}
	s.queue = append(s.queue, chunk)
	s.queued += len(chunk)
	s.cond.Broadcast()
}

// emit writes one frame to the cassette.
func (s *stream) emit(data []byte) {
	// One allocation for the frame and its exchange; the heads' parse is
	// the stream's (see exMeta).
	fx := &struct {
		ex Exchange
		f  cassettes.Frame
	}{f: cassettes.Frame{At: s.arrival.Sub(s.respAt), Data: data}}
	fx.ex = Exchange{Request: s.ex.Request, Response: s.ex.Response, Frame: &fx.f, meta: s.ex.info()}
	s.rec.redact(&fx.ex)
	s.rec.noteErr(s.rec.w.Frame(s.id, fx.f))
}

// clientReader is the pump's view of the server's body: every chunk read
// is timestamped and queued for the client, and framed unless the body is
// gzip, whose decoded copy is framed instead.
type clientReader struct {
	s   *stream
	err error // the server body's error; io.EOF at a clean end
}

func (c *clientReader) Read(p []byte) (int, error) {
	n, err := c.s.upstream.Read(p)
	if n > 0 {
		c.s.arrival = c.s.rec.clock.Now()
		c.s.deliver(append([]byte(nil), p[:n]...))
		if !c.s.gzip {
			c.s.framer.Write(p[:n])
		}
	}
	if err != nil {
		c.err = err
	}
	return n, err
}

// pump reads the server's body to its end, queueing it for the client
// and framing it for the cassette, then records the interaction's end and
// hands the client what its reads end with.
func (s *stream) pump() {
	defer s.rec.wg.Done()
	stopAfter := context.AfterFunc(s.ctx, func() {
		s.mu.Lock()
		s.ctxErr = s.ctx.Err()
		s.cond.Broadcast()
		s.mu.Unlock()
		s.closeUpstream()
	})
	defer stopAfter()

	src := &clientReader{s: s}
	var decodeErr error
	if s.gzip {
		decodeErr = s.decode(src)
	}
	buf := make([]byte, readSize)
	for src.err == nil {
		src.Read(buf)
	}
	s.framer.Flush()

	upErr := src.err
	if upErr == io.EOF {
		upErr = nil
	}
	end, clientErr := s.ending(upErr, decodeErr)
	// The end is in the cassette before the client sees it, so a test that
	// read a body to its end finds the whole interaction recorded.
	s.rec.noteErr(s.rec.w.End(s.id, end))
	s.rec.mu.Lock()
	delete(s.rec.open, s)
	s.rec.mu.Unlock()
	s.closeUpstream()
	s.mu.Lock()
	s.end = clientErr
	s.cond.Broadcast()
	s.mu.Unlock()
}

// ending is how the stream ended, given the server body's error upErr
// (nil at a clean end) and the gzip decoding's decodeErr: the cassette's
// end of the interaction, and the error the client's reads end with.
func (s *stream) ending(upErr, decodeErr error) (cassettes.End, error) {
	s.mu.Lock()
	stopping, clientClosed := s.stopping, s.clientClosed
	s.mu.Unlock()
	end := cassettes.End{At: s.rec.clock.Since(s.respAt)}
	clientErr := upErr
	switch {
	case stopping:
		end.Reason, clientErr = cassettes.EndStopped, ErrStopped
	case clientClosed:
		end.Reason = cassettes.EndStopped
	case upErr == nil && decodeErr != nil:
		end.Reason, end.Error = cassettes.EndReset, decodeErr.Error()
	case upErr == nil:
		end.Reason = cassettes.EndEOF
		// The server ends a watch at its timeoutSeconds; client-go asks for
		// a random 5-10 minutes, and a clean end near it is a timeout.
		if s.timeout > 0 && s.rec.clock.Since(s.reqAt) >= s.timeout-time.Second {
			end.Reason = cassettes.EndTimeout
		}
	default:
		end.Reason = errReason(s.ctx, upErr)
		if end.Reason == cassettes.EndReset {
			end.Error = upErr.Error()
		}
	}
	if clientErr == nil {
		clientErr = io.EOF
	}
	return end, clientErr
}

// decode frames the gzip-decoded copy of the body while src passes the
// encoded bytes to the client. It returns a decoding error, if any; src
// keeps the server's own error.
func (s *stream) decode(src *clientReader) error {
	zr, err := gzip.NewReader(src)
	if err != nil {
		if src.err != nil {
			return nil // the server's error, not a decoding one
		}
		return fmt.Errorf("recorder: decoding the gzip body: %w", err)
	}
	buf := make([]byte, readSize)
	for {
		n, err := zr.Read(buf)
		if n > 0 {
			s.arrival = s.rec.clock.Now()
			s.framer.Write(buf[:n])
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			if src.err != nil {
				return nil
			}
			return fmt.Errorf("recorder: decoding the gzip body: %w", err)
		}
	}
}
