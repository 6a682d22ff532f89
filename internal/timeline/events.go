package timeline

import (
	"sort"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/chunked"
)

// rec is one recorded event as a timeline holds it: an [Event] with its
// strings and interaction replaced by indexes into the timeline's tables.
// It holds no pointer, so the garbage collector never scans the events of
// a long recording, and it is 16 bytes where an Event is 88.
type rec struct {
	rvc uint32 // the resourceVersion: see recRVs
	obj uint32 // the key and labels, in Timeline.objs
	// meta is 1 + the index of the event's interaction in Timeline.ins
	// in its low bits, then the index of its type in Timeline.types, then
	// the Ref's Enc and Typed.
	meta uint32
	// i is the event's frame in its interaction; the object is found in
	// the frame again when it is served (Ref.N is eventObject).
	i int32
}

const (
	recInBits   = 24
	recInMask   = 1<<recInBits - 1
	recTypeBits = 5
	recTypeMask = (1<<recTypeBits - 1) << recInBits
)

const (
	recProtobuf uint32 = 1 << (recInBits + recTypeBits + iota)
	recTyped
)

func (r *rec) in() uint32  { return r.meta & recInMask }
func (r *rec) typ() uint32 { return r.meta & recTypeMask >> recInBits }

// eventLog is the timeline's recorded events.
type eventLog struct {
	chunked.List[rec]
	rvs recRVs
}

// rv returns the resourceVersion of r, one of l's events.
func (l *eventLog) rv(r *rec) int64 { return l.rvs.dec(r.rvc) }

// rvAt returns the resourceVersion of event i.
func (l *eventLog) rvAt(i int) int64 { return l.rv(l.At(i)) }

// search returns the index of the first event with a resourceVersion
// above rv, len when none: the log is in resourceVersion order once
// sealed.
func (l *eventLog) search(rv int64) int {
	return sort.Search(l.Len(), func(i int) bool { return l.rvAt(i) > rv })
}

// For sort.Stable, by resourceVersion.
func (l *eventLog) Less(i, j int) bool { return l.rvAt(i) < l.rvAt(j) }
func (l *eventLog) Swap(i, j int)      { a, b := l.At(i), l.At(j); *a, *b = *b, *a }

func (l *eventLog) sorted() bool {
	for i := 1; i < l.Len(); i++ {
		if l.Less(i, i-1) {
			return false
		}
	}
	return true
}

// table is a list of distinct values, each added once: an index of it
// stands for its value. Its map is only kept while the recording is read.
type table[K comparable] struct {
	vals []K
	idx  map[K]uint32
}

// index returns the index of v, adding it.
func (l *table[K]) index(v K) uint32 {
	if k, ok := l.idx[v]; ok {
		return k
	}
	if l.idx == nil {
		l.idx = map[K]uint32{}
	}
	k := uint32(len(l.vals))
	l.vals = append(l.vals, v)
	l.idx[v] = k
	return k
}

// sealed drops the map: nothing is added after the recording is read.
func (l *table[K]) sealed() { l.idx = nil }

// name returns the index of s in the timeline's names, adding it while
// the recording is read. Index 0 is "".
func (t *Timeline) name(s string) uint32 {
	if len(t.names.vals) == 0 {
		t.names.index("")
	}
	return t.names.index(s)
}

// obj returns the index of the pair key, labels in the timeline's objs,
// adding it while the recording is read: most events repeat an earlier
// event's object and labels, and a rec holds one index for both.
func (t *Timeline) obj(key, labels string) uint32 {
	return t.objs.index([2]uint32{t.name(key), t.name(labels)})
}

// key returns the key of r, one of the timeline's events.
func (t *Timeline) key(r *rec) string { return t.names.vals[t.objs.vals[r.obj][0]] }

// intern returns the timeline's copy of s.
func (t *Timeline) intern(s string) string { return t.names.vals[t.name(s)] }

// interaction returns 1 + the index of in in the timeline's interactions.
func (t *Timeline) interaction(in *cassettes.Interaction, fr Frames) uint32 {
	if len(t.ins) == recInMask {
		t.fail(in, "more than %d recorded lists and watches of one collection", recInMask)
		return 0
	}
	t.ins, t.frs = append(t.ins, in), append(t.frs, fr)
	return uint32(len(t.ins))
}

// typeIndex returns the index of event type typ in the timeline's types.
func (t *Timeline) typeIndex(typ string, in *cassettes.Interaction) uint32 {
	for k, s := range t.types {
		if s == typ {
			return uint32(k)
		}
	}
	if len(t.types) == 1<<recTypeBits {
		t.fail(in, "more than %d watch event types", 1<<recTypeBits)
		return 0
	}
	t.types = append(t.types, typ)
	return uint32(len(t.types) - 1)
}

// pack returns the rec of a recorded event of type typ: o.Ref is the
// object of watch event frame o.Ref.I of o.Ref.In, the interaction whose
// index is in.
func (t *Timeline) pack(typ string, o Object, in uint32) rec {
	r := rec{rvc: t.events.rvs.enc(o.RV), obj: t.obj(o.Key, o.Labels),
		meta: t.typeIndex(typ, o.Ref.In)<<recInBits | in, i: o.Ref.I}
	if o.Ref.Enc == Protobuf {
		r.meta |= recProtobuf
	}
	if o.Ref.Typed {
		r.meta |= recTyped
	}
	return r
}

// unpack returns the Event r is.
func (t *Timeline) unpack(r *rec) Event {
	ref := Ref{In: t.ins[r.in()-1], I: r.i, N: eventObject, Typed: r.meta&recTyped != 0}
	if r.meta&recProtobuf != 0 {
		ref.Enc = Protobuf
	}
	return Event{Type: t.types[r.typ()], Obj: Object{Key: t.key(r), RV: t.events.rv(r), Labels: t.names.vals[t.objs.vals[r.obj][1]], Ref: ref}}
}

// NumEvents returns how many events were recorded.
func (t *Timeline) NumEvents() int { return t.events.Len() }

// Event returns recorded event i, in resourceVersion order.
func (t *Timeline) Event(i int) Event { return t.unpack(t.events.At(i)) }

// at returns when event r was recorded, from the cassette start.
func (t *Timeline) at(r *rec) time.Duration {
	k := int(r.in()) - 1
	if k < 0 {
		return 0
	}
	in := t.ins[k]
	at := in.At + t.frs[k].At(int(r.i))
	if in.Response != nil {
		at += in.Response.Latency
	}
	return at
}

// sealEvents orders the events by resourceVersion, in recording order
// among equals, and drops duplicates, in place.
func (t *Timeline) sealEvents() {
	l := &t.events
	if !l.sorted() {
		sort.Stable(l)
	}
	// The same event recorded twice (two watches that overlap, a re-watch
	// after a reset) is one event: keep the first, in recording order.
	n := 0
	for k := range l.Len() {
		e := *l.At(k)
		dup := false
		for j := n - 1; j >= 0 && l.rvAt(j) == l.rv(&e) && !dup; j-- {
			o := l.At(j)
			dup = o.obj == e.obj && o.typ() == e.typ()
		}
		if !dup {
			*l.At(n) = e
			n++
		}
	}
	l.Truncate(n)
}

// rvList is a stream's resourceVersion per frame (see [Stream.RV]), each
// held in 4 bytes as an event's is ([recRVs]): those of one stream are
// mostly a few apart.
type rvList struct {
	codes recRVs
	offs  chunked.List[uint32]
}

func (l *rvList) Len() int { return l.offs.Len() }

func (l *rvList) add(rv int64) { l.offs.Add(l.codes.enc(rv)) }

func (l *rvList) at(i int) int64 { return l.codes.dec(*l.offs.At(i)) }

// rescale multiplies every resourceVersion by k.
func (l *rvList) rescale(k int64) { l.codes.rescale(k) }

// recRVs turns the resourceVersion of an event, or of a stream's frame,
// into the 4 bytes its rec holds, and back: 1 + rv - base below recFar,
// else recFar + an index in far, so that the value moves with its rec when
// the log is sorted; 0 is 0.
type recRVs struct {
	base  int64   // the first non-zero resourceVersion encoded
	scale int64   // what every one is multiplied by, 0 for 1
	far   []int64 // those below base or too far above, times scale
}

// recFar marks a rec's resourceVersion as an index in recRVs.far.
const recFar = 1 << 31

func (c *recRVs) enc(rv int64) uint32 {
	if rv == 0 {
		return 0
	}
	if c.base == 0 {
		c.base = rv
	}
	if d := rv - c.base + 1; d >= 1 && d < recFar {
		return uint32(d)
	}
	c.far = append(c.far, rv*max(c.scale, 1))
	return recFar | uint32(len(c.far)-1)
}

func (c *recRVs) dec(v uint32) int64 {
	switch {
	case v == 0:
		return 0
	case v&recFar != 0:
		return c.far[v&^recFar]
	}
	return (c.base + int64(v) - 1) * max(c.scale, 1)
}

// rescale multiplies every resourceVersion by k.
func (c *recRVs) rescale(k int64) {
	c.scale = max(c.scale, 1) * k
	for i := range c.far {
		c.far[i] *= k
	}
}
