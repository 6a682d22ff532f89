package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// This file rebuilds object state from the recorded JSON lists and watch
// events of each collection, so that requests the recording never saw (a
// re-list after an injected 410, a re-watch from the last resourceVersion
// after a reset) can be answered the way the API server would.
//
// resourceVersions are opaque to clients, but every etcd-backed API server
// hands out etcd revisions: decimal integers that only grow. The fallback
// relies on that and is disabled for a collection with any other value.

// object is one recorded object, reduced to what the fallback needs. Its
// bytes stay where the recording holds them (in memory for [New], in the
// file for [Open]): ref names the frame and the byte range in it. A long
// watch makes one per event, so it is kept small.
type object struct {
	key    string // namespace/name
	labels string // labels.Set.String() form, "" for none
	ref    objRef
}

// objRef is where an object's JSON is: bytes [off, off+n) of frame i of in,
// or, with in nil, of the collection's held[i] (a list body that was split
// across frames, joined in memory).
type objRef struct {
	in     *cassettes.Interaction
	i      int32
	off, n int32
	typed  bool // the bytes have kind and apiVersion (list items do not)
}

// of returns the object's bytes in data, the frame or held body it is in.
func (r objRef) of(data []byte) ([]byte, error) {
	if int(r.off)+int(r.n) > len(data) {
		id := 0
		if r.in != nil {
			id = r.in.ID
		}
		return nil, fmt.Errorf("kwrec replay: frame %d of interaction %d is shorter than when the cassette was opened: it changed since", r.i+1, id)
	}
	return data[r.off : r.off+r.n], nil
}

func (o *object) namespace() string { ns, _, _ := strings.Cut(o.key, "/"); return ns }
func (o *object) name() string      { _, n, _ := strings.Cut(o.key, "/"); return n }

type event struct {
	rv  int64
	typ string
	obj object
}

// at is when the event was recorded, from the cassette start.
func (e *event) at() time.Duration {
	in := e.obj.ref.in
	at := in.At + in.Frames[e.obj.ref.i].At
	if in.Response != nil {
		at += in.Response.Latency
	}
	return at
}

type snapshot struct {
	rv    int64
	items map[string]object
}

// collection is everything recorded about one collection path.
type collection struct {
	path       string
	rp         apipath.Path
	progress   int64 // the highest resourceVersion served so far
	last       int64 // the highest resourceVersion recorded
	oldest     int64 // the oldest resourceVersion state is known at
	kind       string
	listKind   string
	apiVersion string
	ivs        []*ivState

	broken string // why the fallback cannot answer for this collection
	snaps  []*snapshot
	events []event
	held   [][]byte // list bodies split across frames (see objRef)

	// Only while the recording is being read (see observe):
	snapByRV map[int64]*snapshot
	strs     map[string]string // interned keys, labels and event types
}

// intern returns one shared copy of s: a long watch names the same few
// objects, labels and event types over and over.
func (c *collection) intern(s string) string {
	if s == "" {
		return ""
	}
	if c.strs == nil {
		c.strs = map[string]string{}
	}
	if v, ok := c.strs[s]; ok {
		return v
	}
	c.strs[s] = s
	return s
}

// scanRV returns the first "resourceVersion" string value in a JSON frame:
// for a watch event, the object's metadata.resourceVersion (the API server
// writes metadata before any spec that could hold another such key); for a
// list, the list's. It returns 0 when there is none or it is not numeric.
func scanRV(data []byte) int64 {
	const key = `"resourceVersion":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func isJSON(h interface{ Get(string) string }) bool {
	return mediaType(h.Get("Content-Type")) == "application/json"
}

func isWatch(q url.Values) bool {
	w, _ := strconv.ParseBool(q.Get("watch")) // "true", "1", Python's "True"
	return w
}

type watchLine struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

type objMeta struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Labels          map[string]string `json:"labels"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
}

type listBody struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Metadata   struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
}

// parseObject reads the metadata of the object JSON raw, which is bytes
// [off, off+len(raw)) of the frame ref names (ref.off and ref.n are set here).
func parseObject(raw []byte, ref objRef, off int) (object, objMeta, error) {
	m, err := readMeta(raw)
	if err != nil {
		return object{}, m, err
	}
	ref.off, ref.n = int32(off), int32(len(raw))
	ref.typed = m.Kind != "" && m.APIVersion != ""
	o := object{key: m.Metadata.Namespace + "/" + m.Metadata.Name, ref: ref}
	if len(m.Metadata.Labels) > 0 {
		o.labels = labels.Set(m.Metadata.Labels).String()
	}
	return o, m, nil
}

// readMeta reads kind, apiVersion and metadata from the object JSON raw,
// and stops there: the API server writes them first, so the spec and status
// that make up most of an object are not even scanned.
func readMeta(raw []byte) (objMeta, error) {
	var m objMeta
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = fmt.Errorf("not a JSON object")
		}
		return m, err
	}
	for seen := 0; seen < 3 && dec.More(); {
		t, err := dec.Token()
		if err != nil {
			return m, err
		}
		var v any
		switch t {
		case "kind":
			v = &m.Kind
		case "apiVersion":
			v = &m.APIVersion
		case "metadata":
			v = &m.Metadata
		default:
			v = new(json.RawMessage)
			seen--
		}
		if err := dec.Decode(v); err != nil {
			return m, err
		}
		seen++
	}
	return m, nil
}

// splitWatchLine returns the type and the object of a JSON watch event
// line, {"type":"T","object":{...}}, as the API server writes it (one
// newline after), with the object's offset in line; it falls back to a
// full parse for any other layout.
func splitWatchLine(line []byte) (typ string, obj []byte, off int, err error) {
	const head, mid = `{"type":"`, `","object":`
	if rest, ok := bytes.CutPrefix(line, []byte(head)); ok {
		if i := bytes.Index(rest[:min(len(rest), 32)], []byte(mid)); i > 0 {
			body := bytes.TrimRight(rest[i+len(mid):], "\n")
			if n := len(body); n > 2 && body[0] == '{' && body[n-2] == '}' && body[n-1] == '}' {
				off = len(head) + i + len(mid)
				return string(rest[:i]), body[:n-1], off, nil
			}
		}
	}
	var wl watchLine
	if err := json.Unmarshal(line, &wl); err != nil {
		return "", nil, 0, err
	}
	off = bytes.Index(line, wl.Object)
	if off < 0 {
		return "", nil, 0, fmt.Errorf("object not found in the event line")
	}
	return wl.Type, line[off : off+len(wl.Object)], off, nil
}

// initialEventsEnd is the annotation on the bookmark that ends a streaming
// list's initial ADDED events (sendInitialEvents=true).
const initialEventsEnd = "k8s.io/initial-events-end"

// observe takes frame i of a list or watch interaction of c as the
// recording is read, once per frame in recording order, and files what it
// says: the resourceVersion it moves the collection to, and the objects of
// a list or the event of a watch. data is only valid during the call.
func (c *collection) observe(iv *ivState, i int, f cassettes.Frame) {
	in := iv.in
	ref := objRef{in: in, i: int32(i)}
	if !iv.watch {
		switch {
		case i == 0:
			if err := c.addList(iv, f.Data, ref); err != nil {
				// Maybe the first of several frames: joined and parsed
				// by seal.
				iv.listBuf = append([]byte(nil), f.Data...)
			}
		case iv.listBuf != nil:
			iv.listBuf = append(iv.listBuf, f.Data...)
		default: // the first frame was a whole list already
			c.fail(iv, "list body is not JSON: more than one JSON value across its frames")
		}
		return
	}
	var rv int64
	if !bytes.Contains(f.Data[:min(len(f.Data), 24)], []byte(`"ERROR"`)) {
		rv = scanRV(f.Data)
	}
	iv.rvs = append(iv.rvs, rv) // i == len(iv.rvs): every frame of a watch is observed
	c.noteRV(rv)
	if iv.broken {
		return
	}
	// A frame that is not a JSON event with an object, such as garbage
	// hand-edited in to break the client's decoder, changes no state: no
	// client could apply it either.
	typ, obj, off, err := splitWatchLine(f.Data)
	if err != nil || typ == "ERROR" {
		return
	}
	o, m, err := parseObject(obj, ref, off)
	if err != nil {
		return
	}
	orv, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		c.fail(iv, "resourceVersion %q is not an integer", m.Metadata.ResourceVersion)
		iv.broken = true
		return
	}
	if typ == "BOOKMARK" {
		if iv.initial && m.Metadata.Annotations[initialEventsEnd] == "true" {
			s := c.snapAt(orv)
			for _, o := range iv.pending {
				s.items[o.key] = o
			}
			iv.initial, iv.pending = false, nil
		}
		return
	}
	c.noteKinds("", m.APIVersion, m.Kind)
	o.key, o.labels, typ = c.intern(o.key), c.intern(o.labels), c.intern(typ)
	if iv.initial && typ == "ADDED" {
		iv.pending = append(iv.pending, o)
		return
	}
	c.events = append(c.events, event{rv: orv, typ: typ, obj: o})
}

func (c *collection) noteRV(rv int64) {
	if rv > c.last {
		c.last = rv
	}
}

func (c *collection) fail(iv *ivState, format string, a ...any) {
	if c.broken == "" {
		c.broken = fmt.Sprintf("interaction %d: %s", iv.in.ID, fmt.Sprintf(format, a...))
	}
}

func (c *collection) snapAt(rv int64) *snapshot {
	if c.snapByRV == nil {
		c.snapByRV = map[int64]*snapshot{}
	}
	s := c.snapByRV[rv]
	if s == nil {
		s = &snapshot{rv: rv, items: map[string]object{}}
		c.snapByRV[rv] = s
	}
	return s
}

// addList files the list body data, frame ref.i of its interaction; with
// ref.in nil, data is a body joined from several frames, which the
// collection holds.
func (c *collection) addList(iv *ivState, data []byte, ref objRef) error {
	var lb listBody
	if err := json.Unmarshal(data, &lb); err != nil {
		return fmt.Errorf("list body is not JSON: %v", err)
	}
	rv, err := strconv.ParseInt(lb.Metadata.ResourceVersion, 10, 64)
	if err != nil {
		c.fail(iv, "list resourceVersion %q is not an integer", lb.Metadata.ResourceVersion)
		return nil
	}
	c.noteKinds(lb.Kind, lb.APIVersion, "")
	c.noteRV(rv)
	// Serving the body's last frame moves the collection to the list's
	// resourceVersion: its only frame, or the last of those joined.
	n := 1
	if ref.in == nil {
		ref.i = int32(len(c.held))
		c.held = append(c.held, data)
		n = len(iv.in.Frames)
	}
	iv.rvs = make([]int64, n)
	iv.rvs[n-1] = rv
	s := c.snapAt(rv)
	// Each item's bytes, exactly as in data and in order: find them after
	// the previous one (only separators lie between).
	pos := bytes.Index(data, []byte(`"items"`))
	for _, it := range lb.Items {
		off := bytes.Index(data[max(pos, 0):], it)
		if off < 0 {
			c.fail(iv, "list item not found in the list body")
			return nil
		}
		off += max(pos, 0)
		pos = off + len(it)
		o, m, err := parseObject(it, ref, off)
		if err != nil {
			c.fail(iv, "list item: %v", err)
			continue
		}
		c.noteKinds("", "", m.Kind)
		o.key, o.labels = c.intern(o.key), c.intern(o.labels)
		s.items[o.key] = o
	}
	return nil
}

// seal ends the reading of the recording: it parses list bodies that were
// split across frames, orders snapshots and events, and finds the oldest
// resourceVersion state is known at.
func (c *collection) seal() {
	for _, iv := range c.ivs {
		switch {
		case iv.listBuf != nil:
			if err := c.addList(iv, iv.listBuf, objRef{}); err != nil {
				c.fail(iv, "%v", err)
			}
		case !iv.watch && len(iv.in.Frames) == 0:
			c.fail(iv, "list body is not JSON: unexpected end of JSON input")
		}
		iv.listBuf, iv.pending = nil, nil
	}
	for _, s := range c.snapByRV {
		c.snaps = append(c.snaps, s)
	}
	c.snapByRV, c.strs = nil, nil
	sort.Slice(c.snaps, func(i, j int) bool { return c.snaps[i].rv < c.snaps[j].rv })
	sort.SliceStable(c.events, func(i, j int) bool { return c.events[i].rv < c.events[j].rv })
	// The same event recorded twice (two watches that overlap, a re-watch
	// after a reset) is one event: keep the first, in recording order.
	out := c.events[:0]
	for _, e := range c.events {
		dup := false
		for j := len(out) - 1; j >= 0 && out[j].rv == e.rv && !dup; j-- {
			dup = out[j].obj.key == e.obj.key && out[j].typ == e.typ
		}
		if !dup {
			out = append(out, e)
		}
	}
	// Not cloned to its exact size: append grows a large slice by a
	// quarter, and a copy would hold the events twice for a moment, the
	// peak of a long cassette's Open.
	clear(c.events[len(out):])
	c.events = out
	c.oldest = -1
	switch {
	case len(c.snaps) > 0:
		// Events before the first list would need the state before it,
		// which was not recorded: state is known from the first list on.
		c.oldest = c.snaps[0].rv
	case len(c.events) > 0:
		// A watch-only recording: start from nothing before its first event.
		c.oldest = c.events[0].rv - 1
	}
	if c.oldest < 0 && c.broken == "" {
		c.broken = "no list or watch event recorded"
	}
	if c.progress < c.oldest {
		c.progress = c.oldest
	}
}

func (c *collection) noteKinds(listKind, apiVersion, kind string) {
	if listKind != "" && c.listKind == "" {
		c.listKind = listKind
	}
	if apiVersion != "" && c.apiVersion == "" {
		c.apiVersion = apiVersion
	}
	if kind != "" && c.kind == "" {
		c.kind = kind
	}
}

func (c *collection) kinds() (kind, listKind, apiVersion string) {
	kind, listKind, apiVersion = c.kind, c.listKind, c.apiVersion
	if kind == "" && strings.HasSuffix(listKind, "List") {
		kind = strings.TrimSuffix(listKind, "List")
	}
	if listKind == "" && kind != "" {
		listKind = kind + "List"
	}
	if apiVersion == "" {
		apiVersion = c.rp.APIVersion()
	}
	return
}

// stateAt returns the objects at resourceVersion rv, sorted by
// namespace/name as etcd orders them. ok is false when rv is older than the
// oldest state the recording holds.
func (c *collection) stateAt(rv int64) (objs []object, ok bool) {
	if rv < c.oldest {
		return nil, false
	}
	cur := map[string]object{}
	from := c.oldest
	for i := len(c.snaps) - 1; i >= 0; i-- {
		if c.snaps[i].rv <= rv {
			for k, o := range c.snaps[i].items {
				cur[k] = o
			}
			from = c.snaps[i].rv
			break
		}
	}
	for _, e := range c.events {
		if e.rv <= from {
			continue
		}
		if e.rv > rv {
			break
		}
		if e.typ == "DELETED" {
			delete(cur, e.obj.key)
		} else {
			cur[e.obj.key] = e.obj
		}
	}
	objs = make([]object, 0, len(cur))
	for _, o := range cur {
		objs = append(objs, o)
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].key < objs[j].key })
	return objs, true
}

// selector filters objects by labelSelector and fieldSelector
// (metadata.name and metadata.namespace, the fields every resource has).
type selector struct {
	labels labels.Selector
	fields fields.Selector
}

func parseSelector(q url.Values) (selector, error) {
	s := selector{labels: labels.Everything(), fields: fields.Everything()}
	var err error
	if v := q.Get("labelSelector"); v != "" {
		if s.labels, err = labels.Parse(v); err != nil {
			return s, fmt.Errorf("labelSelector %q: %v", v, err)
		}
	}
	if v := q.Get("fieldSelector"); v != "" {
		if s.fields, err = fields.ParseSelector(v); err != nil {
			return s, fmt.Errorf("fieldSelector %q: %v", v, err)
		}
		for _, r := range s.fields.Requirements() {
			if r.Field != "metadata.name" && r.Field != "metadata.namespace" {
				return s, fmt.Errorf("fieldSelector on %s: the fallback only filters on metadata.name and metadata.namespace", r.Field)
			}
		}
	}
	return s, nil
}

func (s selector) matches(o object) bool {
	if !s.labels.Empty() {
		set, err := labels.ConvertSelectorToLabelsMap(o.labels)
		if err != nil || !s.labels.Matches(set) {
			return false
		}
	}
	return s.fields.Empty() || s.fields.Matches(fields.Set{"metadata.name": o.name(), "metadata.namespace": o.namespace()})
}

// statusJSON is a metav1.Status body as the API server writes it.
// retryAfter > 0 goes in details.retryAfterSeconds, where client-go's
// apierrors.SuggestsClientDelay looks (the header alone is not enough once
// the body is a Status).
func statusJSON(code int, reason, message string, retryAfter int) []byte {
	st := map[string]any{
		"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{},
		"status": "Failure", "message": message, "reason": reason, "code": code,
	}
	if retryAfter > 0 {
		st["details"] = map[string]any{"retryAfterSeconds": retryAfter}
	}
	b, _ := json.Marshal(st)
	return append(b, '\n')
}

// eventJSON is the watch event for an object's JSON raw. The API server
// strips kind and apiVersion from list items (typed false) but always sends
// them in watch events, and clients need them to decode: put them back.
func eventJSON(typ string, raw []byte, typed bool, kind, apiVersion string) []byte {
	if !typed && len(raw) > 1 && raw[0] == '{' {
		head := fmt.Sprintf(`{"kind":%q,"apiVersion":%q`, kind, apiVersion)
		rest := bytes.TrimSpace(raw[1:])
		if len(rest) > 0 && rest[0] != '}' {
			head += ","
		}
		raw = append([]byte(head), rest...)
	}
	return watchEventJSON(typ, raw)
}

func watchEventJSON(typ string, obj []byte) []byte {
	b := make([]byte, 0, len(obj)+32)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, '}', '\n')
}

func bookmarkJSON(kind, apiVersion string, rv int64, initialEnd bool) []byte {
	md := map[string]any{"resourceVersion": strconv.FormatInt(rv, 10)}
	if initialEnd {
		md["annotations"] = map[string]string{initialEventsEnd: "true"}
	}
	b, _ := json.Marshal(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": md})
	return watchEventJSON("BOOKMARK", b)
}

// continueToken is the fallback's own continue token: the list's
// resourceVersion and the key of the last item served.
func continueToken(rv int64, lastKey string) string {
	return "kwrec:" + strconv.FormatInt(rv, 10) + ":" + url.QueryEscape(lastKey)
}

func parseContinue(tok string) (rv int64, after string, ok bool) {
	rest, found := strings.CutPrefix(tok, "kwrec:")
	if !found {
		return 0, "", false
	}
	rvs, key, found := strings.Cut(rest, ":")
	if !found {
		return 0, "", false
	}
	rv, err := strconv.ParseInt(rvs, 10, 64)
	if err != nil {
		return 0, "", false
	}
	after, err = url.QueryUnescape(key)
	return rv, after, err == nil
}

func listJSON(listKind, apiVersion string, rv int64, cont string, remaining int, items [][]byte) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"`, listKind, apiVersion, rv)
	if cont != "" {
		fmt.Fprintf(&b, `,"continue":%q,"remainingItemCount":%d`, cont, remaining)
	}
	b.WriteString(`},"items":[`)
	for i, o := range items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.Write(o)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}
