package timeline

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kwrec/kwrec/internal/fieldsel"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// StatusError is the API server's error answer to a request: a Status
// body, and Retry-After seconds when RetryAfter > 0.
type StatusError struct {
	Status     *metav1.Status
	RetryAfter int
}

func (e *StatusError) Error() string { return e.Status.Message }

func statusErr(code int, reason metav1.StatusReason, retryAfter int, format string, a ...any) *StatusError {
	return &StatusError{Status: wire.Status(code, reason, fmt.Sprintf(format, a...), retryAfter), RetryAfter: retryAfter}
}

// Selector filters objects by labelSelector and fieldSelector: the
// fields every resource has (metadata.name and metadata.namespace), and
// those the server supports for a built-in resource ([fieldsel]), read
// from the object's bytes.
type Selector struct {
	labels labels.Selector
	fields fields.Selector
	ns     string // only this namespace, "" for all
	gr     schema.GroupResource
	read   ObjectReader // set when fields needs more than metadata
	custom CustomFields // set for a custom resource whose fields are known
}

// ObjectReader returns the JSON of a recorded object, for a field
// selector that looks into it.
type ObjectReader func(*Object) ([]byte, error)

// CustomFields are the fields a custom resource is selected by, as its
// CustomResourceDefinition declares them (selectableFields).
type CustomFields interface {
	// SelectsOn reports whether a field selector may name label.
	SelectsOn(label string) bool
	// Fields returns the selectable fields of an object, its JSON.
	Fields(obj []byte) (fields.Set, error)
}

// Fields is what a [Selector] knows of a timeline's objects beyond their
// name, namespace and labels. A nil *Fields, as the zero Fields, selects
// on those alone.
type Fields struct {
	// Read reads the objects a field selector beyond metadata looks
	// into.
	Read ObjectReader
	// Custom are a custom resource's selectable fields, from its
	// definition; nil for a built-in resource (whose fields [fieldsel]
	// knows) or a custom resource whose definition the caller lacks.
	Custom CustomFields
}

// Selector reads a request's selectors for t. ns restricts it to one
// namespace (a namespaced request answered from an all-namespaces
// timeline); f says how to read the objects a field selector beyond
// metadata looks into, nil when the caller selects on labels and
// metadata alone.
//
// A field the server does not support for t's resource is a 400
// BadRequest with the server's message. For a custom resource without
// f.Custom, a field beyond metadata is refused, naming kwrec, unless t
// holds no object to evaluate it on.
func (t *Timeline) Selector(q url.Values, ns string, f *Fields) (Selector, error) {
	if f == nil {
		f = &Fields{}
	}
	read := f.Read
	s := Selector{labels: labels.Everything(), fields: fields.Everything(), ns: ns,
		gr: schema.GroupResource{Group: t.Res.Group, Resource: t.Res.Resource}}
	var err error
	if v := q.Get("labelSelector"); v != "" {
		if s.labels, err = labels.Parse(v); err != nil {
			return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "unable to parse requirement: %v", err)
		}
	}
	v := q.Get("fieldSelector")
	if v == "" {
		return s, nil
	}
	if s.fields, err = fields.ParseSelector(v); err != nil {
		return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "invalid field selector %q: %v", v, err)
	}
	if !fieldsel.Deep(s.fields) {
		return s, nil
	}
	if f.Custom != nil {
		return s.customFields(v, f)
	}
	label, msg := fieldsel.Unsupported(s.gr, s.fields)
	switch {
	case label != "" && fieldsel.Known(s.gr):
		return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "%s", msg)
	case label != "" && t.holdsNothing():
		return s, nil // nothing to evaluate it on: every answer is empty
	case label != "":
		return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0,
			"%s (kwrec replay evaluates metadata.name and metadata.namespace on %s, and the fields kube-apiserver selects on for built-in resources)", msg, s.gr)
	case read == nil:
		return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "field selector %q is not supported here", v)
	}
	s.read = read
	return s, nil
}

// customFields completes s, whose field selector v names fields beyond
// metadata, for a custom resource whose selectable fields f knows.
func (s Selector) customFields(v string, f *Fields) (Selector, error) {
	for _, r := range s.fields.Requirements() {
		if !f.Custom.SelectsOn(r.Field) {
			// The server's crConverter.ConvertFieldLabel.
			return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "field label not supported: %s", r.Field)
		}
	}
	if f.Read == nil {
		return s, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "field selector %q is not supported here", v)
	}
	s.read, s.custom = f.Read, f.Custom
	return s, nil
}

// Namespaced reports whether t's objects live in namespaces: its path
// names one, or a recorded object has one.
func (t *Timeline) Namespaced() bool {
	if t.Res.Namespace != "" {
		return true
	}
	for _, s := range t.snaps {
		for _, o := range s.items {
			return o.Namespace() != ""
		}
	}
	if t.events.Len() > 0 {
		e := t.Event(0)
		return e.Obj.Namespace() != ""
	}
	return false
}

// Namespaces adds to ns the namespaces t's path or recorded objects
// name.
func (t *Timeline) Namespaces(ns map[string]bool) {
	if t.Res.Namespace != "" {
		ns[t.Res.Namespace] = true
		return
	}
	for _, s := range t.snaps {
		for _, o := range s.items {
			if n := o.Namespace(); n != "" {
				ns[n] = true
			}
		}
	}
	for i := range t.events.Len() {
		o := Object{Key: t.key(t.events.At(i))}
		if n := o.Namespace(); n != "" {
			ns[n] = true
		}
	}
}

// holdsNothing reports whether no object was ever recorded.
func (t *Timeline) holdsNothing() bool {
	for _, s := range t.snaps {
		if len(s.items) > 0 {
			return false
		}
	}
	return t.events.Len() == 0
}

// Empty reports whether the selector has no label or field requirement
// (a namespace alone is not one: the server lists a namespace by its key
// prefix).
func (s Selector) Empty() bool { return s.labels.Empty() && s.fields.Empty() }

// Matches reports whether o passes the selector.
func (s Selector) Matches(o *Object) bool {
	if s.ns != "" && o.Namespace() != s.ns {
		return false
	}
	if !s.labels.Empty() {
		set, err := labels.ConvertSelectorToLabelsMap(o.Labels)
		if err != nil || !s.labels.Matches(set) {
			return false
		}
	}
	if s.fields.Empty() {
		return true
	}
	if s.read == nil {
		return s.fields.Matches(fields.Set{"metadata.name": o.Name(), "metadata.namespace": o.Namespace()})
	}
	raw, err := s.read(o)
	if err != nil {
		return false
	}
	if s.custom != nil {
		set, err := s.custom.Fields(raw)
		return err == nil && s.fields.Matches(set)
	}
	set, err := fieldsel.Set(s.gr, raw)
	return err == nil && s.fields.Matches(set)
}

// stateAt returns the objects at resourceVersion rv, writes included,
// sorted by namespace/name as etcd orders them; ok is false when rv is
// older than the oldest state recorded.
func (t *Timeline) stateAt(rv int64) (objs []Object, ok bool) {
	t.mu.Lock()
	ws := t.writes
	t.mu.Unlock()
	return t.stateOf(rv, ws, "")
}

// stateOf returns the objects at resourceVersion rv, with the writes ws
// (a snapshot of t.writes), only object key unless key is "".
//
// Writes and recorded changes are applied in resourceVersion order, so a
// recorded change after a write wins, as on a live cluster. A write older
// than the recorded list the state starts from is kept unless the list
// holds a newer version of its object: the list was recorded in a world
// without the write, so an object's absence from it is not a deletion.
func (t *Timeline) stateOf(rv int64, ws []Event, key string) (objs []Object, ok bool) {
	if rv < t.oldest {
		return nil, false
	}
	cur := stateObjects{}
	from := t.oldest
	for i := len(t.snaps) - 1; i >= 0; i-- {
		if s := t.snaps[i]; s.ns == "" && s.rv <= rv {
			cur.take(s, key)
			from = s.rv
			break
		}
	}
	// A timeline of all namespaces read from lists of single namespaces:
	// each namespace starts from its own newest list.
	var scoped map[string]int64
	low := from
	if t.scoped {
		scoped = map[string]int64{}
		low = cur.takeScoped(scoped, t.snaps, rv, from, key)
	}
	// Writes and recorded events in resourceVersion order.
	w := 0
	for i := t.events.search(low); i < t.events.Len() && t.events.rvAt(i) <= rv; i++ {
		r := t.events.At(i)
		for ; w < len(ws) && ws[w].RV() < t.events.rv(r); w++ {
			cur.write(&ws[w], key, fromOf(scoped, from, ws[w].Obj.Key))
		}
		if key != "" || t.scoped {
			// (Without scoped lists, every event after low is after from.)
			if k := t.key(r); key != "" && k != key || t.events.rv(r) <= fromOf(scoped, from, k) {
				continue
			}
		}
		e := t.unpack(r)
		cur.apply(&e, key)
	}
	for ; w < len(ws) && ws[w].RV() <= rv; w++ {
		cur.write(&ws[w], key, fromOf(scoped, from, ws[w].Obj.Key))
	}
	objs = make([]Object, 0, len(cur))
	for _, o := range cur {
		objs = append(objs, o)
	}
	sort.Slice(objs, func(i, j int) bool { return objs[i].Key < objs[j].Key })
	return objs, true
}

// stateObjects is the state [Timeline.stateOf] builds: the objects by
// key, as the lists it starts from and the changes after them make them.
// Its methods keep only object key unless key is "".
type stateObjects map[string]Object

// take takes the objects of snapshot s into the state.
func (cur stateObjects) take(s *snapshot, key string) {
	if key != "" {
		if o, ok := s.items[key]; ok {
			cur[key] = o
		}
		return
	}
	for k, o := range s.items {
		cur[k] = o
	}
}

// takeScoped starts each namespace from its own newest list in snaps at
// or before rv and not older than from, the list of all namespaces the
// state starts from, noting the list's resourceVersion in scoped. It
// returns the resourceVersion the changes to apply start after: from, or
// an older namespace list's.
func (cur stateObjects) takeScoped(scoped map[string]int64, snaps []*snapshot, rv, from int64, key string) (low int64) {
	low = from
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if _, seen := scoped[s.ns]; s.ns == "" || seen || s.rv > rv || s.rv < from {
			continue
		}
		if key != "" && namespaceOf(key) != s.ns {
			continue
		}
		scoped[s.ns] = s.rv
		low = min(low, s.rv)
		for k := range cur {
			if namespaceOf(k) == s.ns {
				delete(cur, k)
			}
		}
		cur.take(s, key)
	}
	return low
}

// fromOf is the resourceVersion of the list object key k's state starts
// from: its namespace's in scoped, or from.
func fromOf(scoped map[string]int64, from int64, k string) int64 {
	if r, ok := scoped[namespaceOf(k)]; ok {
		return r
	}
	return from
}

// apply applies the change e to the state.
func (cur stateObjects) apply(e *Event, key string) {
	if key != "" && e.Obj.Key != key {
		return
	}
	if e.Type == "DELETED" {
		delete(cur, e.Obj.Key)
	} else {
		cur[e.Obj.Key] = e.Obj
	}
}

// write applies the write w, whose object's state starts from the list
// at resourceVersion from, to the state. A write older than that list is
// kept unless the list holds a newer version of the object.
func (cur stateObjects) write(w *Event, key string, from int64) {
	if w.RV() <= from {
		if o, ok := cur[w.Obj.Key]; ok && o.RV >= w.RV() {
			return
		}
	}
	cur.apply(w, key)
}

// namespaceOf is the namespace of an object key, "" for a cluster-scoped
// object.
func namespaceOf(key string) string {
	ns, _, _ := strings.Cut(key, "/")
	return ns
}

// List is a list answer: the items at RV, and for a paged list the
// continue token and the count of the rest (nil where the server omits
// it: a list filtered by a selector).
type List struct {
	RV        int64
	Continue  string
	Remaining *int64
	Items     []Object
}

// List answers a list request with query q, as the API server does:
//   - resourceVersion "" or "0": the latest state, which is now (see
//     [Timeline.Progress]);
//   - resourceVersion X (NotOlderThan, the default): state at X or newer;
//     resourceVersionMatch=Exact, or a limit without a match (the legacy
//     exact list a pager makes): state at exactly X; older than the oldest
//     recorded state: 410 Expired; newer than anything recorded: 504 with
//     Retry-After 1 (the server waits about 3 s first);
//   - limit and continue: pages in namespace/name order, the continue
//     token the server's own (see [wire.EncodeContinue]), carrying the
//     list's resourceVersion, so a token recorded from the server and one
//     a replay made page alike. A token stays valid as long as the
//     timeline holds its resourceVersion, that is for the whole replay,
//     whatever has been played since: as on a server whose etcd has not
//     compacted it. remainingItemCount is set when no selector is given.
func (t *Timeline) List(q url.Values, sel Selector) (List, error) {
	at, start := t.Progress(), ""
	rv, err := rvParam(q)
	if err != nil {
		return List{}, err
	}
	limit, _ := strconv.ParseInt(q.Get("limit"), 10, 64)
	prefix := t.keyPrefix(sel)
	if tok := q.Get("continue"); tok != "" {
		var crv int64
		start, crv, err = wire.DecodeContinue(tok, prefix)
		start = keyOfToken(start, prefix)
		switch {
		case err != nil:
			return List{}, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "invalid continue token: %v", err)
		case rv != 0:
			return List{}, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "specifying resource version is not allowed when using continue")
		case t.tooNew(crv) != nil:
			return List{}, t.tooNew(crv)
		case crv > 0:
			at = crv
		}
		if crv > 0 && crv < t.oldest {
			return List{}, continueGone(start, prefix)
		}
	} else if rv != 0 {
		switch {
		case t.tooNew(rv) != nil:
			return List{}, t.tooNew(rv)
		case q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchExact),
			q.Get("resourceVersionMatch") == "" && limit > 0:
			at = rv
		case rv > at:
			at = rv
		}
	}
	objs, ok := t.stateAt(at)
	if !ok {
		return List{}, statusErr(http.StatusGone, metav1.StatusReasonExpired, 0, "too old resource version: %d (%d)", at, t.oldest)
	}
	l := List{RV: at}
	for i := range objs {
		if objs[i].Key >= start && sel.Matches(&objs[i]) {
			l.Items = append(l.Items, objs[i])
		}
	}
	if limit > 0 && int64(len(l.Items)) > limit {
		if sel.Empty() {
			l.Remaining = new(int64(len(l.Items)) - limit)
		}
		l.Items = l.Items[:limit]
		if l.Continue, err = wire.EncodeContinue(tokenKey(l.Items[limit-1].Key, prefix)+"\x00", prefix, at); err != nil {
			return List{}, err
		}
	}
	return l, nil
}

// keyPrefix is what every key of a list with sel starts with: "ns/" for
// a list in one namespace, "" for one across namespaces or of a
// cluster-scoped resource. Continue tokens hold keys without it.
func (t *Timeline) keyPrefix(sel Selector) string {
	switch {
	case sel.ns != "":
		return sel.ns + "/"
	case t.Res.Namespace != "":
		return t.Res.Namespace + "/"
	}
	return ""
}

// A cluster-scoped object's key is "/name" (its namespace is empty), and
// its continue token holds "/name", as kube-apiserver's does (the storage
// key of namespace kube-system is /registry/namespaces/kube-system, under
// the prefix /registry/namespaces); a token of a list across namespaces
// holds "/ns/name". Under prefix "", a start key without a slash is
// therefore a cluster-scoped object's (a namespaced key always has one).

// tokenKey is the key a token holds for key: without its leading slash
// under prefix "", which the token puts back.
func tokenKey(key, prefix string) string {
	if prefix == "" {
		return strings.TrimPrefix(key, "/")
	}
	return key
}

// keyOfToken is the key a token's start stands for (see tokenKey).
func keyOfToken(start, prefix string) string {
	if prefix == "" && !strings.Contains(start, "/") {
		return "/" + start
	}
	return start
}

// continueGone is the server's 410 for a continue token whose
// resourceVersion etcd compacted: a new token in the Status resumes at
// the same key in the latest state.
func continueGone(start, prefix string) error {
	e := statusErr(http.StatusGone, metav1.StatusReasonExpired, 0, "%s", wire.ContinueInconsistent)
	if tok, err := wire.EncodeContinue(tokenKey(start, prefix), prefix, -1); err == nil {
		e.Status.Continue = tok
	}
	return e
}

// Get returns object ns/name as of now, or the API server's 404.
func (t *Timeline) Get(ns, name string) (Object, error) {
	if o, ok := t.Current(ns + "/" + name); ok {
		return o, nil
	}
	st := apierrors.NewNotFound(schema.GroupResource{Group: t.Res.Group, Resource: t.Res.Resource}, name).Status()
	return Object{}, &StatusError{Status: &st}
}

func rvParam(q url.Values) (int64, error) {
	v := q.Get("resourceVersion")
	if v == "" {
		return 0, nil
	}
	rv, err := strconv.ParseInt(v, 10, 64)
	if err != nil || rv < 0 {
		return 0, statusErr(http.StatusBadRequest, metav1.StatusReasonBadRequest, 0, "invalid resourceVersion %q", v)
	}
	return rv, nil
}

// StepKind says what a watch [Step] sends.
type StepKind uint8

// The step kinds.
const (
	// StepInitial: an ADDED event for an object of the initial state.
	StepInitial StepKind = iota
	// StepInitialEnd: the BOOKMARK annotated k8s.io/initial-events-end at RV.
	StepInitialEnd
	// StepEvent: a recorded event.
	StepEvent
	// StepBookmark: a BOOKMARK at RV.
	StepBookmark
	// StepMark: a mark the watch crosses; if it fires, the watch fails there.
	StepMark
	// StepExpired: an ERROR event with a 410 Expired Status, then the end.
	StepExpired
)

// Step is one thing a watch sends, in order.
type Step struct {
	Kind StepKind
	// N is, for a StepEvent of a recorded event, 1 + the event's index in
	// [Timeline.Events]: every watch that sends it sends the same frame, so
	// the frame can be made once for all (0 for a write).
	N    int32
	Obj  *Object // StepInitial
	Ev   *Event  // StepEvent
	Mark *Mark   // StepMark
	RV   int64   // the resourceVersion the step moves the timeline to, 0 for none
	// Gap is the recorded time since the previous step (or since the watch
	// started, for the first event).
	Gap time.Duration
	// At is when a StepEvent was recorded, from the recording's start: a
	// watch on a world clock sends it once the world is there.
	At time.Duration
	// Status is a StepExpired's Status.
	Status *metav1.Status
}

// Watch answers a watch request with query q as the API server does:
//   - from resourceVersion X: the events after X; X older than recorded:
//     one ERROR event with a 410 Expired Status, then the end (the watch
//     cache's behaviour);
//   - resourceVersion "" or "0", or a streaming list (sendInitialEvents=true):
//     ADDED events for the state now (or at X for a streaming list from a
//     newer X), then for the streaming list the BOOKMARK annotated
//     k8s.io/initial-events-end at that resourceVersion, then the events
//     after it;
//   - allowWatchBookmarks=true: a BOOKMARK at the last resourceVersion once
//     the recorded events are out, so a later re-watch resumes there.
//
// Events are paced by their recorded times: the first event's Gap is its
// time since the watch's starting point was recorded. The marks the watch
// crosses are steps in place. from is the resourceVersion the watch starts
// after: the writes after it are the watch's too (see [Timeline.Follow]).
//
// It returns every step at once; a server walks them with
// [Timeline.WatchSteps] instead.
func (t *Timeline) Watch(q url.Values, sel Selector) (steps []Step, from int64, err error) {
	w, from, err := t.WatchSteps(q, sel)
	if err != nil {
		return nil, 0, err
	}
	return w.All(), from, nil
}

// WatchSteps is [Timeline.Watch] made step by step as the watch reaches
// them: a watch holds its initial state and its place in the recording,
// not a list of every event to come (a thousand watches from the start
// of a long recording would otherwise hold gigabytes of steps).
func (t *Timeline) WatchSteps(q url.Values, sel Selector) (w *Steps, from int64, err error) {
	rv, err := rvParam(q)
	if err != nil {
		return nil, 0, err
	}
	from = rv
	if err := t.tooNew(rv); err != nil && t.isClocked() {
		return nil, 0, err
	}
	w = &Steps{t: t, sel: sel, cur: -1}
	initial := q.Get("sendInitialEvents") == "true"
	if v := q.Get("resourceVersion"); initial || v == "" || v == "0" {
		now := t.Progress()
		if initial && rv > now {
			from = rv
		} else {
			from = now
		}
		objs, ok := t.stateAt(from)
		if !ok {
			return &Steps{head: expired(from, t.oldest), cur: -1, done: true}, from, nil
		}
		w.in = newSelection(sel)
		for i := range objs {
			if sel.Matches(&objs[i]) {
				w.head = append(w.head, Step{Kind: StepInitial, Obj: &objs[i]})
				w.in.add(objs[i])
			}
		}
		if initial {
			w.head = append(w.head, Step{Kind: StepInitialEnd, RV: from})
		}
	} else if rv < t.oldest {
		return &Steps{head: expired(rv, t.oldest), cur: -1, done: true}, from, nil
	} else if w.in = newSelection(sel); w.in != nil {
		objs, _ := t.stateAt(from)
		for _, o := range objs {
			if sel.Matches(&o) {
				w.in.add(o)
			}
		}
	}
	w.from, w.lastRV, w.prevAt = from, from, t.atOf(from)
	marks := t.marks
	// Marks at or before the start are behind this watch, but for an
	// edit's mark right at its start that has not fired yet.
	for len(marks) > 0 && (marks[0].RV < from || marks[0].RV == from && !(marks[0].Once && marks[0].Fired() == 0)) {
		marks = marks[1:]
	}
	w.marks = marksOf(marks, sel, t)
	w.ev = t.events.search(from)
	w.bookmark = q.Get("allowWatchBookmarks") == "true"
	return w, from, nil
}

// Steps are the steps of one watch (see [Timeline.WatchSteps]), made in
// order. Not safe for concurrent use: one watch walks them.
type Steps struct {
	t    *Timeline
	sel  Selector
	in   selection // with a selector on labels or fields: what the watch holds
	head []Step    // the initial steps, or the one StepExpired

	// The place in the recording:
	ev       int     // the next event
	marks    []*Mark // the marks still ahead
	prevAt   time.Duration
	from     int64
	lastRV   int64
	bookmark bool // a BOOKMARK is still to be sent once the events are out
	done     bool

	step Step  // step number cur, made last
	ev1  Event // step's event, when it is a recorded one
	cur  int
	// pending is how step, a recorded event, changed in: a write the
	// watch sends before it ([Steps.Follow]) comes first, and step is
	// made again after it.
	pending struct {
		set  bool
		ev   Event  // step's event as recorded
		n    int32  // step's N as recorded
		prev Object // in[ev.Obj.Key] before, if was
		was  bool
	}
}

// At returns step i, false past the last. i is the step asked for last,
// or the one after it; the Step is valid until the next call.
func (w *Steps) At(i int) (*Step, bool) {
	if i < len(w.head) {
		return &w.head[i], true
	}
	if i == w.cur {
		return &w.step, true
	}
	if w.done || !w.advance() {
		w.done = true
		return nil, false
	}
	w.cur = i
	return &w.step, true
}

// Clone returns a copy of w at the same step, to walk ahead of it.
func (w *Steps) Clone() *Steps {
	c := *w
	c.in = maps.Clone(w.in)
	if c.step.Ev == &w.ev1 {
		c.step.Ev = &c.ev1
	}
	return &c
}

// Expired reports whether the watch is only a 410 Expired ERROR event.
func (w *Steps) Expired() bool {
	return len(w.head) == 1 && w.head[0].Kind == StepExpired
}

// All returns every step still to come (every step, for Steps just made),
// leaving w where it is.
func (w *Steps) All() []Step {
	c := *w
	c.in = maps.Clone(w.in)
	c.cur = -1
	var out []Step
	for i := 0; ; i++ {
		s, ok := c.At(i)
		if !ok {
			return out
		}
		if s.Ev == &c.ev1 { // remade at the next step
			e := *s.Ev
			s.Ev = &e
		}
		out = append(out, *s)
	}
}

// advance makes the next step after the initial ones in w.step: the
// marks the watch crosses before each event, the events its selector
// passes, the bookmark, the marks after the last event.
func (w *Steps) advance() bool {
	t := w.t
	if t == nil {
		return false
	}
	for w.ev < t.events.Len() {
		r := t.events.At(w.ev)
		if len(w.marks) > 0 && w.marks[0].RV < t.events.rv(r) {
			w.step = Step{Kind: StepMark, Mark: w.marks[0]}
			w.marks = w.marks[1:]
			return true
		}
		w.ev++
		w.lastRV = t.events.rv(r)
		out, n, ok := w.pass(t.unpack(r), int32(w.ev))
		if !ok {
			continue
		}
		w.ev1 = out
		at := t.at(r)
		w.step = Step{Kind: StepEvent, N: n, Ev: &w.ev1, RV: w.lastRV, Gap: at - w.prevAt, At: at}
		w.prevAt = at
		return true
	}
	w.pending.set = false
	if w.bookmark {
		w.bookmark = false
		if w.lastRV > w.from {
			w.step = Step{Kind: StepBookmark, RV: w.lastRV}
			return true
		}
	}
	for len(w.marks) > 0 {
		m := w.marks[0]
		w.marks = w.marks[1:]
		if m.RV <= t.last { // one past the last recorded event is never crossed
			w.step = Step{Kind: StepMark, Mark: m}
			return true
		}
	}
	return false
}

// Follow returns the Follower of the writes the watch sends, which it
// interleaves with its steps: a write moves objects into and out of the
// watch's selection as a recorded change does. A watch that only
// expires has none (nil).
func (w *Steps) Follow() *Follower {
	if w.t == nil {
		return nil
	}
	f := w.t.Follow(w.from, w.sel)
	if w.in != nil {
		f.steps = w
	}
	return f
}

// pass passes e, recorded event number n, through the watch's selection:
// the event the watch sends, its step's N (0 when it is not e as
// recorded: its frame is not shared), and whether it sends one. What it
// changes in the selection is noted for [Steps.write].
func (w *Steps) pass(e Event, n int32) (Event, int32, bool) {
	if w.in == nil {
		return e, n, w.sel.Matches(&e.Obj)
	}
	p := &w.pending
	p.prev, p.was = w.in[e.Obj.Key]
	out, asRecorded, ok := w.in.pass(w.sel, e)
	p.set, p.ev, p.n = ok, e, n
	if !asRecorded {
		n = 0
	}
	return out, n, ok
}

// write passes e, a write the watch sends before the step that moves the
// timeline to rv (0: after every step), through the watch's selection.
// The step made last, still to be sent, changed the selection when it was
// made: that change is undone, e passed, and the step made again.
func (w *Steps) write(e Event, rv int64) (Event, bool) {
	p := &w.pending
	redo := p.set && rv != 0 && w.step.Kind == StepEvent && w.step.RV == rv
	if redo {
		if p.was {
			w.in[p.ev.Obj.Key] = p.prev
		} else {
			delete(w.in, p.ev.Obj.Key)
		}
	}
	out, _, ok := w.in.pass(w.sel, e)
	if redo {
		// A step the write made pointless (a DELETED of what the write
		// already took out) is sent as it was made.
		if ev, n, sent := w.pass(p.ev, p.n); sent {
			w.ev1, w.step.N = ev, n
		}
	}
	return out, ok
}

// selection is what a watch with a selector on labels or fields holds:
// the objects it has sent as matching, at the version sent, by key. The
// API server's watch sends a change that moves an object into the
// selection as ADDED, and one that moves it out as DELETED, with the
// last version that matched at the change's resourceVersion (its watch
// cache and its etcd watcher alike); a watch without such a selector has
// none (nil), and sends the events its namespace passes as they are.
type selection map[string]Object

// newSelection returns an empty selection for a watch with sel, nil when
// sel selects on the namespace alone.
func newSelection(sel Selector) selection {
	if sel.labels.Empty() && sel.fields.Empty() {
		return nil
	}
	return selection{}
}

func (in selection) add(o Object) {
	if in != nil {
		in[o.Key] = o
	}
}

// pass returns the event a watch holding in sends for e, and whether it
// sends one; asRecorded says it is e unchanged.
func (in selection) pass(sel Selector, e Event) (out Event, asRecorded, ok bool) {
	if in == nil {
		return e, true, sel.Matches(&e.Obj)
	}
	key := e.Obj.Key
	prev, was := in[key]
	switch {
	case e.Type == "DELETED":
		delete(in, key)
		return e, true, was
	case sel.Matches(&e.Obj):
		in[key] = e.Obj
		out = e
		out.Type = "MODIFIED"
		if !was {
			out.Type = "ADDED"
		}
		return out, out.Type == e.Type, true
	case was:
		delete(in, key)
		prev.RV = e.Obj.RV
		prev.Ref.Restamp = true
		return Event{Type: "DELETED", Obj: prev}, false, true
	}
	return e, true, false
}

// marksOf keeps of marks those a watch of t with sel crosses: a mark
// scoped to a namespace only on a watch of that namespace.
func marksOf(marks []*Mark, sel Selector, t *Timeline) []*Mark {
	ns := sel.ns
	if ns == "" {
		ns = t.Res.Namespace
	}
	var out []*Mark
	for i, m := range marks {
		if m.Namespace == "" || m.Namespace == ns {
			if out != nil {
				out = append(out, m)
			}
			continue
		}
		if out == nil {
			out = append(make([]*Mark, 0, len(marks)), marks[:i]...)
		}
	}
	if out == nil {
		return marks
	}
	return out
}

func expired(rv, oldest int64) []Step {
	return []Step{{Kind: StepExpired, Status: wire.Status(http.StatusGone, metav1.StatusReasonExpired,
		fmt.Sprintf("too old resource version: %d (%d)", rv, oldest), 0)}}
}
