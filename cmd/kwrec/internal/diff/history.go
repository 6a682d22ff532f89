package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
)

// Source is what [Compare] reads: a [cassettes.Reader].
type Source interface {
	Next() (cassettes.Entry, error)
}

var _ Source = (*cassettes.Reader)(nil)

// version is one state of an object as recorded.
type version struct {
	rv      string
	deleted bool
	obj     any // the object as decoded JSON (json.Number for numbers)
}

// history is every version of one object, in recording order.
type history struct {
	versions []version
	seen     map[string]bool // resourceVersions already kept
}

// recording is the objects of one cassette: collection → key → history.
type recording map[string]map[string]*history

// reading tracks one interaction while a cassette is read.
type reading struct {
	collection string
	watch      bool
	ok         bool // a GET of a collection or object answered 200
	body       bytes.Buffer
}

// read gathers every object version src's lists, gets and watch events
// hold. A cassette cut mid-write is read up to the cut.
func read(src Source) (recording, error) {
	rec := recording{}
	open := map[int]*reading{}
	for {
		e, err := src.Next()
		if err == io.EOF || errors.Is(err, cassettes.ErrTruncated) {
			break
		}
		if err != nil {
			return nil, err
		}
		switch {
		case e.Request != nil:
			open[e.ID] = newReading(e.Request)
		case e.Response != nil:
			rd := open[e.ID]
			rd.ok = rd.ok && e.Response.Status == 200
		case e.Frame != nil:
			rd := open[e.ID]
			if !rd.ok {
				continue
			}
			if rd.watch {
				if err := rec.event(rd.collection, e.Frame.Data); err != nil {
					return nil, fmt.Errorf("line %d: %w", e.Line, err)
				}
				continue
			}
			rd.body.Write(e.Frame.Data)
		case e.End != nil:
			rd := open[e.ID]
			delete(open, e.ID)
			if rd.ok && !rd.watch && rd.body.Len() > 0 {
				if err := rec.body(rd.collection, rd.body.Bytes()); err != nil {
					return nil, fmt.Errorf("line %d: %w", e.Line, err)
				}
			}
		}
	}
	return rec, nil
}

func newReading(r *cassettes.Request) *reading {
	rd := &reading{}
	u, err := url.Parse(r.URL)
	if err != nil || r.Method != "GET" {
		return rd
	}
	p, ok := apipath.Parse(u.Path)
	if !ok {
		return rd
	}
	p.Namespace, p.Name = "", ""
	rd.collection, rd.watch, rd.ok = p.Collection(), wire.IsWatchURL(u), true
	return rd
}

// event adds the object of one watch event frame.
func (rec recording) event(coll string, frame []byte) error {
	if t := bytes.TrimSpace(frame); len(t) > 0 && t[0] == '{' {
		typ, start, end, err := wire.SplitWatchEventJSON(t)
		if err != nil {
			return err
		}
		return rec.add(coll, typ, t[start:end])
	}
	typ, start, end, ok := wire.SplitWatchEventProto(frame)
	if !ok {
		return errors.New("a watch frame that is neither a JSON nor a protobuf watch event")
	}
	if typ == "BOOKMARK" || typ == "ERROR" {
		return nil
	}
	apiVersion, kind, ms, me, ok := wire.Unenvelope(frame[start:end])
	if !ok {
		return errors.New("a protobuf watch event whose object has no k8s envelope")
	}
	obj, err := protoToJSON(apiVersion, kind, frame[start:end][ms:me])
	if err != nil || obj == nil {
		return err
	}
	return rec.add(coll, typ, obj)
}

// body adds the objects of a whole list or get response.
func (rec recording) body(coll string, b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		kind, _, _, items, err := wire.ListItemsJSON(t)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(kind, "List") {
			return rec.add(coll, "", t)
		}
		for _, it := range items {
			if err := rec.add(coll, "", t[it[0]:it[1]]); err != nil {
				return err
			}
		}
		return nil
	}
	apiVersion, kind, ms, me, ok := wire.Unenvelope(b)
	if !ok {
		return nil // not an object: nothing to compare
	}
	msg := b[ms:me]
	if !strings.HasSuffix(kind, "List") {
		obj, err := protoToJSON(apiVersion, kind, msg)
		if err != nil || obj == nil {
			return err
		}
		return rec.add(coll, "", obj)
	}
	// A list message: ListMeta is field 1, each item (not enveloped) a
	// field 2.
	var ferr error
	wire.EachField(msg, func(num protowire.Number, start, end int) bool {
		if num != 2 {
			return true
		}
		obj, err := protoToJSON(apiVersion, strings.TrimSuffix(kind, "List"), msg[start:end])
		if err == nil && obj != nil {
			err = rec.add(coll, "", obj)
		}
		ferr = err
		return err == nil
	})
	return ferr
}

// skipKind reports kinds that are views of objects, not objects: kubectl's
// server-side tables and metadata-only lists, and Status.
func skipKind(kind string) bool {
	return kind == "Table" || kind == "Status" || strings.HasPrefix(kind, "PartialObjectMetadata")
}

// protoMessage is what every built-in type's generated code implements.
type protoMessage interface {
	runtime.Object
	Unmarshal([]byte) error
}

// protoToJSON decodes an object's protobuf message to JSON through
// client-go's scheme, nil for kinds skipKind skips. The API server speaks
// protobuf only for built-in types, which the scheme knows.
func protoToJSON(apiVersion, kind string, msg []byte) ([]byte, error) {
	if skipKind(kind) {
		return nil, nil
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, fmt.Errorf("protobuf object of apiVersion %q: %v", apiVersion, err)
	}
	obj, err := clientgoscheme.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil, fmt.Errorf("cannot decode protobuf %s %s: not a built-in type client-go knows; record it in JSON", apiVersion, kind)
	}
	pm, ok := obj.(protoMessage)
	if !ok {
		return nil, fmt.Errorf("cannot decode protobuf %s %s: the type has no protobuf form", apiVersion, kind)
	}
	if err := pm.Unmarshal(msg); err != nil {
		return nil, fmt.Errorf("decoding protobuf %s %s: %v", apiVersion, kind, err)
	}
	return json.Marshal(pm)
}

// add records one object version; typ is its watch event type, "" for a
// list item or get.
func (rec recording) add(coll, typ string, raw []byte) error {
	if typ == "BOOKMARK" || typ == "ERROR" {
		return nil
	}
	m, err := wire.MetaJSON(raw)
	if err != nil {
		return err
	}
	if skipKind(m.Kind) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj any
	if err := dec.Decode(&obj); err != nil {
		return err
	}
	key := strings.TrimPrefix(m.Key(), "/")
	objs := rec[coll]
	if objs == nil {
		objs = map[string]*history{}
		rec[coll] = objs
	}
	h := objs[key]
	if h == nil {
		h = &history{seen: map[string]bool{}}
		objs[key] = h
	}
	// A DELETED event carries the resourceVersion of the deletion, which
	// no version of the object has: two watches that both saw it keep
	// it once.
	deleted := typ == "DELETED"
	if seen := fmt.Sprintf("%t/%s", deleted, m.ResourceVersion); m.ResourceVersion != "" {
		if h.seen[seen] {
			return nil
		}
		h.seen[seen] = true
	}
	h.versions = append(h.versions, version{rv: m.ResourceVersion, deleted: deleted, obj: obj})
	return nil
}
