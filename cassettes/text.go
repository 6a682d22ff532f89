package cassettes

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"time"
	"unicode/utf8"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// headerLine is the JSON shape of line 1.
type headerLine struct {
	Kwrec      *int              `json:"kwrec"`
	RecordedAt time.Time         `json:"recordedAt"`
	Server     string            `json:"server,omitempty"`
	Redactions []string          `json:"redactions"`
	Labels     map[string]string `json:"labels,omitempty"`
	Edits      []string          `json:"edits,omitempty"`
	Part       int               `json:"part,omitempty"`
	Skipped    []string          `json:"skipped,omitempty"`
	Rebased    bool              `json:"rebased,omitempty"`
}

// entryLine is the JSON shape of every other line; which of Request,
// Response, Frame and End is set says what the line is.
type entryLine struct {
	Request  *int `json:"request,omitempty"`
	Response *int `json:"response,omitempty"`
	Frame    *int `json:"frame,omitempty"`
	End      *int `json:"end,omitempty"`

	At      *string `json:"at,omitempty"`
	Latency *string `json:"latency,omitempty"`

	Method     string      `json:"method,omitempty"`
	URL        string      `json:"url,omitempty"`
	Status     int         `json:"status,omitempty"`
	Header     http.Header `json:"header,omitempty"`
	Encoding   string      `json:"encoding,omitempty"`
	Body       *string     `json:"body,omitempty"`
	BodyBase64 *string     `json:"bodyBase64,omitempty"`

	cassettefile.FrameValue // json, text, base64 or bytes

	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
}

func marshalNoEscape(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return b.Bytes(), nil // Encode appends the newline ending the line
}

func encodeHeader(h Header) ([]byte, error) {
	v := Version
	hl := headerLine{Kwrec: &v, RecordedAt: h.RecordedAt.UTC(), Server: h.Server,
		Redactions: h.Redactions, Labels: h.Labels, Edits: h.Edits, Part: h.Part, Skipped: h.Skipped, Rebased: h.Rebased}
	if hl.Redactions == nil {
		hl.Redactions = []string{}
	}
	return marshalNoEscape(hl)
}

func fmtDuration(d time.Duration) *string {
	s := d.String()
	return &s
}

func encodeRequest(id int, at time.Duration, r Request) ([]byte, error) {
	l := entryLine{Request: &id, At: fmtDuration(at), Method: r.Method, URL: r.URL, Header: r.Header}
	if r.Body != nil {
		if utf8.Valid(r.Body) {
			s := string(r.Body)
			l.Body = &s
		} else {
			s := base64.StdEncoding.EncodeToString(r.Body)
			l.BodyBase64 = &s
		}
	}
	return marshalNoEscape(l)
}

func encodeResponse(id int, r Response) ([]byte, error) {
	l := entryLine{Response: &id, Latency: fmtDuration(r.Latency), Status: r.Status, Header: r.Header, Encoding: r.Encoding}
	return marshalNoEscape(l)
}

func encodeEnd(id int, e End) ([]byte, error) {
	l := entryLine{End: &id, At: fmtDuration(e.At), Reason: string(e.Reason), Error: e.Error}
	return marshalNoEscape(l)
}

// lineError builds a syntax error for line n.
func lineError(n int, format string, args ...any) *ParseError {
	return &ParseError{Line: n, Offset: -1, Msg: fmt.Sprintf(format, args...), Err: ErrSyntax}
}

// decodeHeader parses line 1.
func decodeHeader(line []byte) (Header, *ParseError) {
	var hl headerLine
	t := bytes.TrimSpace(line)
	if len(t) == 0 || t[0] != '{' || !bytes.Contains(t, []byte(`"kwrec"`)) {
		return Header{}, &ParseError{Line: 1, Offset: -1, Err: ErrNotCassette,
			Msg: `not a kwrec cassette: line 1 must be the header {"kwrec":1,...} (see the cassettes package doc for the format)`}
	}
	// The version first: a later version's header may hold keys this
	// one does not know, and is refused as that version, not as a
	// malformed header.
	var v struct {
		Kwrec *int `json:"kwrec"`
	}
	if json.Unmarshal(t, &v) == nil && v.Kwrec != nil && *v.Kwrec != Version {
		return Header{}, unsupportedVersion(*v.Kwrec)
	}
	dec := json.NewDecoder(bytes.NewReader(t))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&hl); err != nil {
		return Header{}, lineError(1, "bad header: %s; expected {\"kwrec\":%d,\"recordedAt\":\"RFC 3339 time\",...}", jsonMsg(err), Version)
	}
	if hl.Kwrec == nil {
		return Header{}, &ParseError{Line: 1, Offset: -1, Err: ErrNotCassette, Msg: `not a kwrec cassette: the header has no "kwrec" version`}
	}
	if *hl.Kwrec != Version {
		return Header{}, unsupportedVersion(*hl.Kwrec)
	}
	return Header{Version: *hl.Kwrec, RecordedAt: hl.RecordedAt, Server: hl.Server,
		Redactions: hl.Redactions, Labels: hl.Labels, Edits: hl.Edits, Part: hl.Part, Skipped: hl.Skipped, Rebased: hl.Rebased}, nil
}

// unsupportedVersion is the error for a header of format version v.
func unsupportedVersion(v int) *ParseError {
	return &ParseError{Line: 1, Offset: -1, Err: ErrUnsupportedVersion,
		Msg: fmt.Sprintf("cassette format version %d is not supported (this kwrec reads version %d); re-record the cassette or use a kwrec that reads version %d", v, Version, v)}
}

// jsonMsg makes encoding/json's messages read as a cassette's, without
// Go's type names.
func jsonMsg(err error) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		if te.Field == "" {
			return fmt.Sprintf("a JSON %s where an object was expected", te.Value)
		}
		want := te.Type.Kind().String()
		switch te.Type.Kind() {
		case reflect.Int, reflect.Int64, reflect.Int32:
			want = "a number"
		case reflect.String:
			want = "a string"
		case reflect.Map, reflect.Struct:
			want = "an object"
		case reflect.Slice:
			want = "a list"
		}
		return fmt.Sprintf("%q is a JSON %s; expected %s", te.Field, te.Value, want)
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return fmt.Sprintf("bad time %q; expected RFC 3339, such as \"2026-12-01T07:00:00Z\"", pe.Value)
	}
	s := err.Error()
	return string(bytes.TrimPrefix([]byte(s), []byte("json: ")))
}

func parseOffset(n int, field string, s *string) (time.Duration, *ParseError) {
	if s == nil {
		return 0, lineError(n, "missing %q; expected a duration such as \"1.5s\" or \"250ms\"", field)
	}
	d, err := time.ParseDuration(*s)
	if err != nil {
		return 0, lineError(n, "bad %q %q; expected a duration such as \"1.5s\" or \"250ms\"", field, *s)
	}
	if d < 0 {
		return 0, lineError(n, "negative %q %q; offsets and latencies are never negative", field, *s)
	}
	return d, nil
}

// fastJSONFrame parses the canonical shape of a JSON or binary frame line,
// as a Writer writes it, without a general JSON decoder (see
// [cassettefile.ParseCanonical]). It reports false for anything else,
// which decodeEntry then parses and reports in full. line must be a
// private copy: the frame's Data aliases it.
func fastJSONFrame(n int, line []byte, c cassettefile.Check) (Entry, bool) {
	id, at, data, ok := cassettefile.ParseCanonical(line, c)
	if !ok {
		return Entry{}, false
	}
	return Entry{Line: n, ID: id, Frame: &Frame{At: at, Data: data}}, true
}

// decodeEntry parses one non-header line, checking a JSON frame's value
// as c says.
func decodeEntry(n int, line []byte, c cassettefile.Check) (Entry, *ParseError) {
	if e, ok := fastJSONFrame(n, line, c); ok {
		return e, nil
	}
	var l entryLine
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return Entry{}, lineError(n, "invalid line: %s; expected one JSON object per line", jsonMsg(err))
	}
	if dec.More() {
		return Entry{}, lineError(n, "more than one JSON value on the line; put each entry on its own line")
	}
	kinds := 0
	for _, p := range []*int{l.Request, l.Response, l.Frame, l.End} {
		if p != nil {
			kinds++
		}
	}
	if kinds != 1 {
		return Entry{}, lineError(n, `a line must have exactly one of "request", "response", "frame" or "end" (the interaction number)`)
	}
	e := Entry{Line: n}
	var perr *ParseError
	switch {
	case l.Request != nil:
		perr = decodeRequestLine(n, &l, &e)
	case l.Response != nil:
		perr = decodeResponseLine(n, &l, &e)
	case l.Frame != nil:
		perr = decodeFrameLine(n, &l, &e)
	case l.End != nil:
		perr = decodeEndLine(n, &l, &e)
	}
	if perr != nil {
		return e, perr
	}
	if e.ID < 1 {
		return e, lineError(n, "interaction number %d; interactions are numbered from 1", e.ID)
	}
	return e, nil
}

// decodeRequestLine decodes l, request line n, into e: its interaction
// number, offset and [Request].
func decodeRequestLine(n int, l *entryLine, e *Entry) *ParseError {
	e.ID = *l.Request
	var perr *ParseError
	if e.At, perr = parseOffset(n, "at", l.At); perr != nil {
		return perr
	}
	if l.Method == "" || l.URL == "" {
		return lineError(n, `request %d needs "method" and "url"`, e.ID)
	}
	if _, err := url.Parse(l.URL); err != nil {
		return lineError(n, "request %d: bad url %q: %v", e.ID, l.URL, errors.Unwrap(err))
	}
	if l.Status != 0 || l.JSON != nil || l.Text != nil || l.Base64 != nil || l.BytesForm != nil || l.Reason != "" || l.Latency != nil {
		return lineError(n, "request %d has fields of another line kind; a request line has at, method, url, header, body", e.ID)
	}
	r := &Request{Method: l.Method, URL: l.URL, Header: l.Header}
	switch {
	case l.Body != nil && l.BodyBase64 != nil:
		return lineError(n, `request %d has both "body" and "bodyBase64"`, e.ID)
	case l.Body != nil:
		r.Body = []byte(*l.Body)
	case l.BodyBase64 != nil:
		b, err := base64.StdEncoding.DecodeString(*l.BodyBase64)
		if err != nil {
			return lineError(n, "request %d: bad bodyBase64: %v", e.ID, err)
		}
		r.Body = b
	}
	e.Request = r
	return nil
}

// decodeResponseLine decodes l, response line n, into e: its interaction
// number and [Response].
func decodeResponseLine(n int, l *entryLine, e *Entry) *ParseError {
	e.ID = *l.Response
	lat, perr := parseOffset(n, "latency", l.Latency)
	if perr != nil {
		return perr
	}
	if l.Status < 100 || l.Status > 999 {
		return lineError(n, "response %d: status %d is not an HTTP status; expected 100-999", e.ID, l.Status)
	}
	if l.At != nil || l.Method != "" || l.URL != "" || l.JSON != nil || l.Text != nil || l.Base64 != nil || l.BytesForm != nil || l.Reason != "" || l.Body != nil {
		return lineError(n, "response %d has fields of another line kind; a response line has latency, status, header, encoding", e.ID)
	}
	e.Response = &Response{Status: l.Status, Header: l.Header, Latency: lat, Encoding: l.Encoding}
	return nil
}

// decodeFrameLine decodes l, frame line n, into e: its interaction number
// and [Frame].
func decodeFrameLine(n int, l *entryLine, e *Entry) *ParseError {
	e.ID = *l.Frame
	at, perr := parseOffset(n, "at", l.At)
	if perr != nil {
		return perr
	}
	if l.Method != "" || l.Status != 0 || l.Reason != "" || l.Header != nil || l.Latency != nil || l.Body != nil {
		return lineError(n, "frame of interaction %d has fields of another line kind; a frame line has at and one of json, text, base64, bytes", e.ID)
	}
	data, err := l.FrameValue.Bytes()
	switch {
	case errors.Is(err, cassettefile.ErrNotOneValue):
		return lineError(n, `frame of interaction %d needs exactly one of "json", "text" or "base64"`, e.ID)
	case err != nil:
		return lineError(n, "frame of interaction %d: %v", e.ID, err)
	}
	e.Frame = &Frame{At: at, Data: data}
	return nil
}

// decodeEndLine decodes l, end line n, into e: its interaction number and
// [End].
func decodeEndLine(n int, l *entryLine, e *Entry) *ParseError {
	e.ID = *l.End
	at, perr := parseOffset(n, "at", l.At)
	if perr != nil {
		return perr
	}
	r := EndReason(l.Reason)
	if !r.Valid() {
		return lineError(n, "end of interaction %d: reason %q is not one of eof, timeout, reset, stopped", e.ID, l.Reason)
	}
	if l.Method != "" || l.Status != 0 || l.JSON != nil || l.Text != nil || l.Base64 != nil || l.BytesForm != nil || l.Header != nil {
		return lineError(n, "end of interaction %d has fields of another line kind; an end line has at, reason, error", e.ID)
	}
	e.End = &End{At: at, Reason: r, Error: l.Error}
	return nil
}
