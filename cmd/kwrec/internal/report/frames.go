package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/describe"
	"github.com/kwrec/kwrec/internal/wire"
)

// frame turns one frame of lane l into its mark, storing the object
// versions it carries.
func (b *builder) frame(l *Lane, data []byte) pendingMark {
	p := pendingMark{typ: typeIndex(TypeOther), version: -1, note: -1}
	if l.Watch {
		if typ, obj, ok := b.watchEvent(data); ok {
			p.typ = typeIndex(typ)
			switch typ {
			case TypeBookmark, TypeError:
				s := describe.Frame(data)
				p.note = b.note(strings.TrimPrefix(s.String(), typ+" "))
				p.rv = scanRV(s.ResourceVersion)
			default:
				if obj.meta.Name != "" {
					p.version = b.store.add(obj)
				}
				p.rv = scanRV(obj.meta.ResourceVersion)
			}
			return p
		}
	}
	s := describe.Frame(data)
	p.note = b.note(s.String())
	switch {
	case s.Kind == "Status":
		p.typ = typeIndex(TypeError)
	case strings.HasSuffix(s.Kind, "List") || s.Kind == "Table":
		p.typ = typeIndex(TypeList)
		p.rv = scanRV(s.ResourceVersion)
		if b.groups[l.Group].Name != OtherGroup {
			// Discovery documents are lists too, of no objects anyone watches.
			p.items = b.listItems(data)
		}
	case s.Name != "" && s.Kind != "":
		if obj, ok := wholeObject(data); ok {
			p.typ = typeIndex(TypeObject)
			p.version = b.store.add(obj)
			p.rv = scanRV(obj.meta.ResourceVersion)
		}
	}
	return p
}

func scanRV(s string) int64 {
	var rv int64
	fmt.Sscan(s, &rv)
	return rv
}

// object is one object as a frame carries it, with what it takes to show
// it: its JSON (pretty lazily) or, for protobuf the scheme cannot convert,
// its size.
type object struct {
	meta wire.Meta
	json []byte // compact JSON, nil when only protobuf
	size int    // protobuf size when json is nil
}

// lines returns the object's indented JSON lines, or one line naming a
// protobuf object kwrec cannot convert.
func (o object) lines() []string {
	if o.json == nil {
		return []string{fmt.Sprintf("protobuf (%d bytes): %s %s rv=%s", o.size, o.meta.Kind, o.meta.Key(), o.meta.ResourceVersion)}
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, o.json, "", "  "); err != nil {
		return strings.Split(string(o.json), "\n")
	}
	return strings.Split(buf.String(), "\n")
}

// watchEvent splits a JSON or protobuf watch event.
func (b *builder) watchEvent(data []byte) (typ string, o object, ok bool) {
	if typ, start, end, err := wire.SplitWatchEventJSON(data); err == nil {
		raw := data[start:end]
		m, err := wire.MetaJSON(raw)
		if err != nil {
			return typ, o, true
		}
		return typ, object{meta: m, json: raw}, true
	}
	typ, start, end, ok := wire.SplitWatchEventProto(data)
	if !ok {
		return "", o, false
	}
	o, _ = protoObject(data[start:end], "", "")
	return typ, o, true
}

// protoObject reads an enveloped protobuf object, or a bare message of
// kind and apiVersion (a list item), converting built-in types to JSON
// through client-go's scheme (which it only reads).
func protoObject(b []byte, apiVersion, kind string) (object, bool) {
	if av, k, start, end, ok := wire.Unenvelope(b); ok {
		apiVersion, kind, b = av, k, b[start:end]
	}
	m, err := wire.MetaProto(b)
	if err != nil {
		return object{size: len(b)}, false
	}
	m.Kind, m.APIVersion = kind, apiVersion
	o := object{meta: m, size: len(b)}
	gvk := schema.FromAPIVersionAndKind(apiVersion, kind)
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return o, true
	}
	pm, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok || pm.Unmarshal(b) != nil {
		return o, true
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	if j, err := json.Marshal(obj); err == nil {
		o.json = j
	}
	return o, true
}

// wholeObject reads a body holding one object.
func wholeObject(data []byte) (object, bool) {
	if bytes.HasPrefix(data, wire.ProtoMagic) {
		return protoObject(data, "", "")
	}
	m, err := wire.MetaJSON(data)
	if err != nil || m.Name == "" {
		return object{}, false
	}
	return object{meta: m, json: bytes.TrimSpace(data)}, true
}

// listItems stores the items of a JSON or protobuf list body and returns
// their versions; items carry no kind, so they get the list's.
func (b *builder) listItems(data []byte) []int {
	if bytes.HasPrefix(data, wire.ProtoMagic) {
		av, kind, start, end, ok := wire.Unenvelope(data)
		if !ok {
			return nil
		}
		itemKind := strings.TrimSuffix(kind, "List")
		var out []int
		wire.EachField(data[start:end], func(num protowire.Number, s, e int) bool {
			if num == 2 {
				if o, ok := protoObject(data[start+s:start+e], av, itemKind); ok && o.meta.Name != "" {
					out = append(out, b.store.add(o))
				}
			}
			return true
		})
		return out
	}
	kind, av, _, items, err := wire.ListItemsJSON(data)
	if err != nil {
		return nil
	}
	itemKind := strings.TrimSuffix(kind, "List")
	var out []int
	for _, it := range items {
		raw := data[it[0]:it[1]]
		m, err := wire.MetaJSON(raw)
		if err != nil || m.Name == "" {
			continue
		}
		if m.Kind == "" {
			m.Kind, m.APIVersion = itemKind, av
			raw = wire.WithTypeMeta(raw, itemKind, av)
		}
		out = append(out, b.store.add(object{meta: m, json: raw}))
	}
	return out
}
