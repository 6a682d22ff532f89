package timeline

import (
	"fmt"
	"strconv"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// Observe takes frame i of the stream as the recording is read, once per
// frame in order, and files what it says: the resourceVersion it moves
// the timeline to, and the objects of a list, the event of a watch, or the
// mark of a recorded ERROR event. f.Data is only valid during the call.
func (s *Stream) Observe(i int, f cassettes.Frame) {
	t := s.t
	ref := Ref{In: s.in, I: int32(i), Enc: s.enc}
	if !s.watch {
		s.observeList(i, f, ref)
		return
	}
	typ, objRef, m, ok := s.event(f.Data, ref)
	var rv int64
	if ok && typ != "ERROR" {
		var err error
		if rv, err = m.RV(); err != nil {
			s.rvs.add(0)
			if !s.broken {
				t.fail(s.in, "resourceVersion %q is not an integer", m.ResourceVersion)
				s.broken = true
			}
			return
		}
	}
	s.rvs.add(rv) // i == s.rvs.Len(): every frame of a watch is observed
	t.noteRV(rv)
	// A frame that is not an event with an object, such as garbage
	// hand-edited in to break the client's decoder, changes no state: no
	// client could apply it either.
	if !ok || s.broken {
		return
	}
	switch typ {
	case "ERROR":
		s.markError(i, objRef)
		return
	case "BOOKMARK":
		s.bookmark(rv, m.InitialEventsEnd, f.At)
		return
	}
	s.lastRV = max(s.lastRV, rv)
	t.noteKinds("", m.APIVersion, m.Kind)
	objRef.Typed = s.enc == JSON && m.Kind != "" && m.APIVersion != ""
	o := Object{Key: t.intern(m.Key()), RV: rv, Labels: t.intern(m.Labels), Ref: objRef}
	if s.initial && typ == "ADDED" {
		s.pending = append(s.pending, o)
		return
	}
	t.events.Add(t.pack(typ, o, s.inx))
}

// observeList takes frame i (f, at ref) of a list's body: the whole list,
// or one of several frames joined and parsed by seal.
func (s *Stream) observeList(i int, f cassettes.Frame, ref Ref) {
	switch {
	case i == 0:
		if err := s.addList(f.Data, ref, f); err != nil {
			// Maybe the first of several frames: joined and parsed by
			// seal.
			s.listBuf = append([]byte(nil), f.Data...)
		}
	case s.listBuf != nil:
		s.listBuf = append(s.listBuf, f.Data...)
	default: // the first frame was a whole list already
		s.t.fail(s.in, "list body is not JSON: more than one JSON value across its frames")
	}
}

// markError marks the recorded ERROR event of frame i, whose object is at
// objRef, at the stream's last resourceVersion.
func (s *Stream) markError(i int, objRef Ref) {
	if s.errAt < 0 {
		s.errAt = i
	}
	r := objRef
	s.t.marks = append(s.t.marks, &Mark{RV: s.lastRV, Kind: MarkError, Recorded: &r,
		Label: fmt.Sprintf("the recorded ERROR event, frame %d of interaction %d", i+1, s.in.ID)})
}

// bookmark takes a BOOKMARK event at resourceVersion rv, the frame at at:
// the one that ends the initial events (initialEventsEnd) files the
// objects they added as the list at rv.
func (s *Stream) bookmark(rv int64, initialEventsEnd bool, at time.Duration) {
	s.lastRV = max(s.lastRV, rv)
	if s.initial && initialEventsEnd {
		snap := s.t.snapAt(rv, s.base()+at, s.scope)
		for _, o := range s.pending {
			snap.items[o.Key] = o
		}
		s.initial, s.pending = false, nil
	}
}

// event splits a watch frame in the stream's encoding: its type, its
// object's Ref (for protobuf the object's message, without
// the envelope), and the object's metadata.
func (s *Stream) event(data []byte, ref Ref) (typ string, r Ref, m wire.Meta, ok bool) {
	if s.enc == JSON {
		typ, start, end, err := wire.SplitWatchEventJSON(data)
		if err != nil {
			return "", r, m, false
		}
		obj := data[start:end]
		ref.Off, ref.N = int32(start), int32(end-start)
		if typ == "ERROR" {
			return typ, ref, m, true
		}
		m, err = wire.MetaJSON(obj)
		return typ, ref, m, err == nil
	}
	typ, start, end, ok := wire.SplitWatchEventProto(data)
	if !ok {
		return "", r, m, false
	}
	av, kind, ms, me, ok := wire.Unenvelope(data[start:end])
	if !ok {
		return "", r, m, false
	}
	obj := data[start+ms : start+me]
	ref.Off, ref.N = int32(start+ms), int32(me-ms)
	if typ == "ERROR" {
		return typ, ref, m, true
	}
	m, err := wire.MetaProto(obj)
	m.Kind, m.APIVersion = kind, av
	return typ, ref, m, err == nil
}

// addList files the list body data, frame ref.I of its interaction (f);
// with ref.In nil, data is a body joined from several frames, which the
// timeline holds.
func (s *Stream) addList(data []byte, ref Ref, f cassettes.Frame) error {
	t := s.t
	listKind, apiVersion, rvs, items, err := s.listItems(data)
	if err != nil {
		return err
	}
	rv, err := parseRV(rvs)
	if err != nil {
		t.fail(s.in, "list resourceVersion %q is not an integer", rvs)
		return nil
	}
	t.noteKinds(listKind, apiVersion, "")
	t.noteRV(rv)
	// Serving the body's last frame moves the timeline to the list's
	// resourceVersion: its only frame, or the last of those joined.
	n := 1
	at := s.base() + f.At
	if ref.In == nil {
		ref.I = int32(len(t.held))
		t.held = append(t.held, data)
		n = s.frames.Len()
		at = s.base() + s.frames.At(n-1)
	}
	s.rvs = rvList{}
	for range n - 1 {
		s.rvs.add(0)
	}
	s.rvs.add(rv)
	snap := t.snapAt(rv, at, s.scope)
	for _, it := range items {
		raw := data[it[0]:it[1]]
		var m wire.Meta
		if s.enc == JSON {
			m, err = wire.MetaJSON(raw)
		} else {
			m, err = wire.MetaProto(raw)
		}
		if err != nil {
			t.fail(s.in, "list item: %v", err)
			continue
		}
		t.noteKinds("", "", m.Kind)
		orv, err := m.RV()
		if err != nil {
			t.fail(s.in, "list item resourceVersion %q is not an integer", m.ResourceVersion)
			continue
		}
		r := ref
		r.Off, r.N = int32(it[0]), int32(it[1]-it[0])
		r.Enc, r.Typed = s.enc, s.enc == JSON && m.Kind != "" && m.APIVersion != ""
		o := Object{Key: t.intern(m.Key()), RV: orv, Labels: t.intern(m.Labels), Ref: r}
		snap.items[o.Key] = o
	}
	return nil
}

// listItems parses a list body in the stream's encoding.
func (s *Stream) listItems(data []byte) (listKind, apiVersion, rv string, items [][2]int, err error) {
	if s.enc == JSON {
		return wire.ListItemsJSON(data)
	}
	av, kind, ms, me, ok := wire.Unenvelope(data)
	if !ok {
		return "", "", "", nil, fmt.Errorf("list body is not an enveloped protobuf message")
	}
	msg := data[ms:me]
	if !wire.EachField(msg, func(n protowire.Number, st, en int) bool {
		if n == 2 {
			items = append(items, [2]int{ms + st, ms + en})
		}
		return true
	}) {
		return "", "", "", nil, fmt.Errorf("protobuf list body does not parse")
	}
	return kind, av, wire.ListRVProto(msg), items, nil
}

func (s *Stream) seal() {
	t := s.t
	switch {
	case s.listBuf != nil:
		if err := s.addList(s.listBuf, Ref{}, cassettes.Frame{}); err != nil {
			t.fail(s.in, "%v", err)
		}
	case !s.watch && s.frames.Len() == 0:
		t.fail(s.in, "list body is empty")
	}
	s.listBuf, s.pending = nil, nil
	if s.watch && s.in.End != nil && s.in.End.Reason == cassettes.EndReset && s.in.Response != nil {
		t.marks = append(t.marks, &Mark{RV: s.lastRV, Kind: MarkReset,
			Label: fmt.Sprintf("the recorded connection reset of interaction %d", s.in.ID)})
	}
}

func parseRV(s string) (int64, error) { return strconv.ParseInt(s, 10, 64) }
