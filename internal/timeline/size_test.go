package timeline

import (
	"sort"
	"testing"
	"unsafe"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
)

// A long recording holds one Event per recorded event: its size is most
// of what replay.Open holds for a large cassette.
func TestAnEventStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n > 16 {
		t.Errorf("a recorded event is held in %d bytes; keep it at most 16 (1M events: 16 MB)", n)
	}
}

// An event read back from its 16 bytes is the event filed.
func TestAnEventPacksAndUnpacks(t *testing.T) {
	in := &cassettes.Interaction{ID: 7}
	tl := New("/api/v1/pods", apipath.Path{})
	inx := tl.interaction(in, FramesOf(in))
	for _, e := range []Event{
		{Type: "ADDED", Obj: Object{Key: "ns/a", RV: 1 << 40, Labels: "app=x", Ref: Ref{In: in, I: 1 << 20, N: eventObject, Enc: Protobuf}}},
		{Type: "DELETED", Obj: Object{Key: "b", RV: 3, Ref: Ref{In: in, I: 2, N: eventObject, Typed: true}}},
		{Type: "MODIFIED", Obj: Object{Key: "ns/a", RV: 4, Ref: Ref{In: in, I: 3, N: eventObject}}},
	} {
		r := tl.pack(e.Type, e.Obj, inx)
		if got := tl.unpack(&r); got != e {
			t.Errorf("packed and unpacked:\n got %+v\nwant %+v", got, e)
		}
	}
}

// An event log's resourceVersions read back as filed, after a sort moved
// them and a rescale, whatever their spread: near the first one filed
// (held as an offset), below it, and 2^31 - 2 or more above it (held
// aside).
func TestAnEventLogsResourceVersionsReadBackAsFiled(t *testing.T) {
	for _, tc := range []struct {
		name string
		rvs  []int64
		far  int // how many are held aside
	}{
		{"none", nil, 0},
		{"zero only", []int64{0, 0}, 0},
		{"near the first", []int64{100, 101, 0, 4196, 100}, 0},
		{"the last offset held", []int64{10, 10 + recFar - 2}, 0},
		{"one past it", []int64{10, 10 + recFar - 1, 10 + recFar - 1}, 2},
		{"below the first", []int64{100, 99, 1, 100}, 2},
		{"a far one", []int64{1, 1 << 50, 2}, 1},
		{"the first far up", []int64{1 << 40, 3, 1<<40 + 5}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l eventLog
			for k, rv := range tc.rvs {
				l.Add(rec{rvc: l.rvs.enc(rv), obj: uint32(k)})
			}
			if len(l.rvs.far) != tc.far {
				t.Errorf("%d held aside, want %d", len(l.rvs.far), tc.far)
			}
			sort.Stable(&l)
			l.rvs.rescale(RVScale)
			for i := range l.Len() {
				r := l.At(i)
				if got, want := l.rv(r), tc.rvs[r.obj]*RVScale; got != want {
					t.Errorf("event %d (filed %d): resourceVersion %d, want %d", i, r.obj, got, want)
				}
				if i > 0 && l.rvAt(i-1) > l.rvAt(i) {
					t.Errorf("event %d: out of order after the sort", i)
				}
			}
		})
	}
}

// A stream's resourceVersions read back as added, scaled, whatever their
// spread.
func TestResourceVersionsReadBackAsAdded(t *testing.T) {
	in := []int64{0, 100, 101, 0, 99, 5 << 40, 102, 1, 1 << 33}
	var l rvList
	for _, rv := range in {
		l.add(rv)
	}
	l.rescale(RVScale)
	for i, want := range in {
		if got := l.at(i); got != want*RVScale {
			t.Errorf("frame %d: resourceVersion %d, want %d", i, got, want*RVScale)
		}
	}
}

// An event's Ref keeps no offsets: Of finds the object in the frame again,
// where Observe found it, in either encoding and either JSON layout, and a
// frame that is no longer a watch event is an error naming it.
func TestAnEventsObjectIsFoundInItsFrameAgain(t *testing.T) {
	obj := []byte(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"7"}}`)
	enveloped := wire.Envelope("v1", "ConfigMap", []byte("\x0a\x03\x0a\x01a"))
	for _, tc := range []struct {
		name  string
		enc   Encoding
		frame []byte
		want  []byte
		err   string
	}{
		{"the API server's JSON layout", JSON, wire.WatchEventJSON("ADDED", obj), obj, ""},
		{"another JSON layout", JSON, append(append([]byte(`{ "object": `), obj...), `, "type": "ADDED" }`+"\n"...), obj, ""},
		{"protobuf, the envelope taken off", Protobuf, wire.WatchEventProto("ADDED", enveloped), []byte("\x0a\x03\x0a\x01a"), ""},
		{"a JSON frame that is not an event", JSON, []byte("{}\n"), nil, "frame 3 of interaction 7 is not what it was when the cassette was opened: the file changed since; open it again"},
		{"a protobuf frame that is not an event", Protobuf, []byte{0, 0, 0, 1, 9}, nil, "frame 3 of interaction 7 is not what it was when the cassette was opened: the file changed since; open it again"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Ref{In: &cassettes.Interaction{ID: 7}, I: 2, N: eventObject, Enc: tc.enc}
			got, err := r.Of(tc.frame)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || string(got) != string(tc.want) {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
