package timeline

import (
	"sort"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

// rec is one recorded event as a timeline holds it: an [Event] with its
// strings and interaction replaced by indexes into the timeline's tables.
// It holds no pointer, so the garbage collector never scans the events of
// a long recording, and it is 40 bytes where an Event is 88.
type rec struct {
	rv        int64
	key       uint32 // in Timeline.names
	labels    uint32 // in Timeline.names
	typ       uint32 // in Timeline.names
	in        uint32 // 1 + index in Timeline.ins, 0 for a held body
	i, off, n int32
	flags     uint8 // the Ref's Enc, Typed and W
}

const (
	recProtobuf uint8 = 1 << iota
	recTyped
	recW
)

// chunkLen is how many events a chunk of an eventLog holds: the log grows
// a chunk at a time, never copying what it holds, so a long recording's
// Open never holds its events twice.
const chunkLen = 4096

// eventLog is a growable array of recs in fixed-size chunks.
type eventLog struct {
	chunks []*[chunkLen]rec
	n      int
}

func (l *eventLog) Len() int { return l.n }

func (l *eventLog) at(i int) *rec { return &l.chunks[i/chunkLen][i%chunkLen] }

func (l *eventLog) add(r rec) {
	if l.n == len(l.chunks)*chunkLen {
		l.chunks = append(l.chunks, new([chunkLen]rec))
	}
	*l.at(l.n) = r
	l.n++
}

// truncate keeps the first n events, dropping the chunks past them.
func (l *eventLog) truncate(n int) {
	keep := (n + chunkLen - 1) / chunkLen
	clear(l.chunks[keep:])
	l.chunks = l.chunks[:keep]
	l.n = n
}

// search returns the index of the first event with a resourceVersion
// above rv, len when none: the log is in resourceVersion order once
// sealed.
func (l *eventLog) search(rv int64) int {
	return sort.Search(l.n, func(i int) bool { return l.at(i).rv > rv })
}

// For sort.Stable, by resourceVersion.
func (l *eventLog) Less(i, j int) bool { return l.at(i).rv < l.at(j).rv }
func (l *eventLog) Swap(i, j int)      { a, b := l.at(i), l.at(j); *a, *b = *b, *a }

func (l *eventLog) sorted() bool {
	for i := 1; i < l.n; i++ {
		if l.Less(i, i-1) {
			return false
		}
	}
	return true
}

// name returns the index of s in the timeline's names, adding it while
// the recording is read. Index 0 is "".
func (t *Timeline) name(s string) uint32 {
	if s == "" {
		return 0
	}
	if t.nameIdx == nil {
		t.nameIdx = map[string]uint32{}
		if len(t.names) == 0 {
			t.names = []string{""}
		}
	}
	if k, ok := t.nameIdx[s]; ok {
		return k
	}
	k := uint32(len(t.names))
	t.names = append(t.names, s)
	t.nameIdx[s] = k
	return k
}

// intern returns the timeline's copy of s.
func (t *Timeline) intern(s string) string { return t.names[t.name(s)] }

// interaction returns 1 + the index of in in the timeline's interactions.
func (t *Timeline) interaction(in *cassettes.Interaction) uint32 {
	t.ins = append(t.ins, in)
	return uint32(len(t.ins))
}

// pack returns the rec of a recorded event of type typ; o.Ref.In must be
// nil or the stream's interaction, whose index is in.
func (t *Timeline) pack(typ string, o Object, in uint32) rec {
	r := rec{rv: o.RV, key: t.name(o.Key), labels: t.name(o.Labels), typ: t.name(typ),
		i: o.Ref.I, off: o.Ref.Off, n: o.Ref.N}
	if o.Ref.In != nil {
		r.in = in
	}
	if o.Ref.Enc == Protobuf {
		r.flags |= recProtobuf
	}
	if o.Ref.Typed {
		r.flags |= recTyped
	}
	if o.Ref.W {
		r.flags |= recW
	}
	return r
}

// unpack returns the Event r is.
func (t *Timeline) unpack(r *rec) Event {
	ref := Ref{I: r.i, Off: r.off, N: r.n, Typed: r.flags&recTyped != 0, W: r.flags&recW != 0}
	if r.flags&recProtobuf != 0 {
		ref.Enc = Protobuf
	}
	if r.in > 0 {
		ref.In = t.ins[r.in-1]
	}
	return Event{Type: t.names[r.typ], Obj: Object{Key: t.names[r.key], RV: r.rv, Labels: t.names[r.labels], Ref: ref}}
}

// NumEvents returns how many events were recorded.
func (t *Timeline) NumEvents() int { return t.events.Len() }

// Event returns recorded event i, in resourceVersion order.
func (t *Timeline) Event(i int) Event { return t.unpack(t.events.at(i)) }

// at returns when event r was recorded, from the cassette start.
func (t *Timeline) at(r *rec) time.Duration {
	e := t.unpack(r)
	return e.At()
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
		e := *l.at(k)
		dup := false
		for j := n - 1; j >= 0 && l.at(j).rv == e.rv && !dup; j-- {
			o := l.at(j)
			dup = o.key == e.key && o.typ == e.typ
		}
		if !dup {
			*l.at(n) = e
			n++
		}
	}
	l.truncate(n)
}
