package cassettes

import (
	"net/http"
	"time"
)

// Version is the cassette format version this package writes. Readers
// refuse any other version with [ErrUnsupportedVersion].
const Version = 1

// Header describes a whole cassette. It is the first line of the text form.
type Header struct {
	// Version is the format version; [Writer] always writes [Version].
	Version int
	// RecordedAt is when the recording started (UTC, second precision is
	// enough; the text form keeps RFC 3339 with nanoseconds).
	RecordedAt time.Time
	// Server is the gitVersion the recorded server reported ("v1.37.2"),
	// empty when unknown.
	Server string
	// Redactions lists what the recorder removed before writing, e.g.
	// "header:Authorization" or "secret:data". An empty list on a recorded
	// cassette means redaction was explicitly turned off.
	Redactions []string
	// Labels are free key/value notes (scenario name, re-record command).
	Labels map[string]string
	// Edits are replay edits stored with the cassette, in the syntax of
	// replay's edit flags, applied on every replay of this cassette so a
	// hand-crafted failure replays the same everywhere.
	Edits []string
	// Part numbers the files of a rotated recording from 1 (see
	// [WriterOptions.MaxSize]); 0 for a cassette in one file, and for a
	// recording read whole with [Open].
	Part int
	// Skipped names what a recording of every resource (kwrec record --all)
	// left out because the server refused it, one "RESOURCE: REASON" each
	// ("secrets: forbidden (list)"), so that a replay's reader knows the
	// recording is not the whole cluster; nil when nothing was skipped.
	// Written only when not empty: a kwrec from before the field refuses a
	// header that has it (unknown field "skipped"), and reads every other.
	Skipped []string
	// Rebased marks a part of a rotated recording that starts with the
	// state of every recorded collection at its start (kwrec record
	// --keep writes the state where the oldest part it keeps starts as
	// such a part, over the part before it): it reads alone, and
	// [Parts] reads a recording from its newest rebased part on, the
	// parts before it superseded.
	Rebased bool
}

// Request is the recorded HTTP request of one interaction.
type Request struct {
	Method string
	// URL is the request URL as sent, host included; replay matches on
	// its path and query only.
	URL string
	// Header holds the request headers that matter for matching and
	// debugging (Accept, Content-Type, User-Agent, ...), after redaction.
	Header http.Header
	// Body is the request body, nil when there was none.
	Body []byte
}

// Response is the recorded response head of one interaction.
type Response struct {
	Status int
	Header http.Header
	// Latency is the time from sending the request to receiving the
	// response headers.
	Latency time.Duration
	// Encoding is the Content-Encoding the server applied on the wire
	// ("gzip"), recorded for information: frames always hold decoded bytes
	// and the Content-Encoding header is not kept in Header.
	Encoding string
}

// Frame is one piece of a response body: one watch event (a JSON line or a
// protobuf length-prefixed message, prefix included), one whole JSON
// document, or one chunk as read for other content types.
type Frame struct {
	// At is the frame's arrival offset from the response headers.
	At time.Duration
	// Data holds the frame's exact bytes.
	Data []byte
}

// EndReason says how a response body ended.
type EndReason string

// The reasons a body can end.
const (
	// EndEOF is a clean end of body sent by the server.
	EndEOF EndReason = "eof"
	// EndTimeout is a clean end at the watch's requested timeoutSeconds
	// (the server's own watch timeout), or a client deadline.
	EndTimeout EndReason = "timeout"
	// EndReset is a transport error: before the headers (no Response) or
	// mid-body. [End.Error] holds the error text.
	EndReset EndReason = "reset"
	// EndStopped means the client closed the body early, or the recorder
	// was stopped while the stream was still open.
	EndStopped EndReason = "stopped"
)

// Valid reports whether r is one of the defined reasons.
func (r EndReason) Valid() bool {
	switch r {
	case EndEOF, EndTimeout, EndReset, EndStopped:
		return true
	}
	return false
}

// End records how an interaction finished.
type End struct {
	// At is the offset from the response headers, or from the request
	// when there is no response.
	At     time.Duration
	Reason EndReason
	// Error is the transport error text for [EndReset], else empty.
	Error string
}

// Interaction is one HTTP exchange: request, response head, body frames and
// how it ended.
type Interaction struct {
	// ID numbers interactions from 1 in the order their requests started.
	ID int
	// At is the request's start offset from the cassette start.
	At       time.Duration
	Request  Request
	Response *Response // nil when the request failed before any response
	Frames   []Frame
	End      *End // nil when the cassette was cut before the end was written
}

// Body returns the concatenation of all frames.
func (in *Interaction) Body() []byte {
	n := 0
	for _, f := range in.Frames {
		n += len(f.Data)
	}
	b := make([]byte, 0, n)
	for _, f := range in.Frames {
		b = append(b, f.Data...)
	}
	return b
}

// Cassette is a whole cassette in memory. Use [Reader] and [Writer] for
// cassettes too large to hold.
type Cassette struct {
	Header       Header
	Interactions []*Interaction
}

// Entry is one line of a cassette's text form, as a [Reader] streams it.
// Exactly one of Request, Response, Frame and End is set.
type Entry struct {
	// Line is the entry's 1-based line in the text form (the header is
	// line 1) of its file: of its part, in a rotated recording.
	Line int
	// ID is the interaction the entry belongs to.
	ID int
	// At is set with Request: the interaction's start offset.
	At       time.Duration
	Request  *Request
	Response *Response
	Frame    *Frame
	End      *End
}
