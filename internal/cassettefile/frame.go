package cassettefile

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// Check is how much of a JSON frame's value [ParseCanonical] checks.
type Check uint8

const (
	// CheckValid: the value is valid JSON (json.Valid), as Load and kwrec
	// lint need.
	CheckValid Check = iota
	// CheckBounds: the value's braces, brackets and strings balance (see
	// balanced): the frame is one whole value. json.Valid is by far the
	// largest cost of reading a frame, and an index only needs the
	// frame's bounds.
	CheckBounds
	// CheckNone: a line read again after a check, or one whose bytes
	// zstd's checksums prove.
	CheckNone
)

const base64Key, textKey = `","base64":"`, `","text":"`

// frameHead parses a canonical frame line's head, {"frame":N,"at":"D",
// returning the rest from the at value on and the index j in it of the
// quote that closes D.
func frameHead(line []byte) (id int, at time.Duration, rest []byte, j int, ok bool) {
	const prefix, atKey = `{"frame":`, `,"at":"`
	if !bytes.HasPrefix(line, []byte(prefix)) || line[len(line)-1] != '}' {
		return 0, 0, nil, 0, false
	}
	rest = line[len(prefix):]
	i := 0
	for ; i < len(rest) && i < 9 && rest[i] >= '0' && rest[i] <= '9'; i++ {
		id = id*10 + int(rest[i]-'0')
	}
	if i == 0 || id < 1 || !bytes.HasPrefix(rest[i:], []byte(atKey)) {
		return 0, 0, nil, 0, false
	}
	rest = rest[i+len(atKey):]
	j = bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, 0, nil, 0, false
	}
	at, err := parseDuration(rest[:j])
	if err != nil || at < 0 {
		return 0, 0, nil, 0, false
	}
	return id, at, rest, j, true
}

// ParseCanonical parses the canonical shape of a "json" or "base64" frame
// line, as a Writer writes it, without a general JSON decoder: most of a
// watch cassette's lines are such frames. It reports false for anything
// else (hand-edited spacing, other frame kinds, errors), which a general
// decoder then parses and reports in full. line must be a private copy:
// a JSON frame's data aliases it (its closing brace becomes the newline).
func ParseCanonical(line []byte, c Check) (id int, at time.Duration, data []byte, ok bool) {
	return parseCanonical(line, c, nil)
}

// parseCanonical is ParseCanonical decoding a "bytes" frame into dst (see
// [ParseFrameInto]).
func parseCanonical(line []byte, c Check, dst []byte) (id int, at time.Duration, data []byte, ok bool) {
	const jsonKey = `","json":`
	id, at, rest, j, ok := frameHead(line)
	if !ok {
		return 0, 0, nil, false
	}
	if t, ok := bytes.CutPrefix(rest[j:], []byte(textKey)); ok {
		// A text frame, such as an OpenAPI document served as text/plain
		// or JSON the recorder kept as it came: {"frame":N,"at":"D","text":"..."}.
		if len(t) < 2 || t[len(t)-2] != '"' {
			return 0, 0, nil, false
		}
		data, ok := unquote(t[:len(t)-2])
		return id, at, data, ok
	}
	if b, ok := bytes.CutPrefix(rest[j:], []byte(bytesKey)); ok {
		// A binary frame in the "bytes" form: {"frame":N,"at":"D","bytes":"..."}.
		if len(b) < 2 || b[len(b)-2] != '"' {
			return 0, 0, nil, false
		}
		data, ok := fastBytesInto(dst, b[:len(b)-2])
		return id, at, data, ok
	}
	if b64, ok := bytes.CutPrefix(rest[j:], []byte(base64Key)); ok {
		// A binary frame (protobuf watch events): {"frame":N,"at":"D","base64":"..."}.
		if len(b64) < 2 || b64[len(b64)-2] != '"' {
			return 0, 0, nil, false
		}
		b64 = b64[:len(b64)-2]
		data := make([]byte, base64.StdEncoding.DecodedLen(len(b64)))
		k, err := base64.StdEncoding.Decode(data, b64)
		if err != nil {
			return 0, 0, nil, false
		}
		return id, at, data[:k:k], true
	}
	if !bytes.HasPrefix(rest[j:], []byte(jsonKey)) {
		return 0, 0, nil, false
	}
	v := rest[j+len(jsonKey) : len(rest)-1]
	if len(v) == 0 || (v[0] != '{' && v[0] != '[') || (v[len(v)-1] != '}' && v[len(v)-1] != ']') || (c == CheckValid && !json.Valid(v)) || (c == CheckBounds && !balanced(v)) {
		return 0, 0, nil, false
	}
	// The frame is the value and a newline: reuse the line's closing
	// brace's byte for the newline instead of copying the value.
	data = v[: len(v)+1 : len(v)+1]
	data[len(v)] = '\n'
	return id, at, data, true
}

// balanced reports whether v's braces and brackets balance outside
// strings and it ends outside a string: the frame is one whole value, not
// cut or spliced, at a fraction of json.Valid's cost.
func balanced(v []byte) bool {
	depth := 0
	for i := 0; i < len(v); i++ {
		for i < len(v) && !structural[v[i]] {
			i++
		}
		if i == len(v) {
			break
		}
		switch v[i] {
		case '"':
			for i++; i < len(v) && !inString[v[i]]; i++ {
			}
			for i < len(v) && v[i] == '\\' {
				for i += 2; i < len(v) && !inString[v[i]]; i++ {
				}
			}
			if i >= len(v) {
				return false
			}
		case '{', '[':
			depth++
		default: // '}', ']'
			depth--
			if depth < 0 || depth == 0 && i != len(v)-1 {
				return false
			}
		}
	}
	return depth == 0
}

// structural and inString mark the bytes balanced stops at outside and
// inside a string.
var structural, inString = func() (s, in [256]bool) {
	for _, c := range `"{}[]` {
		s[c] = true
	}
	in['"'], in['\\'] = true, true
	return
}()

// FrameValue is the value of a frame line: exactly one of its fields is
// set. Package cassettes embeds it in the JSON shape of a line.
type FrameValue struct {
	JSON   json.RawMessage `json:"json,omitempty"`
	Text   *string         `json:"text,omitempty"`
	Base64 *string         `json:"base64,omitempty"`
	// BytesForm is the "bytes" form of binary data (see AppendBytesString).
	BytesForm *string `json:"bytes,omitempty"`
}

// ErrNotOneValue is what [FrameValue.Bytes] returns when not exactly one
// of json, text and base64 is set.
var ErrNotOneValue = errors.New(`a frame needs exactly one of "json", "text" or "base64"`)

// Bytes returns the frame's exact bytes: for JSON the value followed by
// one newline, for Text the string, for Base64 the decoded bytes. It
// fails with Base64's or BytesForm's decoding error, else with [ErrNotOneValue].
func (v FrameValue) Bytes() ([]byte, error) {
	var data []byte
	n := 0
	if v.JSON != nil {
		n++
		data = append(append(make([]byte, 0, len(v.JSON)+1), v.JSON...), '\n')
	}
	if v.Text != nil {
		n++
		data = []byte(*v.Text)
	}
	if v.Base64 != nil {
		n++
		b, err := base64.StdEncoding.DecodeString(*v.Base64)
		if err != nil {
			return nil, fmt.Errorf("bad base64: %v", err)
		}
		data = b
	}
	if v.BytesForm != nil {
		n++
		b, err := bytesOf(*v.BytesForm)
		if err != nil {
			return nil, fmt.Errorf("bad bytes: %v", err)
		}
		data = b
	}
	if n != 1 {
		return nil, ErrNotOneValue
	}
	return data, nil
}

// ParseFrame parses a frame line that has been checked before (by a
// Reader): the canonical shape at once, any other (a "text" frame,
// hand-edited spacing) with a general JSON decoder. It reports false for
// a line that is not a frame. line must be a private copy, as for
// [ParseCanonical].
func ParseFrame(line []byte) (id int, at time.Duration, data []byte, ok bool) {
	return ParseFrameInto(line, nil)
}

// ParseFrameInto is [ParseFrame] decoding a binary frame in the canonical
// "bytes" form into dst's array when dst is not nil: a reader of frame
// after frame (a replay's read-ahead) reuses one buffer for their bytes,
// as it does for their lines, where a new array per protobuf event was
// its one allocation per event. A JSON frame's data is in line, as ever.
func ParseFrameInto(line, dst []byte) (id int, at time.Duration, data []byte, ok bool) {
	if id, at, data, ok := parseCanonical(line, CheckNone, dst); ok {
		return id, at, data, true
	}
	var l struct {
		Frame *int    `json:"frame"`
		At    *string `json:"at"`
		FrameValue
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields() // a line with a key of another kind is not a frame
	if dec.Decode(&l) != nil || dec.More() || l.Frame == nil || *l.Frame < 1 || l.At == nil {
		return 0, 0, nil, false
	}
	at, err := time.ParseDuration(*l.At)
	if err != nil || at < 0 {
		return 0, 0, nil, false
	}
	data, err = l.Bytes()
	if err != nil {
		return 0, 0, nil, false
	}
	return *l.Frame, at, data, true
}

// jsonFrame reports whether data is one JSON object or array followed by a
// single newline, with no newline inside: the shape of a JSON watch event
// and of an API server's JSON response. Such frames are stored as JSON.
func jsonFrame(data []byte) bool {
	n := len(data)
	if n < 3 || data[n-1] != '\n' {
		return false
	}
	v := data[:n-1]
	first, last := v[0], v[len(v)-1]
	if !(first == '{' && last == '}') && !(first == '[' && last == ']') {
		return false
	}
	if bytes.IndexByte(v, '\n') >= 0 || bytes.IndexByte(v, '\r') >= 0 {
		return false
	}
	return json.Valid(v)
}

// AppendFrameLine appends the line of frame data of interaction id at at,
// newline included, as a Writer writes it: a JSON object or array as
// "json", other UTF-8 as "text", binary data in the "bytes" form if
// bytesForm is set, else in base64. With keep, a later delta may copy
// from the frame.
func AppendFrameLine(buf []byte, id int, at time.Duration, data []byte, bytesForm, keep bool) []byte {
	buf = append(buf, `{"frame":`...)
	buf = strconv.AppendInt(buf, int64(id), 10)
	buf = append(buf, `,"at":"`...)
	buf = append(buf, at.String()...)
	buf = append(buf, '"')
	if keep { // object deltas: a later delta may copy from this frame
		buf = append(buf, keepKey...)
	}
	buf = append(buf, ',')
	switch {
	case jsonFrame(data):
		buf = append(buf, `"json":`...)
		buf = append(buf, data[:len(data)-1]...)
	case utf8.Valid(data):
		buf = append(buf, `"text":`...)
		buf = appendString(buf, data)
	case bytesForm:
		buf = append(buf, `"bytes":`...)
		buf = AppendBytesString(buf, data)
	default:
		buf = append(buf, `"base64":"`...)
		buf = base64.StdEncoding.AppendEncode(buf, data)
		buf = append(buf, '"')
	}
	return append(buf, '}', '\n')
}

// appendString appends the JSON string of s, which is valid UTF-8, as
// encoding/json writes it without HTML escapes.
func appendString(buf, s []byte) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(string(s)) // a string always encodes
	return append(buf, b.Bytes()[:b.Len()-1]...)
}
