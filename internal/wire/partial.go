package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Shape is what a response body holds, for [PartialMetadata].
type Shape int

// The shapes.
const (
	ShapeObject Shape = iota // one object (a get, a write's answer)
	ShapeList                // a list
	ShapeWatch               // one watch event frame
)

// The metadata-only forms a client asks for with
// "as=PartialObjectMetadata;g=meta.k8s.io;v=v1" in its Accept header
// (client-go's metadata client, controller-runtime's metadata cache).
const (
	PartialKind     = "PartialObjectMetadata"
	PartialListKind = "PartialObjectMetadataList"
	partialVersion  = "meta.k8s.io/v1"
)

// AcceptsPartial reports whether the Accept header's first media type
// kwrec serves asks for the metadata-only form (as=PartialObjectMetadata or
// as=PartialObjectMetadataList, group meta.k8s.io, version v1), and
// whether that type is protobuf. A client that lists a plain type first
// gets the full objects.
func AcceptsPartial(accept string) (partial, protobuf bool) {
	for _, c := range Clauses(accept) {
		if !Matches(c, MediaJSON) && !Matches(c, MediaProtobuf) || c.Type == "*" || c.SubType == "*" {
			continue
		}
		switch c.Params["as"] {
		case "":
			return false, false
		case PartialKind, PartialListKind:
			if c.Params["g"] == "meta.k8s.io" && c.Params["v"] == "v1" {
				return true, c.SubType == "vnd.kubernetes.protobuf"
			}
		}
	}
	return false, false
}

// PartialMetadata returns a response body (or, for ShapeWatch, one watch
// frame) of full objects in their metadata-only form: each object becomes
// a PartialObjectMetadata of its metadata, a list a
// PartialObjectMetadataList. A Status, in a body or a watch ERROR event,
// is left as it is. JSON bodies end with a newline, as the server writes
// them.
func PartialMetadata(data []byte, shape Shape, proto bool) ([]byte, error) {
	if proto {
		return partialProto(data, shape)
	}
	return partialJSON(data, shape)
}

// partialEvent returns the watch event data, of type typ and holding
// obj, with obj in its metadata-only form (by partial) in an event made
// by event; an ERROR event as it is.
func partialEvent(data []byte, typ string, obj []byte, partial func([]byte) ([]byte, error), event func(typ string, obj []byte) []byte) ([]byte, error) {
	if typ == "ERROR" {
		return data, nil
	}
	p, err := partial(obj)
	if err != nil {
		return nil, err
	}
	return event(typ, p), nil
}

func partialJSON(data []byte, shape Shape) ([]byte, error) {
	switch shape {
	case ShapeWatch:
		typ, s, e, err := SplitWatchEventJSON(data)
		if err != nil {
			return nil, err
		}
		return partialEvent(data, typ, data[s:e], partialObjectJSON, WatchEventJSON)
	case ShapeList:
		var l struct {
			Kind     string            `json:"kind"`
			Metadata json.RawMessage   `json:"metadata"`
			Items    []json.RawMessage `json:"items"`
		}
		if err := json.Unmarshal(data, &l); err != nil {
			return nil, err
		}
		if l.Kind == "Status" {
			return data, nil
		}
		items := make([][]byte, len(l.Items))
		for i, it := range l.Items {
			var err error
			if items[i], err = partialObjectJSON(it); err != nil {
				return nil, err
			}
		}
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":%s,"items":[%s]}`+"\n", PartialListKind, partialVersion, l.Metadata, bytes.Join(items, []byte(",")))
		return b.Bytes(), nil
	}
	obj, err := partialObjectJSON(bytes.TrimRight(data, "\n"))
	if err != nil {
		return nil, err
	}
	return append(obj, '\n'), nil
}

// partialObjectJSON returns the PartialObjectMetadata of one object's JSON
// (a Status as it is).
func partialObjectJSON(obj []byte) ([]byte, error) {
	var o struct {
		Kind     string          `json:"kind"`
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(obj, &o); err != nil {
		return nil, err
	}
	if o.Kind == "Status" {
		return obj, nil
	}
	if len(o.Metadata) == 0 {
		o.Metadata = json.RawMessage("{}")
	}
	return fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":%s}`, PartialKind, partialVersion, o.Metadata), nil
}

func partialProto(data []byte, shape Shape) ([]byte, error) {
	if shape == ShapeWatch {
		typ, s, e, ok := SplitWatchEventProto(data)
		if !ok {
			return nil, fmt.Errorf("not a protobuf watch frame")
		}
		return partialEvent(data, typ, data[s:e], partialObjectProto, WatchEventProto)
	}
	if shape == ShapeObject {
		return partialObjectProto(data)
	}
	_, kind, s, e, ok := Unenvelope(data)
	if !ok {
		return nil, fmt.Errorf("not an enveloped protobuf list")
	}
	if kind == "Status" {
		return data, nil
	}
	var msg []byte
	ok = EachField(data[s:e], func(num protowire.Number, fs, fe int) bool {
		switch num {
		case 1:
			msg = AppendBytesField(msg, 1, data[s+fs:s+fe])
		case 2:
			om, _ := Field(data[s+fs:s+fe], 1)
			msg = AppendBytesField(msg, 2, AppendBytesField(nil, 1, om))
		}
		return true
	})
	if !ok {
		return nil, fmt.Errorf("a malformed protobuf list")
	}
	return Envelope(partialVersion, PartialListKind, msg), nil
}

// partialObjectProto returns the enveloped PartialObjectMetadata of one
// enveloped object: its field 1, ObjectMeta in every built-in type.
func partialObjectProto(obj []byte) ([]byte, error) {
	_, kind, s, e, ok := Unenvelope(obj)
	if !ok {
		return nil, fmt.Errorf("not an enveloped protobuf object")
	}
	if kind == "Status" {
		return obj, nil
	}
	om, _ := Field(obj[s:e], 1)
	return Envelope(partialVersion, PartialKind, AppendBytesField(nil, 1, om)), nil
}
