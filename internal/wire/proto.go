package wire

import (
	"bytes"
	"encoding/binary"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
)

// ProtoMagic starts every protobuf body the API server sends.
var ProtoMagic = []byte("k8s\x00")

// Envelope returns "k8s\x00" + runtime.Unknown{TypeMeta{apiVersion, kind},
// Raw: raw}: a whole protobuf body, or the object of a protobuf watch event.
func Envelope(apiVersion, kind string, raw []byte) []byte {
	u := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	b := make([]byte, len(ProtoMagic), len(ProtoMagic)+u.Size())
	copy(b, ProtoMagic)
	n, _ := u.MarshalTo(b[len(b):cap(b)]) // Size is exact
	return b[:len(b)+n]
}

// Unenvelope splits an enveloped protobuf body: its type and the offsets
// [start, end) of its raw message in b.
func Unenvelope(b []byte) (apiVersion, kind string, start, end int, ok bool) {
	tm, start, end, ok := unenvelope(b)
	if !ok {
		return "", "", 0, 0, false
	}
	av, _ := Field(tm, 1)
	k, _ := Field(tm, 2)
	return string(av), string(k), start, end, true
}

// unenvelope returns the TypeMeta message of the enveloped body b and the
// offsets [start, end) of its raw message.
func unenvelope(b []byte) (typeMeta []byte, start, end int, ok bool) {
	if !bytes.HasPrefix(b, ProtoMagic) {
		return nil, 0, 0, false
	}
	msg := b[len(ProtoMagic):]
	tm, ok1 := Field(msg, 1)
	s, e, ok2 := FieldRange(msg, 2)
	if !ok2 {
		// An object with no raw bytes (all fields empty) is still an object.
		s, e = len(msg), len(msg)
	}
	if !ok1 {
		return nil, 0, 0, false
	}
	return tm, len(ProtoMagic) + s, len(ProtoMagic) + e, true
}

// WatchEventProto returns a protobuf watch frame: the 4-byte length, then
// WatchEvent{type, object: RawExtension{raw: obj}}, obj enveloped.
func WatchEventProto(typ string, obj []byte) []byte {
	ext := protowire.AppendTag(nil, 1, protowire.BytesType)
	ext = protowire.AppendBytes(ext, obj)
	n := protowire.SizeTag(1) + protowire.SizeBytes(len(typ)) + protowire.SizeTag(2) + protowire.SizeBytes(len(ext))
	b := make([]byte, 4, 4+n)
	binary.BigEndian.PutUint32(b, uint32(n))
	b = protowire.AppendTag(b, 1, protowire.BytesType)
	b = protowire.AppendString(b, typ)
	b = protowire.AppendTag(b, 2, protowire.BytesType)
	return protowire.AppendBytes(b, ext)
}

// SplitWatchEventProto splits a protobuf watch frame (length prefix
// included): its event type and the offsets [start, end) in frame of its
// enveloped object.
func SplitWatchEventProto(frame []byte) (typ string, start, end int, ok bool) {
	t, start, end, ok := splitWatchEventProto(frame)
	return string(t), start, end, ok
}

// WatchEventObjectProto returns the offsets [start, end) in the protobuf
// watch frame (length prefix included) of its object's raw message, the
// envelope taken off, without allocating.
func WatchEventObjectProto(frame []byte) (start, end int, ok bool) {
	_, s, e, ok := splitWatchEventProto(frame)
	if !ok {
		return 0, 0, false
	}
	_, ms, me, ok := unenvelope(frame[s:e])
	if !ok {
		return 0, 0, false
	}
	return s + ms, s + me, true
}

func splitWatchEventProto(frame []byte) (typ []byte, start, end int, ok bool) {
	if len(frame) < 4 || int(binary.BigEndian.Uint32(frame)) != len(frame)-4 {
		return nil, 0, 0, false
	}
	ev := frame[4:]
	t, ok1 := Field(ev, 1)
	es, ee, ok2 := FieldRange(ev, 2)
	if !ok1 || !ok2 {
		return nil, 0, 0, false
	}
	rs, re, ok3 := FieldRange(ev[es:ee], 1)
	if !ok3 {
		return nil, 0, 0, false
	}
	return t, 4 + es + rs, 4 + es + re, true
}

// Field returns the first length-delimited field num of msg.
func Field(msg []byte, num protowire.Number) ([]byte, bool) {
	s, e, ok := FieldRange(msg, num)
	if !ok {
		return nil, false
	}
	return msg[s:e], true
}

// FieldRange returns the offsets [start, end) in msg of the value of the
// first length-delimited field num.
func FieldRange(msg []byte, num protowire.Number) (start, end int, ok bool) {
	found := false
	err := EachField(msg, func(n protowire.Number, s, e int) bool {
		if n == num {
			start, end, found = s, e, true
			return false
		}
		return true
	})
	return start, end, found && err
}

// EachField calls fn with the number and value offsets [start, end) of
// every length-delimited field of msg, in order, until fn returns false. It
// reports whether msg parsed (up to where fn stopped).
func EachField(msg []byte, fn func(num protowire.Number, start, end int) bool) bool {
	off := 0
	for off < len(msg) {
		n, typ, l := protowire.ConsumeTag(msg[off:])
		if l < 0 {
			return false
		}
		off += l
		if typ == protowire.BytesType {
			v, l := protowire.ConsumeBytes(msg[off:])
			if l < 0 {
				return false
			}
			s := off + l - len(v)
			off += l
			if !fn(n, s, s+len(v)) {
				return true
			}
			continue
		}
		l = protowire.ConsumeFieldValue(n, typ, msg[off:])
		if l < 0 {
			return false
		}
		off += l
	}
	return true
}

// AppendBytesField appends field num holding v to b.
func AppendBytesField(b []byte, num protowire.Number, v []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}
