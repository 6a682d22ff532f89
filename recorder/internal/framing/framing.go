// Package framing splits HTTP response bodies into the frames a cassette
// stores: one JSON watch event per frame, one length-prefixed protobuf
// watch event per frame, or one whole document.
//
// Each framer is an incremental splitter used like an [io.Writer]: the
// recorder writes bytes as they arrive, in whatever chunks the server sent,
// and the framer calls its Emit function once per completed frame. Flush
// ends the stream and emits what is left. The frames always concatenate to
// exactly the bytes written, so a recorded body is never altered by
// framing, even when it is malformed.
//
// The tests hold the same splitters as pure functions over a whole body
// (splitJSON, splitProto) and check that feeding a body in any chunks
// gives the frames of the pure function.
package framing

import "encoding/binary"

// DefaultMax bounds the bytes a framer buffers for one frame when its Max
// is zero. A frame that grows larger is emitted in pieces of Max bytes
// (their concatenation is still exact), so a runaway body cannot exhaust
// memory. The cassette format caps a line at 256 MiB.
const DefaultMax = 64 << 20

// Emit receives one frame. The slice is freshly allocated and owned by the
// callee.
type Emit func(frame []byte)

// orDefault is a framer's Max, or [DefaultMax] when it is not positive.
func orDefault(max int) int {
	if max <= 0 {
		return DefaultMax
	}
	return max
}

// jsonScan is the state of a scan over a stream of JSON values. It knows
// just enough JSON to find where a top-level value ends: strings (with
// escapes, so a '}' or a newline escape inside a string is not an end) and
// nesting depth. It does not validate.
type jsonScan struct {
	depth    int
	inString bool
	escape   bool
	scalar   bool // a top-level number, true, false or null in progress
	done     bool // a top-level value ended; the frame extends to the next '\n'
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

// step consumes c. It returns cut >= 0 when a frame ends: cut is 1 when
// the frame ends after c, 0 when it ends before c (c then starts the next
// frame and has already been consumed by the reset state).
func (s *jsonScan) step(c byte) (cut int) {
	if s.done {
		switch {
		case c == '\n':
			*s = jsonScan{}
			return 1
		case isSpace(c):
			return -1
		}
		// Another value follows on the same line: the frame ends before it.
		*s = jsonScan{}
		s.step(c)
		return 0
	}
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '"':
			s.inString = false
			if s.depth == 0 {
				s.done = true
			}
		}
		return -1
	}
	if s.scalar {
		if isSpace(c) || c == '{' || c == '[' || c == '}' || c == ']' || c == '"' || c == ',' {
			s.scalar = false
			s.done = true
			return s.step(c)
		}
		return -1
	}
	switch c {
	case '"':
		s.inString = true
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
		if s.depth <= 0 { // <0 only for malformed input: end the value there
			s.depth = 0
			s.done = true
		}
	case ' ', '\t', '\r', '\n':
	default:
		if s.depth == 0 {
			s.scalar = true
		}
	}
	return -1
}

// JSON frames a stream of JSON values, such as a Kubernetes JSON watch
// response (one event object per line). A frame is one top-level value
// with the whitespace before it and the whitespace after it up to and
// including the first newline. Chunk boundaries do not matter: the server
// packs backlogs into 2048-byte chunks that split events, and puts several
// small events in one chunk.
type JSON struct {
	// Emit receives every frame; it must be set.
	Emit Emit
	// Max bounds one frame's size; default [DefaultMax].
	Max int

	s   jsonScan
	buf []byte
}

// Write consumes p, emitting every frame it completes. It never fails.
func (f *JSON) Write(p []byte) (int, error) {
	max := orDefault(f.Max)
	start := 0 // start of the current frame's bytes within p
	for i, c := range p {
		cut := f.s.step(c)
		if cut < 0 {
			continue
		}
		end := i + cut
		f.emit(p[start:end])
		start = end
	}
	f.buf = append(f.buf, p[start:]...)
	for len(f.buf) >= max {
		piece := append([]byte(nil), f.buf[:max]...)
		f.buf = append(f.buf[:0], f.buf[max:]...)
		f.Emit(piece)
	}
	return len(p), nil
}

// emit emits the buffered bytes plus tail as one frame.
func (f *JSON) emit(tail []byte) {
	frame := make([]byte, len(f.buf)+len(tail))
	copy(frame, f.buf)
	copy(frame[len(f.buf):], tail)
	f.buf = f.buf[:0]
	if len(frame) > 0 {
		f.Emit(frame)
	}
}

// Flush emits the bytes of an unfinished frame, if any, as a last frame
// (a value cut by the end of the stream, or a value without a final
// newline) and resets the framer.
func (f *JSON) Flush() {
	f.emit(nil)
	f.s = jsonScan{}
}

// Pending returns how many bytes wait for the end of their frame.
func (f *JSON) Pending() int { return len(f.buf) }

// Proto frames a Kubernetes protobuf watch stream
// (application/vnd.kubernetes.protobuf;stream=watch): each event is a
// 4-byte big-endian length followed by that many bytes. A frame is the
// prefix and the message together, bytes exact.
//
// A length larger than Max means the stream is not what it claims; the
// framer then stops interpreting it and emits every later byte in chunks
// as written, so nothing is lost.
type Proto struct {
	// Emit receives every frame; it must be set.
	Emit Emit
	// Max bounds one message's length; default [DefaultMax].
	Max int

	buf    []byte
	broken bool
}

// Write consumes p, emitting every frame it completes. It never fails.
func (f *Proto) Write(p []byte) (int, error) {
	if f.broken {
		f.Emit(append([]byte(nil), p...))
		return len(p), nil
	}
	max := orDefault(f.Max)
	f.buf = append(f.buf, p...)
	for {
		n, ok := protoLen(f.buf, max)
		if !ok {
			f.broken = true
			rest := f.buf
			f.buf = nil
			if len(rest) > 0 {
				f.Emit(rest)
			}
			return len(p), nil
		}
		if n < 0 || len(f.buf) < n {
			break
		}
		f.Emit(append([]byte(nil), f.buf[:n]...))
		f.buf = f.buf[n:]
	}
	if len(f.buf) == 0 {
		f.buf = nil // release the backing array of emitted frames
	} else if cap(f.buf) > 2*len(f.buf)+4096 {
		f.buf = append([]byte(nil), f.buf...)
	}
	return len(p), nil
}

// protoLen returns the whole frame length (prefix included) at the start
// of b, -1 when the prefix is not complete, and ok=false when the length
// exceeds max.
func protoLen(b []byte, max int) (n int, ok bool) {
	if len(b) < 4 {
		return -1, true
	}
	l := binary.BigEndian.Uint32(b)
	if uint64(l) > uint64(max) {
		return 0, false
	}
	return 4 + int(l), true
}

// Flush emits the bytes of a cut last frame, if any, and resets the framer.
func (f *Proto) Flush() {
	if len(f.buf) > 0 {
		f.Emit(f.buf)
	}
	f.buf = nil
	f.broken = false
}

// Pending returns how many bytes wait for the end of their frame.
func (f *Proto) Pending() int { return len(f.buf) }

// Whole frames a body as one frame holding all of it: a JSON or protobuf
// get or list response. Bodies longer than Max are emitted in pieces of
// Max bytes.
type Whole struct {
	// Emit receives the frame; it must be set.
	Emit Emit
	// Max bounds one frame's size; default [DefaultMax].
	Max int

	buf []byte
}

// Write buffers p. It never fails.
func (f *Whole) Write(p []byte) (int, error) {
	max := orDefault(f.Max)
	f.buf = append(f.buf, p...)
	for len(f.buf) >= max {
		f.Emit(append([]byte(nil), f.buf[:max]...))
		f.buf = append(f.buf[:0], f.buf[max:]...)
	}
	return len(p), nil
}

// Flush emits the buffered body, if any, and resets the framer.
func (f *Whole) Flush() {
	if len(f.buf) > 0 {
		f.Emit(f.buf)
	}
	f.buf = nil
}

// Pending returns how many bytes are buffered.
func (f *Whole) Pending() int { return len(f.buf) }

// Chunks frames a body as the chunks written: one frame per Write.
type Chunks struct {
	// Emit receives every frame; it must be set.
	Emit Emit
}

// Write emits a copy of p as one frame (nothing for an empty p).
func (f *Chunks) Write(p []byte) (int, error) {
	if len(p) > 0 {
		f.Emit(append([]byte(nil), p...))
	}
	return len(p), nil
}

// Flush does nothing: chunks are never buffered.
func (f *Chunks) Flush() {}

// Pending always returns 0.
func (f *Chunks) Pending() int { return 0 }

// Framer is what the four framers have in common.
type Framer interface {
	Write(p []byte) (int, error)
	Flush()
	Pending() int
}

var (
	_ Framer = (*JSON)(nil)
	_ Framer = (*Proto)(nil)
	_ Framer = (*Whole)(nil)
	_ Framer = (*Chunks)(nil)
)
