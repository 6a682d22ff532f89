package timeline

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Encoding is how recorded object bytes are encoded.
type Encoding uint8

// The encodings.
const (
	JSON Encoding = iota
	// Protobuf bytes are an object's message, without its envelope.
	Protobuf
)

// Ref locates recorded bytes: [Off, Off+N) of frame I of In, or, with In
// nil, of the timeline's held body I (a list body that was split across
// frames, joined in memory when the cassette was opened). N < 0 (with Off
// 0) names the object of the watch event that frame I is: the timeline's
// event log keeps no offsets for its events, 8 bytes less per event, and
// [Ref.Of] finds the object again as [Stream.Observe] found it.
type Ref struct {
	In     *cassettes.Interaction
	I      int32
	Off, N int32
	// Enc is the bytes' encoding.
	Enc Encoding
	// Typed says JSON bytes carry kind and apiVersion (watch events and
	// gets do, list items do not).
	Typed bool
	// W says the bytes are a write's object, held by the timeline (I
	// indexes the writes), already carrying the object's resourceVersion.
	W bool
	// Restamp says the bytes are an earlier version of the object than
	// the one served: they are served with the object's resourceVersion
	// (a DELETED event for an object that left a watch's selection).
	Restamp bool
}

// eventObject is Ref.N for the object of a watch event frame.
const eventObject = -1

// Of returns the bytes r names in data, the frame or held body it is in.
func (r Ref) Of(data []byte) ([]byte, error) {
	if r.N == eventObject {
		start, end, ok := watchEventObject(data, r.Enc)
		if !ok {
			return nil, r.changed()
		}
		return data[start:end], nil
	}
	if int(r.Off)+int(r.N) > len(data) {
		return nil, r.changed()
	}
	return data[r.Off : r.Off+r.N], nil
}

func (r Ref) changed() error {
	id := 0
	if r.In != nil {
		id = r.In.ID
	}
	return fmt.Errorf("frame %d of interaction %d is not what it was when the cassette was opened: the file changed since; open it again", r.I+1, id)
}

// watchEventObject returns the offsets [start, end) of the object of the
// watch event frame data in encoding enc: for protobuf its raw message,
// the envelope taken off.
func watchEventObject(data []byte, enc Encoding) (start, end int, ok bool) {
	if enc == JSON {
		start, end, err := wire.WatchEventObjectJSON(data)
		return start, end, err == nil
	}
	return wire.WatchEventObjectProto(data)
}

// Object is one recorded version of an object. A long watch makes one per
// event, so it is kept small.
type Object struct {
	Key    string // namespace/name
	RV     int64  // metadata.resourceVersion
	Labels string // labels.Set.String() form, "" for none
	Ref    Ref
}

// Name returns the object's name.
func (o *Object) Name() string { _, n, _ := strings.Cut(o.Key, "/"); return n }

// Namespace returns the object's namespace, "" for a cluster-scoped one.
func (o *Object) Namespace() string { ns, _, _ := strings.Cut(o.Key, "/"); return ns }

// Event is one recorded change. A long watch makes one per event, so it
// holds only what cannot be derived.
type Event struct {
	Type string // ADDED, MODIFIED or DELETED
	Obj  Object
}

// RV returns the resourceVersion of the event: its object's.
func (e *Event) RV() int64 { return e.Obj.RV }

// Frames says how many frames a recorded interaction has and when each
// arrived, from its response headers: a timeline reads them so, since an
// interaction of a cassette read from a file ([index]) need not hold its
// frames.
type Frames interface {
	Len() int
	At(i int) time.Duration
}

// FramesOf returns the Frames of in, those it holds.
func FramesOf(in *cassettes.Interaction) Frames { return heldFrames{in} }

type heldFrames struct{ in *cassettes.Interaction }

func (f heldFrames) Len() int               { return len(f.in.Frames) }
func (f heldFrames) At(i int) time.Duration { return f.in.Frames[i].At }

type snapshot struct {
	rv    int64
	at    time.Duration
	items map[string]Object
	// ns is the namespace a scoped snapshot holds (see [Stream.Scope]),
	// "" for the whole collection.
	ns string
}

// snapKey names a snapshot while the recording is read.
type snapKey struct {
	rv int64
	ns string
}

// MarkKind says how a watch fails at a [Mark].
type MarkKind uint8

// The mark kinds.
const (
	// MarkError: a watch ERROR event with a Status, then a clean end, as
	// the API server does.
	MarkError MarkKind = iota
	// MarkReset: a connection reset.
	MarkReset
	// MarkTruncate: a clean end of the stream.
	MarkTruncate
)

// Mark is a point on a timeline where a watch fails. See the package
// documentation for when a mark fires.
type Mark struct {
	// RV is the point: after the event at RV.
	RV   int64
	Kind MarkKind
	// Status is the ERROR event's Status (MarkError from an edit).
	Status *metav1.Status
	// Recorded, for a MarkError from the recording, names the recorded
	// ERROR event's Status object; Status is nil then.
	Recorded *Ref
	// Once makes the mark fire once (an edit's); a recorded one fires on
	// every watch that crosses it.
	Once bool
	// Label names the mark in reports: the edit, or the recorded frame.
	Label string
	// Skip, for an edit's MarkError, moves the timeline past the next
	// Skip recorded changes as the mark fires (see [Timeline.After]).
	Skip int
	// Namespace, when set, limits the mark to the watches of one
	// namespace: an edit's mark on an all-namespaces timeline that
	// answers that namespace's collection.
	Namespace string

	fired atomic.Int64
}

// After returns the resourceVersion of the nth recorded change after rv,
// the last recorded one when there are fewer.
func (t *Timeline) After(rv int64, n int) int64 {
	i := t.events.search(rv) + n - 1
	if i >= t.events.Len() {
		return t.last
	}
	return t.events.rvAt(i)
}

// Fire claims the mark for one watch: always true for a recorded mark,
// true only the first time for a Once mark.
func (m *Mark) Fire() bool {
	if m.Once {
		return m.fired.CompareAndSwap(0, 1)
	}
	m.fired.Add(1)
	return true
}

// Fired returns how many watches the mark has fired on.
func (m *Mark) Fired() int { return int(m.fired.Load()) }

// Timeline is one collection as one replay sees it: what was recorded
// about it, shared by every replay of the cassette, and this replay's
// state (how far it has served, its marks and the writes it took). Build
// it with [Timeline.Stream] and [Stream.Observe] while reading the
// recording, then [Timeline.Seal] it; after Seal it is safe for concurrent
// use, and [Timeline.Fork] gives each further replay its own state over
// the same recording.
type Timeline struct {
	*recording

	// marks are the recorded marks (copies, with their own fire counts)
	// and this replay's edits'.
	marks []*Mark

	mu       sync.Mutex // guards progress, the writes and ats
	progress int64
	writes   []Event  // the writes, in resourceVersion order
	written  [][]byte // their objects' JSON
	changed  chan struct{}
	// ats[i] is the latest time any of events 0..i was recorded at, made
	// at the first RVAt (a replay on a world clock asks at every request).
	ats []time.Duration
	// clocked: a world clock sets now (SetNow), not what was served.
	clocked bool
}

// recording is what was recorded about one collection: built while the
// recording is read, read-only once sealed, shared by every fork.
type recording struct {
	Path string       // the collection path, /api/v1/namespaces/default/configmaps
	Res  apipath.Path // Path split
	// Kind, ListKind and APIVersion of the collection's objects, from the
	// recording or derived from the path.
	Kind, ListKind, APIVersion string
	// Warnings are the Warning headers of the first recorded answer about
	// the collection: kube-apiserver sends a deprecated API's warning with
	// every answer, so a view sends them too.
	Warnings []string

	broken string
	snaps  []*snapshot
	events eventLog
	held   [][]byte
	oldest int64
	last   int64

	scale int64 // RVScale for a timeline that takes writes, else 0 (see WithWrites)

	// Only while the recording is read:
	streams  []*Stream
	snapByRV map[snapKey]*snapshot
	scoped   bool // some snapshot holds one namespace only

	names table[string]            // the strings events name (see rec)
	objs  table[[2]uint32]         // the keys and labels of events, in names
	types []string                 // the types of events
	ins   []*cassettes.Interaction // the interactions events are in
	frs   []Frames                 // their frames
}

// Fork returns a timeline over t's recording with state of its own, as t
// was when sealed: no writes, its recorded marks unfired, and no marks of
// edits. t must be sealed. A fork costs what its marks do, not what the
// recording does.
func (t *Timeline) Fork() *Timeline {
	f := &Timeline{recording: t.recording, progress: t.oldest}
	for _, m := range t.marks {
		f.marks = append(f.marks, m.copy())
	}
	return f
}

// copy returns m unfired.
func (m *Mark) copy() *Mark {
	return &Mark{RV: m.RV, Kind: m.Kind, Status: m.Status, Recorded: m.Recorded, Once: m.Once, Label: m.Label, Skip: m.Skip, Namespace: m.Namespace}
}

// WithWrites returns a sealed timeline over the same recording that takes
// writes: its resourceVersions are scaled by
// [RVScale], in a copy of what the scale changes (the snapshots and
// marks), sharing the rest (the event log, the held bodies). t must be
// sealed and take none.
func (t *Timeline) WithWrites() *Timeline {
	rc := *t.recording
	rc.snaps = make([]*snapshot, len(t.snaps))
	for i, s := range t.snaps {
		c := *s
		c.items = maps.Clone(s.items)
		rc.snaps[i] = &c
	}
	rc.events.rvs.far = slices.Clone(t.events.rvs.far)
	w := &Timeline{recording: &rc, progress: t.progress}
	for _, m := range t.marks {
		w.marks = append(w.marks, m.copy())
	}
	w.scale = RVScale
	w.rescale()
	return w
}

// New returns an empty timeline for the collection at path.
func New(path string, res apipath.Path) *Timeline {
	return &Timeline{recording: &recording{Path: path, Res: res}}
}

// Empty returns a sealed timeline of a collection the recording never
// listed or watched, of a resource the server has: no objects at
// resourceVersion rv and after. A list is empty, a watch waits, a get is
// NotFound, as on a server where none exist. With writes it takes writes
// (see [Timeline.WithWrites]); rv is then already scaled.
//
// objs are objects the collection holds nonetheless (JSON with kind and
// apiVersion), at rv: the namespaces of a recording that never listed
// them, which a server has.
func Empty(path string, res apipath.Path, kind string, rv int64, writes bool, objs ...[]byte) *Timeline {
	t := &Timeline{recording: &recording{Path: path, Res: res, Kind: kind, snaps: []*snapshot{{rv: rv, items: map[string]Object{}}}, last: rv}}
	for _, b := range objs {
		m, err := wire.MetaJSON(b)
		if err != nil {
			continue
		}
		t.held = append(t.held, b)
		ref := Ref{I: int32(len(t.held) - 1), N: int32(len(b)), Enc: JSON, Typed: true}
		t.snaps[0].items[m.Key()] = Object{Key: m.Key(), RV: rv, Labels: m.Labels, Ref: ref}
	}
	t.Seal()
	if writes {
		t.scale = RVScale
	}
	return t
}

// Broken returns why the timeline cannot answer, "" when it can.
func (t *Timeline) Broken() string { return t.broken }

// Last returns the highest resourceVersion recorded.
func (t *Timeline) Last() int64 { return t.last }

// Oldest returns the oldest resourceVersion state is known at.
func (t *Timeline) Oldest() int64 { return t.oldest }

// Progress returns "now": the highest resourceVersion served so far.
func (t *Timeline) Progress() int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.progress
}

// Advance records that a client was served the timeline up to rv, and
// reports whether that reached the last recorded resourceVersion for the
// first time.
func (t *Timeline) Advance(rv int64) (reachedLast bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.advanceLocked(rv)
}

func (t *Timeline) advanceLocked(rv int64) (reachedLast bool) {
	if rv <= t.progress {
		return false
	}
	before := t.progress
	t.progress = rv
	return before < t.last && rv >= t.last
}

// Marks returns the timeline's marks in resourceVersion order.
func (t *Timeline) Marks() []*Mark { return t.marks }

// AddMark puts m on the timeline; call before serving.
func (t *Timeline) AddMark(m *Mark) {
	i := sort.Search(len(t.marks), func(i int) bool { return t.marks[i].RV > m.RV })
	t.marks = append(t.marks, nil)
	copy(t.marks[i+1:], t.marks[i:])
	t.marks[i] = m
}

// atOf returns when the timeline reached rv in the recording.
func (t *Timeline) atOf(rv int64) time.Duration {
	var at time.Duration
	for _, s := range t.snaps {
		if s.rv <= rv {
			at = s.at
		}
	}
	if i := t.events.search(rv); i > 0 {
		at = max(at, t.at(t.events.At(i-1)))
	}
	return at
}

func (t *Timeline) fail(in *cassettes.Interaction, format string, a ...any) {
	if t.broken == "" {
		t.broken = fmt.Sprintf("interaction %d: %s", in.ID, fmt.Sprintf(format, a...))
	}
}

func (t *Timeline) noteRV(rv int64) {
	if rv > t.last {
		t.last = rv
	}
}

func (t *Timeline) noteKinds(listKind, apiVersion, kind string) {
	if listKind != "" && t.ListKind == "" {
		t.ListKind = listKind
	}
	if apiVersion != "" && t.APIVersion == "" {
		t.APIVersion = apiVersion
	}
	if kind != "" && t.Kind == "" {
		t.Kind = kind
	}
}

func (t *Timeline) snapAt(rv int64, at time.Duration, ns string) *snapshot {
	if t.snapByRV == nil {
		t.snapByRV = map[snapKey]*snapshot{}
	}
	k := snapKey{rv, ns}
	s := t.snapByRV[k]
	if s == nil {
		s = &snapshot{rv: rv, at: at, items: map[string]Object{}, ns: ns}
		t.snapByRV[k] = s
		t.scoped = t.scoped || ns != ""
	}
	return s
}

// Seal ends the reading of the recording: it parses list bodies that were
// split across frames, places recorded resets, orders snapshots, events
// and marks, and finds the oldest resourceVersion state is known at.
func (t *Timeline) Seal() {
	for _, s := range t.streams {
		s.seal()
	}
	for _, s := range t.snapByRV {
		t.snaps = append(t.snaps, s)
	}
	t.snapByRV = nil
	t.names.sealed()
	t.objs.sealed()
	sort.Slice(t.snaps, func(i, j int) bool {
		if t.snaps[i].rv != t.snaps[j].rv {
			return t.snaps[i].rv < t.snaps[j].rv
		}
		return t.snaps[i].ns < t.snaps[j].ns
	})
	t.sealEvents()
	sort.SliceStable(t.marks, func(i, j int) bool { return t.marks[i].RV < t.marks[j].RV })
	t.oldest = -1
	switch {
	case len(t.snaps) > 0:
		// Events before the first list would need the state before it,
		// which was not recorded: state is known from the first list on.
		t.oldest = t.snaps[0].rv
	case t.events.Len() > 0:
		// A watch-only recording: start from nothing before its first event.
		t.oldest = t.events.rvAt(0) - 1
	}
	if t.oldest < 0 && t.broken == "" {
		t.broken = "no list or watch event recorded"
	}
	if t.progress < t.oldest {
		t.progress = t.oldest
	}
	t.rescale()
	t.streams = nil
	if t.Kind == "" && strings.HasSuffix(t.ListKind, "List") {
		t.Kind = strings.TrimSuffix(t.ListKind, "List")
	}
	if t.ListKind == "" && t.Kind != "" {
		t.ListKind = t.Kind + "List"
	}
	if t.APIVersion == "" {
		t.APIVersion = t.Res.APIVersion()
	}
}

// Stream is one recorded list or watch of a timeline while the recording
// is read.
type Stream struct {
	t       *Timeline
	in      *cassettes.Interaction
	frames  Frames
	inx     uint32 // in's index in t.ins (see Timeline.interaction)
	watch   bool
	initial bool // a streaming list still sending its initial events
	enc     Encoding
	from    int64    // a watch's resourceVersion parameter
	rvs     rvList   // per frame: see RV
	pending []Object // a streaming list's initial ADDED objects so far
	listBuf []byte   // a list body split across frames, joined
	broken  bool
	lastRV  int64
	errAt   int // the first recorded ERROR frame, -1 for none
	scope   string
}

// Scope makes the stream's lists hold namespace ns only: the stream is a
// namespace's list or watch read into a timeline of all namespaces, whose
// list of ns says nothing about the other namespaces.
func (s *Stream) Scope(ns string) { s.scope = ns }

// Stream starts the reading of in, a recorded 200 list or watch of the
// timeline whose body is encoded as enc; fr are in's frames, nil for
// those in holds ([FramesOf]).
func (t *Timeline) Stream(in *cassettes.Interaction, fr Frames, q url.Values, enc Encoding) *Stream {
	if fr == nil {
		fr = FramesOf(in)
	}
	s := &Stream{t: t, in: in, frames: fr, inx: t.interaction(in, fr), watch: wire.IsWatch(q), enc: enc, errAt: -1}
	if len(t.streams) == 0 && in.Response != nil {
		t.Warnings = in.Response.Header.Values("Warning")
	}
	s.initial = s.watch && q.Get("sendInitialEvents") == "true"
	s.from, _ = strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	s.lastRV = s.from
	t.streams = append(t.streams, s)
	return s
}

// WithWrites returns s as read into its timeline's
// [Timeline.WithWrites]: its resourceVersions scaled by [RVScale]. s must
// be sealed.
func (s *Stream) WithWrites() *Stream {
	c := *s
	c.rvs.codes.far = slices.Clone(s.rvs.codes.far)
	c.rvs.rescale(RVScale)
	return &c
}

// RV returns the resourceVersion serving frame i moves the timeline to, 0
// for none.
func (s *Stream) RV(i int) int64 {
	if i < s.rvs.Len() {
		return s.rvs.at(i)
	}
	return 0
}

// ErrorAt returns the index of the stream's first recorded ERROR event,
// -1 for none. The API server ends a watch after an ERROR event, so a
// replay does too, whatever a hand edit left after it.
func (s *Stream) ErrorAt() int { return s.errAt }

// base is when the interaction's response started, from the cassette start.
func (s *Stream) base() time.Duration {
	at := s.in.At
	if s.in.Response != nil {
		at += s.in.Response.Latency
	}
	return at
}
