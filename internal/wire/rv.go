package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
)

// SetRVJSON returns an object's JSON with metadata.resourceVersion set to
// rv, the rest byte for byte. The object must have a metadata object; a
// resourceVersion it lacks is added as metadata's first field.
func SetRVJSON(raw []byte, rv string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, err
		}
		if k != "metadata" {
			if err := dec.Decode(new(json.RawMessage)); err != nil {
				return nil, err
			}
			continue
		}
		if t, err := dec.Token(); err != nil || t != json.Delim('{') {
			return nil, errors.New("metadata is not a JSON object")
		}
		open := int(dec.InputOffset()) // just after metadata's '{'
		for dec.More() {
			k, err := dec.Token()
			if err != nil {
				return nil, err
			}
			afterKey := int(dec.InputOffset())
			if k != "resourceVersion" {
				if err := dec.Decode(new(json.RawMessage)); err != nil {
					return nil, err
				}
				continue
			}
			var old string
			if err := dec.Decode(&old); err != nil {
				return nil, errors.New("metadata.resourceVersion is not a string")
			}
			end := int(dec.InputOffset())
			start := afterKey + bytes.IndexByte(raw[afterKey:end], '"')
			return splice(raw, start, end, strconv.Quote(rv)), nil
		}
		field := `"resourceVersion":` + strconv.Quote(rv)
		if rest := bytes.TrimSpace(raw[open:]); len(rest) > 0 && rest[0] != '}' {
			field += ","
		}
		return splice(raw, open, open, field), nil
	}
	return nil, errors.New("object has no metadata")
}

func splice(b []byte, start, end int, with string) []byte {
	out := make([]byte, 0, len(b)-(end-start)+len(with))
	out = append(out, b[:start]...)
	out = append(out, with...)
	return append(out, b[end:]...)
}

// SetRVProto returns an object's protobuf message (the raw of its
// envelope) with metadata.resourceVersion (ObjectMeta field 6) set to rv,
// the other fields as they were.
func SetRVProto(msg []byte, rv string) ([]byte, error) {
	out := make([]byte, 0, len(msg)+len(rv)+4)
	found := false
	var err error
	parsed := eachRawField(msg, func(n protowire.Number, typ protowire.Type, field, value []byte) bool {
		if n != 1 || typ != protowire.BytesType || found {
			out = append(out, field...)
			return true
		}
		found = true
		meta, _ := protowire.ConsumeBytes(value)
		var m []byte
		if m, err = setField(meta, 6, rv); err != nil {
			return false
		}
		out = AppendBytesField(out, 1, m)
		return true
	})
	if err != nil {
		return nil, err
	}
	if !parsed {
		return nil, errors.New("protobuf object does not parse")
	}
	if !found {
		return nil, errors.New("protobuf object has no metadata")
	}
	return out, nil
}

// setField returns msg with its string field num set to v, in place, or
// appended when msg has none.
func setField(msg []byte, num protowire.Number, v string) ([]byte, error) {
	out := make([]byte, 0, len(msg)+len(v)+2)
	set := false
	parsed := eachRawField(msg, func(n protowire.Number, typ protowire.Type, field, _ []byte) bool {
		if n == num && typ == protowire.BytesType && !set {
			set = true
			out = AppendBytesField(out, num, []byte(v))
		} else {
			out = append(out, field...)
		}
		return true
	})
	if !parsed {
		return nil, errors.New("protobuf metadata does not parse")
	}
	if !set {
		out = AppendBytesField(out, num, []byte(v))
	}
	return out, nil
}

// eachRawField calls fn with every field of msg, in order: its number,
// its type, its bytes from the tag on, and its value's bytes (after the
// tag), until fn returns false. It reports whether msg parsed (up to
// where fn stopped).
func eachRawField(msg []byte, fn func(n protowire.Number, typ protowire.Type, field, value []byte) bool) bool {
	for off := 0; off < len(msg); {
		n, typ, l := protowire.ConsumeTag(msg[off:])
		if l < 0 {
			return false
		}
		vl := protowire.ConsumeFieldValue(n, typ, msg[off+l:])
		if vl < 0 {
			return false
		}
		field := msg[off : off+l+vl]
		off += l + vl
		if !fn(n, typ, field, field[l:]) {
			return true
		}
	}
	return true
}
