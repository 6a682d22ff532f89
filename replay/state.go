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

// object is one recorded object, reduced to what the fallback needs.
type object struct {
	key       string // namespace/name
	namespace string
	name      string
	labels    map[string]string
	raw       json.RawMessage
	typed     bool // raw has kind and apiVersion (list items do not)
}

type event struct {
	rv  int64
	typ string
	obj object
	at  time.Duration // from the cassette start
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

	built  bool
	broken string // why the fallback cannot answer for this collection
	snaps  []*snapshot
	events []event
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

func parseObject(raw json.RawMessage) (object, objMeta, error) {
	var m objMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return object{}, m, err
	}
	o := object{namespace: m.Metadata.Namespace, name: m.Metadata.Name, labels: m.Metadata.Labels, raw: raw,
		typed: m.Kind != "" && m.APIVersion != ""}
	o.key = o.namespace + "/" + o.name
	return o, m, nil
}

// initialEventsEnd is the annotation on the bookmark that ends a streaming
// list's initial ADDED events (sendInitialEvents=true).
const initialEventsEnd = "k8s.io/initial-events-end"

// build parses every recorded frame of the collection into snapshots and
// events. It runs once, on the first request the fallback answers.
func (c *collection) build() {
	if c.built {
		return
	}
	c.built = true
	snaps := map[int64]*snapshot{}
	snapAt := func(rv int64) *snapshot {
		s := snaps[rv]
		if s == nil {
			s = &snapshot{rv: rv, items: map[string]object{}}
			snaps[rv] = s
		}
		return s
	}
	type evKey struct {
		rv       int64
		key, typ string
	}
	seen := map[evKey]bool{}
	fail := func(iv *ivState, format string, a ...any) {
		if c.broken == "" {
			c.broken = fmt.Sprintf("interaction %d: %s", iv.in.ID, fmt.Sprintf(format, a...))
		}
	}
	for _, iv := range c.ivs {
		in := iv.in
		u, _ := url.Parse(in.Request.URL)
		if !isWatch(u.Query()) {
			var lb listBody
			if err := json.Unmarshal(in.Body(), &lb); err != nil {
				fail(iv, "list body is not JSON: %v", err)
				continue
			}
			rv, err := strconv.ParseInt(lb.Metadata.ResourceVersion, 10, 64)
			if err != nil {
				fail(iv, "list resourceVersion %q is not an integer", lb.Metadata.ResourceVersion)
				continue
			}
			c.noteKinds(lb.Kind, lb.APIVersion, "")
			s := snapAt(rv)
			for _, it := range lb.Items {
				o, m, err := parseObject(it)
				if err != nil {
					fail(iv, "list item: %v", err)
					continue
				}
				c.noteKinds("", "", m.Kind)
				s.items[o.key] = o
			}
			continue
		}
		initial := u.Query().Get("sendInitialEvents") == "true"
		var pending []object
		base := in.At
		if in.Response != nil {
			base += in.Response.Latency
		}
		for _, f := range in.Frames {
			// A frame that is not a JSON event with an object, such as
			// garbage hand-edited in to break the client's decoder,
			// changes no state: no client could apply it either.
			var wl watchLine
			if err := json.Unmarshal(f.Data, &wl); err != nil {
				continue
			}
			if wl.Type == "ERROR" {
				continue
			}
			o, m, err := parseObject(wl.Object)
			if err != nil {
				continue
			}
			rv, err := strconv.ParseInt(m.Metadata.ResourceVersion, 10, 64)
			if err != nil {
				fail(iv, "resourceVersion %q is not an integer", m.Metadata.ResourceVersion)
				break
			}
			if wl.Type == "BOOKMARK" {
				if initial && m.Metadata.Annotations[initialEventsEnd] == "true" {
					s := snapAt(rv)
					for _, o := range pending {
						s.items[o.key] = o
					}
					initial, pending = false, nil
				}
				continue
			}
			c.noteKinds("", m.APIVersion, m.Kind)
			if initial && wl.Type == "ADDED" {
				pending = append(pending, o)
				continue
			}
			k := evKey{rv, o.key, wl.Type}
			if seen[k] {
				continue
			}
			seen[k] = true
			c.events = append(c.events, event{rv: rv, typ: wl.Type, obj: o, at: base + f.At})
		}
	}
	for _, s := range snaps {
		c.snaps = append(c.snaps, s)
	}
	sort.Slice(c.snaps, func(i, j int) bool { return c.snaps[i].rv < c.snaps[j].rv })
	sort.SliceStable(c.events, func(i, j int) bool { return c.events[i].rv < c.events[j].rv })
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
	return s.labels.Matches(labels.Set(o.labels)) &&
		s.fields.Matches(fields.Set{"metadata.name": o.name, "metadata.namespace": o.namespace})
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

// eventJSON is the watch event for o. The API server strips kind and
// apiVersion from list items but always sends them in watch events, and
// clients need them to decode: put them back.
func eventJSON(typ string, o object, kind, apiVersion string) []byte {
	raw := o.raw
	if !o.typed && len(raw) > 1 && raw[0] == '{' {
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

func listJSON(listKind, apiVersion string, rv int64, cont string, remaining int, items []object) []byte {
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
		b.Write(o.raw)
	}
	b.WriteString("]}\n")
	return b.Bytes()
}

// interactionRVs returns the resourceVersion each frame of a JSON list or
// watch interaction moves its collection to (0 for none), and the highest.
func interactionRVs(in *cassettes.Interaction, watch bool) ([]int64, int64) {
	rvs := make([]int64, len(in.Frames))
	var max int64
	for i, f := range in.Frames {
		if !watch && i > 0 {
			break
		}
		if watch && bytes.Contains(f.Data[:min(len(f.Data), 24)], []byte(`"ERROR"`)) {
			continue
		}
		rvs[i] = scanRV(f.Data)
		if rvs[i] > max {
			max = rvs[i]
		}
	}
	return rvs, max
}
