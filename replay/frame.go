package replay

import (
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/replay/internal/fanout"
)

// outFrame is one frame as it will be served: when it is due, and what it
// holds. Its bytes are made only when it is served, by its payload.
type outFrame struct {
	gap     time.Duration // recorded time since the previous frame (or the headers)
	pause   time.Duration // extra wait before it, unscaled
	rv      int64         // resourceVersion the frame moves its timeline to, 0 for none
	payload payload
}

// payload is what a frame holds. Each kind makes its own bytes, in the
// body's encoding, and knows whether it can make them without waiting.
type payload interface {
	bytes(b *body) ([]byte, error)
	// ready reports whether bytes would not wait for a reader.
	ready(b *body) bool
}

// Kinds of payload.
type (
	// rawBytes are bytes made when the plan was: a Status, discovery, a
	// view made whole.
	rawBytes []byte
	// recordedBytes are frame i (0-based) of the plan's interaction as
	// recorded, in an edited order.
	recordedBytes struct{ i int }
	// nextRecorded is the next of the unedited recorded frames [0,
	// plan.recN), frame body.next, which a read-ahead reads in order.
	nextRecorded struct{}
	// watchStep is a step of a timeline watch: an event, the initial
	// state, a bookmark or an expiry.
	watchStep struct{ *timeline.Step }
	// listView is a timeline list.
	listView struct{ *timeline.List }
	// markFailure is a mark on a stream: the body crosses it (state
	// crossing) and, if it fires, serves its failure.
	markFailure struct{ *timeline.Mark }
)

// dataFrame is a frame of bytes made already.
func dataFrame(data []byte) outFrame { return outFrame{payload: rawBytes(data)} }

func (d rawBytes) bytes(*body) ([]byte, error) { return d, nil }
func (rawBytes) ready(*body) bool              { return true }

func (f recordedBytes) bytes(b *body) ([]byte, error) { return b.src.recorded(b, f.i, false) }
func (recordedBytes) ready(*body) bool                { return true }

func (nextRecorded) bytes(b *body) ([]byte, error) { return b.src.recorded(b, b.next, true) }
func (nextRecorded) ready(b *body) bool            { return b.src.prefetched() }

func (l listView) bytes(b *body) ([]byte, error) {
	raws, err := objects{b.s.src}.raws(b.p.tl, l.Items)
	if err != nil {
		return nil, err
	}
	return b.s.views.codec.List(b.p.tl, *l.List, raws, b.p.proto)
}
func (listView) ready(*body) bool { return true }

// bytes returns the failure's ERROR event: the recorded one, or one made
// from its Status.
func (m markFailure) bytes(b *body) ([]byte, error) {
	if m.Recorded == nil {
		return b.s.views.codec.ErrorEvent(m.Status, b.proto()), nil
	}
	raw, err := b.src.ref(b, *m.Recorded)
	if err != nil {
		return nil, err
	}
	return b.s.views.codec.RecordedError(raw, m.Recorded.Enc, b.proto())
}

// ready is false: a mark is crossed before anything is sent.
func (markFailure) ready(*body) bool { return false }

func (s watchStep) bytes(b *body) ([]byte, error) {
	if b.p.table.x != nil {
		return s.table(b)
	}
	t, c, proto := b.p.tl, b.s.views.codec, b.p.proto
	switch s.Kind {
	case timeline.StepInitial:
		return b.watchEvent("ADDED", s.Obj)
	case timeline.StepEvent:
		if s.N > 0 {
			if data, err := b.shared(int(s.N - 1)); data != nil || err != nil {
				return data, err
			}
		}
		return b.watchEvent(s.Ev.Type, &s.Ev.Obj)
	case timeline.StepInitialEnd, timeline.StepBookmark:
		return c.Bookmark(t, s.RV, s.Kind == timeline.StepInitialEnd, proto), nil
	case timeline.StepExpired:
		return c.ErrorEvent(s.Status, proto), nil
	}
	return nil, fmt.Errorf("kwrec replay: unknown watch step %d", s.Kind)
}

// ready: a recorded event's frame is at hand once its hub made it.
func (s watchStep) ready(b *body) bool {
	if s.N <= 0 || b.p.table.x != nil {
		return true
	}
	return b.src.hubHas(int(s.N - 1))
}

// initial reports whether s is a timeline watch's initial state, which
// Options.Hold does not hold.
func (s watchStep) initial() bool {
	return s.Kind == timeline.StepInitial || s.Kind == timeline.StepInitialEnd
}

// table returns the step in the Table form. Only the first event of a
// watch carries the column definitions, as the API server sends them.
func (s watchStep) table(b *body) ([]byte, error) {
	f, gv := b.p.table, b.p.tableGV
	first := !b.tableSent
	var data []byte
	var ok bool
	switch s.Kind {
	case timeline.StepInitial:
		data, ok = f.x.WatchEvent(gv, "ADDED", b.s.views.rowOf(f, b.p.tl, s.Obj), first)
	case timeline.StepEvent:
		data, ok = f.x.WatchEvent(gv, s.Ev.Type, b.s.views.rowOf(f, b.p.tl, &s.Ev.Obj), first)
	case timeline.StepInitialEnd, timeline.StepBookmark:
		// Without a recorded Table bookmark to shape it, the bookmark is
		// left out: kubectl, the only Table client, asks for none.
		data, ok = f.x.Bookmark(gv, strconv.FormatInt(s.RV, 10), s.Kind == timeline.StepInitialEnd, first)
		if !ok {
			return nil, nil
		}
	case timeline.StepExpired:
		return b.s.views.codec.ErrorEvent(s.Status, false), nil
	}
	if !ok {
		return nil, fmt.Errorf("kwrec replay: no recorded Table row for a watch step")
	}
	b.tableSent = true
	return data, nil
}

// initial reports whether f is a timeline watch's initial state.
func (f *outFrame) initial() bool {
	s, ok := f.payload.(watchStep)
	return ok && s.initial()
}

// initialEnd reports whether f is the bookmark that ends a streaming
// list's initial events.
func (f *outFrame) initialEnd() bool {
	s, ok := f.payload.(watchStep)
	return ok && s.Kind == timeline.StepInitialEnd
}

// step returns f's timeline watch step, if it is one.
func (f *outFrame) step() (watchStep, bool) {
	s, ok := f.payload.(watchStep)
	return s, ok
}

// watchEvent returns the watch event of type typ for o, its recorded bytes
// read from the recording.
func (b *body) watchEvent(typ string, o *timeline.Object) ([]byte, error) {
	raw, err := b.src.ref(b, o.Ref)
	if err != nil {
		return nil, err
	}
	return b.s.views.codec.WatchEvent(b.p.tl, typ, o, raw, b.p.proto)
}

// shared returns the frame of recorded event n as its collection's hub
// made it (see package fanout), or nil when the body must make it itself.
func (b *body) shared(n int) ([]byte, error) {
	if h := b.src.hubFor(b, n); h != nil {
		data, err := h.Frame(b.ctx, b.closed, n)
		if errors.Is(err, fanout.ErrClosed) {
			err = errClosedBody
		}
		if data != nil || err != nil {
			return data, err
		}
	}
	b.s.fan.made.Add(1)
	return nil, nil
}
