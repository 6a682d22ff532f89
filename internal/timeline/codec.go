package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"k8s.io/apimachinery/pkg/api/meta"
	"reflect"
	"strconv"

	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// Codec turns recorded objects into wire bytes in the encoding a client
// negotiated. Bytes recorded in that encoding are used as they are;
// otherwise built-in types are converted through client-go's scheme (which
// only reads it). The zero value is ready to use.
type Codec struct{}

// protoMessage is what every built-in type's generated code implements.
type protoMessage interface {
	runtime.Object
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}

func (t *Timeline) gvk() schema.GroupVersionKind {
	gv, _ := schema.ParseGroupVersion(t.APIVersion)
	return gv.WithKind(t.Kind)
}

// CanProtobuf reports whether t's objects can be served in protobuf: they
// are built-in types client-go's scheme knows. (The API server serves
// custom resources in JSON only, too.)
func (Codec) CanProtobuf(t *Timeline) bool {
	obj, err := clientgoscheme.Scheme.New(t.gvk())
	if err != nil {
		return false
	}
	_, ok := obj.(protoMessage)
	return ok
}

func (t *Timeline) newObject() (protoMessage, error) {
	obj, err := clientgoscheme.Scheme.New(t.gvk())
	if err != nil {
		return nil, fmt.Errorf("cannot convert %s between JSON and protobuf: %v", t.gvk(), err)
	}
	pm, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("cannot convert %s between JSON and protobuf: no protobuf form", t.gvk())
	}
	return pm, nil
}

// body returns raw, the recorded bytes of o, as protobuf message bytes
// (proto) or as JSON, with kind and apiVersion (typed) or without.
func (c Codec) body(t *Timeline, o *Object, raw []byte, proto, typed bool) ([]byte, error) {
	if t.Takes() && !o.Ref.W || o.Ref.Restamp {
		// Recorded bytes carry the recorded resourceVersion; the
		// timeline serves it scaled (see RVScale). Restamped bytes
		// carry an earlier version's.
		var err error
		if raw, err = setRV(raw, o.Ref.Enc, o.RV); err != nil {
			return nil, fmt.Errorf("%s %s: %v", t.Kind, o.Key, err)
		}
	}
	switch {
	case proto && o.Ref.Enc == Protobuf:
		return raw, nil
	case !proto && o.Ref.Enc == JSON:
		switch {
		case typed && !o.Ref.Typed:
			return wire.WithTypeMeta(raw, t.Kind, t.APIVersion), nil
		case !typed && o.Ref.Typed:
			return wire.WithoutTypeMeta(raw), nil
		}
		return raw, nil
	}
	obj, err := t.newObject()
	if err != nil {
		return nil, err
	}
	if proto { // recorded JSON
		if err := json.Unmarshal(raw, obj); err != nil {
			return nil, fmt.Errorf("converting %s %s to protobuf: %v", t.Kind, o.Key, err)
		}
		return obj.Marshal()
	}
	if err := obj.Unmarshal(raw); err != nil {
		return nil, fmt.Errorf("converting %s %s to JSON: %v", t.Kind, o.Key, err)
	}
	if typed {
		obj.GetObjectKind().SetGroupVersionKind(t.gvk())
	}
	return json.Marshal(obj)
}

// Object returns o (its recorded bytes raw) as the body of a get.
func (c Codec) Object(t *Timeline, o *Object, raw []byte, proto bool) ([]byte, error) {
	b, err := c.body(t, o, raw, proto, true)
	if err != nil || !proto {
		return append(b, '\n'), err
	}
	return wire.Envelope(t.APIVersion, t.Kind, b), nil
}

// WatchEvent returns a watch event frame of type typ for o.
func (c Codec) WatchEvent(t *Timeline, typ string, o *Object, raw []byte, proto bool) ([]byte, error) {
	b, err := c.body(t, o, raw, proto, true)
	if err != nil {
		return nil, err
	}
	if proto {
		return wire.WatchEventProto(typ, wire.Envelope(t.APIVersion, t.Kind, b)), nil
	}
	return wire.WatchEventJSON(typ, b), nil
}

// Bookmark returns a BOOKMARK frame at rv; initialEnd marks the end of a
// streaming list's initial events.
func (c Codec) Bookmark(t *Timeline, rv int64, initialEnd, proto bool) []byte {
	if b, ok := typedBookmark(t, rv, initialEnd, proto); ok {
		return b
	}
	if !proto {
		return wire.WatchEventJSON("BOOKMARK", wire.BookmarkObjectJSON(t.Kind, t.APIVersion, rv, initialEnd))
	}
	var om []byte
	om = wire.AppendBytesField(om, 6, fmt.Appendf(nil, "%d", rv))
	if initialEnd {
		var entry []byte
		entry = wire.AppendBytesField(entry, 1, []byte(wire.InitialEventsEnd))
		entry = wire.AppendBytesField(entry, 2, []byte("true"))
		om = wire.AppendBytesField(om, 12, entry)
	}
	msg := wire.AppendBytesField(nil, 1, om)
	return wire.WatchEventProto("BOOKMARK", wire.Envelope(t.APIVersion, t.Kind, msg))
}

// typedBookmark is the BOOKMARK frame of a built-in kind as the server
// writes it: the kind's empty Go value (with the fields it always
// encodes) holding only the resourceVersion and the initial-events-end
// annotation.
func typedBookmark(t *Timeline, rv int64, initialEnd, proto bool) ([]byte, bool) {
	obj, err := t.newObject()
	if err != nil {
		return nil, false
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	m.SetResourceVersion(strconv.FormatInt(rv, 10))
	// The server makes it from its internal type, where spec.replicas is
	// not a pointer: it reads 0, not null.
	if sp := reflect.ValueOf(obj).Elem().FieldByName("Spec"); sp.IsValid() {
		if rep := sp.FieldByName("Replicas"); rep.IsValid() && rep.Type() == reflect.TypeFor[*int32]() && rep.IsNil() {
			rep.Set(reflect.ValueOf(new(int32)))
		}
	}
	if initialEnd {
		m.SetAnnotations(map[string]string{wire.InitialEventsEnd: "true"})
	}
	if proto {
		b, err := obj.Marshal()
		if err != nil {
			return nil, false
		}
		return wire.WatchEventProto("BOOKMARK", wire.Envelope(t.APIVersion, t.Kind, b)), true
	}
	obj.GetObjectKind().SetGroupVersionKind(t.gvk())
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, false
	}
	return wire.WatchEventJSON("BOOKMARK", b), true
}

// ErrorEvent returns an ERROR frame carrying st.
func (Codec) ErrorEvent(st *metav1.Status, proto bool) []byte {
	if proto {
		return wire.WatchEventProto("ERROR", wire.StatusProto(st))
	}
	return wire.WatchEventJSON("ERROR", bytes.TrimSuffix(wire.StatusJSON(st), []byte("\n")))
}

// RecordedError returns the ERROR frame of a recorded Status object raw
// (in encoding enc) in the requested encoding.
func (c Codec) RecordedError(raw []byte, enc Encoding, proto bool) ([]byte, error) {
	if (enc == Protobuf) == proto {
		if proto {
			return wire.WatchEventProto("ERROR", wire.Envelope("v1", "Status", raw)), nil
		}
		return wire.WatchEventJSON("ERROR", raw), nil
	}
	var st metav1.Status
	var err error
	if enc == Protobuf {
		err = st.Unmarshal(raw)
	} else {
		err = json.Unmarshal(raw, &st)
	}
	if err != nil {
		return nil, fmt.Errorf("recorded ERROR event: %v", err)
	}
	st.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return c.ErrorEvent(&st, proto), nil
}

// List returns the body of list l, raws the recorded bytes of its items.
func (c Codec) List(t *Timeline, l List, raws [][]byte, proto bool) ([]byte, error) {
	// A custom resource's list is the server's unstructured one: every
	// item with its kind and apiVersion.
	unstructured := !proto && !c.CanProtobuf(t)
	items := make([][]byte, len(raws))
	for i, raw := range raws {
		b, err := c.body(t, &l.Items[i], raw, proto, unstructured)
		if err != nil {
			return nil, err
		}
		items[i] = b
	}
	if !proto {
		return wire.ListJSON(t.ListKind, t.APIVersion, l.RV, l.Continue, l.Remaining, unstructured, items), nil
	}
	n := 64
	for _, it := range items {
		n += len(it) + 8
	}
	msg := make([]byte, 0, n)
	msg = wire.AppendBytesField(msg, 1, wire.ListMetaProto(fmt.Sprint(l.RV), l.Continue, l.Remaining))
	for _, it := range items {
		msg = wire.AppendBytesField(msg, 2, it)
	}
	return wire.Envelope(t.APIVersion, t.ListKind, msg), nil
}

// ToJSON returns an enveloped protobuf object of t's kind (a request
// body) as typed JSON.
func (c Codec) ToJSON(t *Timeline, body []byte) ([]byte, error) {
	_, _, ms, me, ok := wire.Unenvelope(body)
	if !ok {
		return nil, fmt.Errorf("the request body is not an enveloped protobuf object")
	}
	obj, err := t.newObject()
	if err != nil {
		return nil, err
	}
	if err := obj.Unmarshal(body[ms:me]); err != nil {
		return nil, fmt.Errorf("decoding the protobuf request body as %s: %v", t.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(t.gvk())
	return json.Marshal(obj)
}

func setRV(raw []byte, enc Encoding, rv int64) ([]byte, error) {
	v := strconv.FormatInt(rv, 10)
	if enc == Protobuf {
		return wire.SetRVProto(raw, v)
	}
	return wire.SetRVJSON(raw, v)
}
