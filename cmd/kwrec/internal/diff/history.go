package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
)

// Source is what [Compare] reads: a [cassettes.Reader]. Compare closes a
// Source that is an [io.Closer] when it is done with it.
type Source interface {
	Next() (cassettes.Entry, error)
}

var _ Source = (*cassettes.Reader)(nil)

// Opener opens a cassette for [Compare], which reads it up to twice: once
// for every version's resourceVersion and sum, and again, only when
// versions differ, for those versions' fields.
type Opener func() (Source, error)

// version is one state of an object as recorded, without its bytes: what
// aligning histories needs, and where to find the rest.
type version struct {
	sum     sum    // of its canonical form, which equal versions share
	rv      rvCode // its resourceVersion, see rvTable
	ord     uint32 // its object's place among the cassette's, see scanner
	deleted bool   // a DELETED event
}

// rvCode is a resourceVersion in 8 bytes: "" is 0, a decimal number n as
// kube-apiserver writes them (no sign, no leading zero) is n+1, and any
// other text has rvText set and numbers it in its recording's rvTable.
// A million versions' resourceVersions as strings took 29 MB beside
// their records.
type rvCode uint64

const rvText rvCode = 1 << 63

// rvTable codes a recording's resourceVersions.
type rvTable struct {
	texts []string
	index map[string]rvCode
}

// code returns s's code, the same for the same text.
func (t *rvTable) code(s string) rvCode {
	if s == "" {
		return 0
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil && n < uint64(rvText)-1 && (s[0] != '0' || s == "0") {
		return rvCode(n + 1)
	}
	if c, ok := t.index[s]; ok {
		return c
	}
	if t.index == nil {
		t.index = map[string]rvCode{}
	}
	c := rvText | rvCode(len(t.texts))
	t.texts = append(t.texts, s)
	t.index[s] = c
	return c
}

// text returns the resourceVersion c codes.
func (t *rvTable) text(c rvCode) string {
	switch {
	case c == 0:
		return ""
	case c&rvText != 0:
		return t.texts[c&^rvText]
	}
	return strconv.FormatUint(uint64(c-1), 10)
}

// history is every version of one object, in recording order.
type history struct {
	versions []version
}

// recording is the objects of one cassette: collection → key → history.
type recording struct {
	colls map[string]map[string]*history
	rvs   rvTable
	canon canonizer
}

// reading tracks one interaction while a cassette is read.
type reading struct {
	collection string
	watch      bool
	ok         bool // a GET of a collection or object answered 200
	body       bytes.Buffer
}

// candidate is one object a cassette holds: a watch event's, a list's
// item, a get's body. Each has its place, ord, in the order the cassette's
// lines hold them, the same on every reading.
type candidate struct {
	ord  int
	coll string
	typ  string // the watch event's type, "" for a list item or get
	raw  []byte // the JSON object, or the protobuf message when kind is set
	// apiVersion and kind are a protobuf object's.
	apiVersion, kind string
}

// json returns c's object as JSON, nil for a kind [skipKind] skips.
func (c *candidate) json() ([]byte, error) {
	if c.kind == "" {
		return c.raw, nil
	}
	return protoToJSON(c.apiVersion, c.kind, c.raw)
}

// scanner walks a cassette's candidates. A cassette cut mid-write is read
// up to the cut.
type scanner struct {
	n     int
	visit func(*candidate) error
}

// errStop ends a scan early, without error.
var errStop = errors.New("stop")

// scan calls visit with every object version src's lists, gets and watch
// events hold, in order, and closes src when it is an io.Closer.
func scan(src Source, visit func(*candidate) error) error {
	if c, ok := src.(io.Closer); ok {
		defer c.Close()
	}
	sc := &scanner{visit: visit}
	open := map[int]*reading{}
	for {
		e, err := src.Next()
		if err == io.EOF || errors.Is(err, cassettes.ErrTruncated) {
			return nil
		}
		if err != nil {
			return err
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
				err = sc.event(rd.collection, e.Frame.Data)
			} else {
				rd.body.Write(e.Frame.Data)
			}
		case e.End != nil:
			rd := open[e.ID]
			delete(open, e.ID)
			if rd.ok && !rd.watch && rd.body.Len() > 0 {
				err = sc.body(rd.collection, rd.body.Bytes())
			}
		}
		if err == errStop {
			return nil
		}
		if err != nil {
			return fmt.Errorf("line %d: %w", e.Line, err)
		}
	}
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

// event visits the object of one watch event frame.
func (sc *scanner) event(coll string, frame []byte) error {
	if t := bytes.TrimSpace(frame); len(t) > 0 && t[0] == '{' {
		typ, start, end, err := wire.SplitWatchEventJSON(t)
		if err != nil || typ == "BOOKMARK" || typ == "ERROR" {
			return err
		}
		return sc.add(&candidate{coll: coll, typ: typ, raw: t[start:end]})
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
	return sc.add(&candidate{coll: coll, typ: typ, raw: frame[start:end][ms:me], apiVersion: apiVersion, kind: kind})
}

// body visits the objects of a whole list or get response.
func (sc *scanner) body(coll string, b []byte) error {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		kind, _, _, items, err := wire.ListItemsJSON(t)
		if err != nil {
			return err
		}
		if !strings.HasSuffix(kind, "List") {
			return sc.add(&candidate{coll: coll, raw: t})
		}
		for _, it := range items {
			if err := sc.add(&candidate{coll: coll, raw: t[it[0]:it[1]]}); err != nil {
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
		return sc.add(&candidate{coll: coll, raw: msg, apiVersion: apiVersion, kind: kind})
	}
	// A list message: ListMeta is field 1, each item (not enveloped) a
	// field 2.
	var ferr error
	wire.EachField(msg, func(num protowire.Number, start, end int) bool {
		if num != 2 {
			return true
		}
		ferr = sc.add(&candidate{coll: coll, raw: msg[start:end], apiVersion: apiVersion, kind: strings.TrimSuffix(kind, "List")})
		return ferr == nil
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

// add visits c, numbered.
func (sc *scanner) add(c *candidate) error {
	c.ord = sc.n
	sc.n++
	return sc.visit(c)
}

// read reads every version src holds into a recording, pats dropped.
func read(src Source, pats []pattern) (*recording, error) {
	rec := &recording{colls: map[string]map[string]*history{}, canon: canonizer{pats: pats}}
	if err := scan(src, rec.add); err != nil {
		return nil, err
	}
	for _, objs := range rec.colls {
		for _, h := range objs {
			h.dedup()
		}
	}
	return rec, nil
}

// add records the version c holds.
func (rec *recording) add(c *candidate) error {
	raw, err := c.json()
	if err != nil || raw == nil {
		return err
	}
	m, err := wire.MetaJSON(raw)
	if err != nil {
		return err
	}
	if skipKind(m.Kind) {
		return nil
	}
	canon, err := rec.canon.canonical(raw)
	if err != nil {
		return err
	}
	key := strings.TrimPrefix(m.Key(), "/")
	objs := rec.colls[c.coll]
	if objs == nil {
		objs = map[string]*history{}
		rec.colls[c.coll] = objs
	}
	h := objs[key]
	if h == nil {
		h = &history{}
		objs[key] = h
	}
	if c.ord > math.MaxUint32 {
		return fmt.Errorf("more than %d object versions: too many for kwrec diff; compare windows of the recordings (kwrec diff --from/--to)", uint64(math.MaxUint32)+1)
	}
	deleted := c.typ == "DELETED"
	h.versions = append(h.versions, version{rv: rec.rvs.code(m.ResourceVersion), sum: sumOf(canon, deleted), ord: uint32(c.ord), deleted: deleted})
	return nil
}

// dedup keeps each resourceVersion once, the first seen: a list and the
// watch that follows it, or two watches, repeat versions. A DELETED event
// carries the resourceVersion of the deletion, which no version of the
// object has: two watches that both saw it keep it once. Then it collapses
// consecutive equal versions into the first: a write that changed only
// ignored fields is no change.
func (h *history) dedup() {
	type seenKey struct {
		rv      rvCode
		deleted bool
	}
	var seen map[seenKey]bool
	if len(h.versions) > 1 {
		seen = make(map[seenKey]bool, len(h.versions))
	}
	kept := h.versions[:0]
	for _, v := range h.versions {
		if v.rv != 0 && len(h.versions) > 1 {
			if k := (seenKey{v.rv, v.deleted}); seen[k] {
				continue
			} else {
				seen[k] = true
			}
		}
		if n := len(kept); n > 0 && kept[n-1].sum == v.sum {
			continue
		}
		kept = append(kept, v)
	}
	// The slice grew by doubling: what comparing keeps is what it holds.
	h.versions = slices.Clone(kept)
}
