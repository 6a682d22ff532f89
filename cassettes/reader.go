package cassettes

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// MaxLineSize bounds one line of the text form (a whole list response is
// one line). Longer lines are refused rather than read into memory.
const MaxLineSize = 256 << 20

// Reader streams a cassette entry by entry in constant memory (one line at
// a time), checking each line against the ones before it: interaction
// numbers, offsets that never decrease, a response before frames, nothing
// after an end.
type Reader struct {
	name string
	// sc reads the lines, and keeps where they are and the seek
	// comments: a public Reader's checks every frame, kwrec's index's
	// (see newScanReader) as it says.
	sc *cassettefile.Scanner
	// closers are the files opened by Open.
	closers []io.Closer
	header  Header
	first   int // the first file's part number (1 for one file)
	err     error
	ivs     map[int]*readState
	maxID   int
	lastAt  time.Duration

	// ext is what the last line said of deltas (delta.go).
	ext cassettefile.FrameExt
}

type readState struct {
	responded bool
	ended     bool
	lastAt    time.Duration
	line      int
}

// NewReader reads the header of the cassette in r, compressed or plain
// (detected by zstd's magic bytes). name is used in error messages.
//
// A file cut before its header line is whole (empty, inside the zstd magic,
// inside the header line) holds nothing to recover: the error wraps
// [ErrTruncated] and names the byte offset of the cut, and no Reader is
// returned. An empty file also wraps [ErrNotCassette].
func NewReader(r io.Reader, name string) (*Reader, error) {
	if s, ok := r.(cassettefile.Scanned); ok {
		// kwrec's index, reading through a Scanner of its own (which
		// says how much of a frame is checked and keeps where each line
		// is); no one outside the module can make one.
		return newReader(s.S, false)
	}
	return newReader(cassettefile.NewScanner([]cassettefile.Part{{R: r, Name: name}}, cassettefile.ScanOptions{}), false)
}

// newReader reads the header of the cassette sc reads; anyPart lets it
// start at any part of a rotated recording (to read its header).
func newReader(sc *cassettefile.Scanner, anyPart bool) (*Reader, error) {
	name := sc.Name()
	rd := &Reader{name: name, ivs: map[int]*readState{}, sc: sc}
	h, err := rd.startFile(sc.Start())
	if err != nil {
		return nil, err
	}
	if h.Part > 1 && !h.Rebased && !anyPart {
		return nil, &ParseError{File: name, Line: 1, Offset: -1, Err: ErrPart,
			Msg: fmt.Sprintf("part %d of a rotated recording: read it with the other parts, from part 1 (cassettes.Open, or kwrec show '%s')", h.Part, partPattern(name))}
	}
	if sc.Parts() > 1 && h.Part != 1 && !h.Rebased {
		return nil, &ParseError{File: name, Line: 1, Offset: -1, Err: ErrPart,
			Msg: "not the first part of a rotated recording, yet read as one"}
	}
	rd.header, rd.first = h, max(h.Part, 1)
	return rd, nil
}

// startFile reads the header line of the file the scanner started (the
// only one, or a part), which reported err, and returns the header.
func (rd *Reader) startFile(err error) (Header, error) {
	name, sc := rd.name, rd.sc
	switch {
	case errors.Is(err, cassettefile.ErrEmptyFile):
		return Header{}, &ParseError{File: name, Offset: 0, Err: errEmpty,
			Msg: "empty file (a cassette cut before its first byte, or not a cassette): nothing can be recovered; re-record it"}
	case errors.Is(err, cassettefile.ErrCutMagic):
		// What a recorder killed inside its first write leaves of the
		// compressed form; nothing else starts with these bytes.
		return Header{}, &ParseError{File: name, Offset: sc.Pos(), Err: ErrTruncated,
			Msg: "cut inside the zstd magic (the first 4 bytes of a compressed cassette): nothing can be recovered; re-record it"}
	case errors.Is(err, cassettefile.ErrBadZstd):
		return Header{}, &ParseError{File: name, Offset: 0, Err: ErrNotCassette, Msg: err.Error()}
	case err != nil:
		return Header{}, &ParseError{File: name, Offset: -1, Err: err, Msg: err.Error()}
	}
	line, err := rd.readLine()
	switch {
	case errors.Is(err, io.EOF):
		sc.Close()
		return Header{}, &ParseError{File: name, Offset: -1, Err: ErrNotCassette, Msg: "empty cassette, not a kwrec cassette"}
	case err != nil && !errors.Is(err, cassettefile.ErrNoNewline):
		err = rd.wrap(err)
		sc.Close()
		return Header{}, err
	}
	h, perr := decodeHeader(line)
	if perr != nil {
		sc.Close()
		if incompleteJSON(bytes.TrimSpace(line)) && (err != nil || sc.AtEnd()) {
			// The start of a JSON object, and nothing after it: the
			// header line cut.
			return Header{}, &ParseError{File: name, Line: 1, Offset: sc.Pos(), Err: ErrTruncated,
				Msg: "cut inside the header line: nothing can be recovered; re-record it"}
		}
		perr.File = name
		return Header{}, perr
	}
	return h, nil
}

// errEmpty is what an empty file wraps: a cut before the first byte, and
// not (or no longer) a cassette.
var errEmpty = errors.Join(ErrTruncated, ErrNotCassette)

// errOpenAtEnd is what a cassette ending with interactions open wraps.
var errOpenAtEnd = errors.Join(ErrTruncated, ErrOpenAtEnd)

// openFile opens the one cassette file path for streaming.
func openFile(path string) (*Reader, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fileError(path, err)
	}
	r, err := NewReader(f, path)
	if err != nil {
		f.Close()
		return nil, err
	}
	r.closers = []io.Closer{f}
	return r, nil
}

// fileError names path once: "x.kwrec: no such file or directory".
func fileError(path string, err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", path, pe.Err)
	}
	return fmt.Errorf("%s: %w", path, err)
}

// Header returns the cassette's header.
func (r *Reader) Header() Header { return r.header }

// File returns the name of the file the last entry [Reader.Next]
// returned was read from: the part it is in, in a rotated recording.
func (r *Reader) File() string { return r.name }

// Close releases the decoder and the files opened by [Open].
func (r *Reader) Close() error {
	r.sc.Close()
	var errs []error
	for _, c := range r.closers {
		errs = append(errs, c.Close())
	}
	r.closers = nil
	return errors.Join(errs...)
}

// wrap turns a read error into a ParseError naming where it happened.
func (r *Reader) wrap(err error) error {
	var pe *ParseError
	if errors.As(err, &pe) {
		return err
	}
	if r.sc.Compressed() && !errors.Is(err, io.EOF) {
		off := r.sc.Pos()
		// readLine counted the line it failed to read: the lines before
		// it are the complete ones.
		done := max(r.sc.LineNo()-1, 0)
		if errors.Is(err, io.ErrUnexpectedEOF) && r.header.Version == 0 {
			return &ParseError{File: r.name, Offset: off, Err: ErrTruncated,
				Msg: "compressed stream cut inside the header line (a recorder killed before its first flush?): nothing can be recovered; re-record it"}
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return &ParseError{File: r.name, Offset: off, Err: ErrTruncated,
				Msg: fmt.Sprintf("compressed stream cut after line %d (a recorder killed mid-way?); everything before is readable: run `kwrec lint --fix` to keep it", done)}
		}
		return &ParseError{File: r.name, Offset: off, Err: ErrSyntax,
			Msg: fmt.Sprintf("corrupt zstd data after line %d: %v", done, err)}
	}
	return &ParseError{File: r.name, Line: r.sc.LineNo(), Offset: -1, Err: err, Msg: err.Error()}
}

// readLine returns the next line without its newline, as the scanner
// reads it, a line too long as a ParseError.
func (r *Reader) readLine() ([]byte, error) {
	line, err := r.sc.ReadLine()
	if err == cassettefile.ErrLineTooLong {
		return nil, &ParseError{File: r.name, Line: r.sc.LineNo() + 1, Offset: -1, Err: ErrSyntax,
			Msg: fmt.Sprintf("line longer than %d bytes", MaxLineSize)}
	}
	return line, err
}

// Next returns the next entry. At the end it returns io.EOF, or an error
// wrapping [ErrTruncated] when the cassette was cut: a cut last line, a
// cut zstd stream, or interactions that never got an end line. Blank lines
// and lines starting with '#' are comments and are skipped.
func (r *Reader) Next() (Entry, error) {
	if r.err != nil {
		return Entry{}, r.err
	}
	e, err := r.next()
	if err != nil {
		r.err = err
	}
	return e, err
}

func (r *Reader) next() (Entry, error) {
	for {
		line, err := r.readLine()
		if errors.Is(err, io.EOF) {
			if more, err := r.nextPart(); more || err != nil {
				if err != nil {
					return Entry{}, err
				}
				continue
			}
			return Entry{}, r.atEOF()
		}
		if errors.Is(err, cassettefile.ErrNoNewline) {
			// A last line without a newline: complete if it parses, else cut.
			if t := bytes.TrimSpace(line); len(t) == 0 || t[0] == '#' {
				if more, err := r.nextPart(); more || err != nil {
					if err != nil {
						return Entry{}, err
					}
					continue
				}
				return Entry{}, r.atEOF()
			}
			if e, perr := r.decodeLine(line); perr == nil {
				if verr := r.check(&e); verr != nil {
					return Entry{}, verr
				}
				return e, nil
			}
			return Entry{}, &ParseError{File: r.name, Line: r.sc.LineNo(), Offset: r.sc.Pos(), Err: ErrTruncated,
				Msg: "the last line is cut (no newline and not a complete entry); everything before it is readable: run `kwrec lint --fix` to keep it"}
		}
		if err != nil {
			return Entry{}, r.wrap(err)
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 || t[0] == '#' {
			// (The scanner keeps the seek comments.)
			continue
		}
		e, perr := r.decodeLine(t)
		if perr != nil {
			perr.File = r.name
			if incompleteJSON(t) && r.sc.AtEnd() {
				// The last line is not complete JSON: cut mid-line.
				perr.Err = ErrTruncated
				perr.Offset = r.sc.Pos()
				perr.Msg = "the last line is cut (not a complete entry); everything before it is readable: run `kwrec lint --fix` to keep it"
			}
			return Entry{}, perr
		}
		if verr := r.check(&e); verr != nil {
			return Entry{}, verr
		}
		return e, nil
	}
}

// incompleteJSON reports whether b is the beginning of a JSON value cut
// before its end, as opposed to JSON that is wrong.
func incompleteJSON(b []byte) bool {
	var se *json.SyntaxError
	err := json.Unmarshal(b, new(json.RawMessage))
	return errors.As(err, &se) && se.Error() == "unexpected end of JSON input"
}

func (r *Reader) bad(format string, args ...any) error {
	return &ParseError{File: r.name, Line: r.sc.LineNo(), Offset: -1, Err: ErrSyntax, Msg: fmt.Sprintf(format, args...)}
}

// validate checks e against the entries before it.
func (r *Reader) validate(e *Entry) error {
	st := r.ivs[e.ID]
	switch {
	case e.Request != nil:
		if st != nil {
			return r.bad("request %d appears twice (first on line %d); number each interaction once", e.ID, st.line)
		}
		if e.ID <= r.maxID {
			return r.bad("request %d after request %d; requests are numbered in increasing order", e.ID, r.maxID)
		}
		if e.At < r.lastAt {
			return r.bad("request %d at %v starts before the previous request (%v); request offsets never decrease", e.ID, e.At, r.lastAt)
		}
		r.maxID, r.lastAt = e.ID, e.At
		r.ivs[e.ID] = &readState{line: r.sc.LineNo()}
		return nil
	case st == nil:
		return r.bad("%s for interaction %d, which has no request line before it", e.kind(), e.ID)
	case st.ended:
		return r.bad("%s for interaction %d after its end line", e.kind(), e.ID)
	}
	switch {
	case e.Response != nil:
		if st.responded {
			return r.bad("second response for interaction %d", e.ID)
		}
		st.responded = true
	case e.Frame != nil:
		if !st.responded {
			return r.bad("frame for interaction %d before its response line", e.ID)
		}
		if e.Frame.At < st.lastAt {
			return r.bad("frame of interaction %d at %v is before the previous frame (%v); frame offsets never decrease", e.ID, e.Frame.At, st.lastAt)
		}
		st.lastAt = e.Frame.At
	case e.End != nil:
		if st.responded && e.End.At < st.lastAt {
			return r.bad("end of interaction %d at %v is before its last frame (%v)", e.ID, e.End.At, st.lastAt)
		}
		st.ended = true
		// Ended interactions need no more state than "ended"; drop the
		// rest so long cassettes stay in constant memory.
		r.ivs[e.ID] = &readState{ended: true, line: st.line}
	}
	return nil
}

func (e *Entry) kind() string {
	switch {
	case e.Response != nil:
		return "response"
	case e.Frame != nil:
		return "frame"
	case e.End != nil:
		return "end"
	}
	return "request"
}

// atEOF reports interactions left open at the end of the text.
func (r *Reader) atEOF() error {
	var open []int
	for id, st := range r.ivs {
		if !st.ended {
			open = append(open, id)
		}
	}
	if len(open) == 0 {
		return io.EOF
	}
	sort.Ints(open)
	ids := make([]string, len(open))
	for i, id := range open {
		ids[i] = fmt.Sprint(id)
	}
	if r.header.Part == 1 && r.sc.Parts() == 1 {
		return &ParseError{File: r.name, Line: r.sc.LineNo(), Offset: r.sc.Pos(), Err: errOpenAtEnd,
			Msg: fmt.Sprintf("part 1 of a rotated recording ends with interaction(s) %s still open, which go on in the next parts: read it with them (cassettes.Open, or kwrec show '%s')", strings.Join(ids, ", "), partPattern(r.name))}
	}
	return &ParseError{File: r.name, Line: r.sc.LineNo(), Offset: r.sc.Pos(), Err: errOpenAtEnd,
		Msg: fmt.Sprintf("cassette ends with interaction(s) %s still open (no end line): the recording was cut; run `kwrec lint --fix` to end them as stopped", strings.Join(ids, ", "))}
}

// Read reads a whole cassette from r. On an error wrapping [ErrTruncated]
// the returned cassette holds everything read before the cut (open
// interactions without their End); on other errors it is nil.
func Read(r io.Reader, name string) (*Cassette, error) {
	rd, err := NewReader(r, name)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return readAll(rd)
}

// readAll reads the rest of rd as [Read] does.
func readAll(rd *Reader) (*Cassette, error) {
	c := &Cassette{Header: rd.Header()}
	byID := map[int]*Interaction{}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			return c, nil
		}
		if err != nil {
			if errors.Is(err, ErrTruncated) {
				return c, err
			}
			return nil, err
		}
		switch {
		case e.Request != nil:
			in := &Interaction{ID: e.ID, At: e.At, Request: *e.Request}
			byID[e.ID] = in
			c.Interactions = append(c.Interactions, in)
		case e.Response != nil:
			byID[e.ID].Response = e.Response
		case e.Frame != nil:
			in := byID[e.ID]
			in.Frames = append(in.Frames, *e.Frame)
		case e.End != nil:
			byID[e.ID].End = e.End
		}
	}
}
