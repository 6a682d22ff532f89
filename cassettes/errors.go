package cassettes

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match them with [errors.Is]; the errors returned wrap
// them with the file, line or byte offset and what to do.
var (
	// ErrNotCassette means the input is not a kwrec cassette at all: empty
	// (which is also [ErrTruncated]: a cut before the first byte), random
	// bytes, or a first line that is not a cassette header.
	ErrNotCassette = errors.New("not a kwrec cassette")
	// ErrUnsupportedVersion means the header names a format version this
	// build cannot read.
	ErrUnsupportedVersion = errors.New("unsupported cassette version")
	// ErrTruncated means the cassette ends early: a cut line, a cut zstd
	// stream, or interactions without an end line (a recorder killed
	// mid-way). The error names the byte offset of the cut ([ParseError]).
	// Everything complete before the cut is still returned, except for a
	// cut before the header line is whole (an empty file, a cut inside the
	// zstd magic or the header line): then nothing can be recovered.
	ErrTruncated = errors.New("truncated cassette")
	// ErrOpenAtEnd is wrapped, with [ErrTruncated], by the error of a
	// cassette whose lines are whole but which ends with interactions
	// still open: nothing is cut but their end lines. The parts of a
	// recording still being written end so.
	ErrOpenAtEnd = errors.New("interactions open at the end")
	// ErrSyntax means a line of the text form is malformed or inconsistent
	// with the lines before it.
	ErrSyntax = errors.New("malformed cassette")
	// ErrPart means files read as the parts of a rotated recording are
	// not its parts 1 to n: one is missing, twice, of another recording
	// or not a part at all, or a part after the first was read alone.
	ErrPart = errors.New("not the parts of one recording")
	// ErrLossyExport means an export would drop data (watch streams) and
	// the caller did not explicitly accept the loss.
	ErrLossyExport = errors.New("export would lose data")
)

// ParseError is the error for a bad cassette. Its text names the file and
// the line of the text form (for a compressed file, the line of its
// decompressed text), then the byte offset in the file for a cut or corrupt
// zstd data: "FILE:LINE: MSG", "FILE: byte N: MSG" or "FILE:LINE: byte N: MSG".
type ParseError struct {
	// File is the cassette's name as given to the reader; may be empty.
	File string
	// Line is the 1-based line of the text form, 0 when not known.
	Line int
	// Offset is the byte offset in the file (compressed or plain, as
	// stored) where it was cut ([ErrTruncated]) or where the zstd decoder
	// stopped on corrupt data, -1 otherwise.
	Offset int64
	// Msg says what was wrong and what was expected.
	Msg string
	// Err is the sentinel (or underlying error) this error wraps.
	Err error
}

func (e *ParseError) Error() string {
	where := e.File
	if where == "" {
		where = "cassette"
	}
	if e.Line > 0 {
		where = fmt.Sprintf("%s:%d", where, e.Line)
	}
	if e.Offset >= 0 {
		where = fmt.Sprintf("%s: byte %d", where, e.Offset)
	}
	return fmt.Sprintf("%s: %s", where, e.Msg)
}

func (e *ParseError) Unwrap() error { return e.Err }
