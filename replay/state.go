package replay

import (
	"io"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// The states of a served response body. The head (status and headers) is
// out before the body is read; then each frame of the plan goes through
// some of these states, in this order, until the frames are out:
//
//	atFrame ──► holding ──► settling ──► waiting ──► emitting ──► atFrame (the next frame)
//	   │           (a watch's recorded changes wait for Play, then for Settle,
//	   │            then for their recorded gap)
//	   ├──► atWorldTime ──► emitting, or ending{cut} after a 410 when the
//	   │       (on the world clock, a watch's recorded change    world clock
//	   │        waits for the world to reach its time)             went back
//	   └──► crossing ──► atFrame, or ending{cut} when the mark fires
//
//	ending ──► ended (io.EOF after the recorded end, or a reset)
//	   └─────► idling ──► ended (the client's timeout, a cancel)
//	             └──► ending (a write came to send)
//
// The frame states point at the body's frame (body.frame): a state is
// then one pointer, which an interface holds without an allocation.
//
// A state's step does one thing: it makes the body's next bytes (b.cur)
// and names the state that follows, or only names it. A timeline watch
// sends the writes made meanwhile in front of the frame it is at: from
// holding, settling, atWorldTime and crossing it then starts the frame
// over (atFrame), as the write (or the world clock's move) may have
// changed what the frame waits for; emitting and ending come back to
// themselves. idling on the world clock ends a watch the world went back
// from with a 410, as atWorldTime does. ended is final.
//
// A state's ready answers for it whether its step would make bytes now,
// without waiting (see body.ready); it changes nothing but b.frame, which
// atFrame sets as its step would.
type state interface {
	step(b *body) state
	ready(b *body) bool
}

type (
	// atFrame: the body is at frame b.next of its plan, not yet waited for.
	atFrame struct{}
	// holding: frame f is a watch's recorded change, held until the
	// replay plays (Options.Hold).
	holding struct{ f *outFrame }
	// settling: frame f is a watch's recorded change, held until the code
	// under test has settled (Options.Settle).
	settling struct{ f *outFrame }
	// waiting: frame f waits for its recorded gap, paced.
	waiting struct{ f *outFrame }
	// atWorldTime: frame f, a recorded change a watch sends, waits for
	// the world clock to reach the time it was recorded at
	// (Options.WorldClock).
	atWorldTime struct{ f *outFrame }
	// emitting: frame f is due; its bytes are made next.
	emitting struct{ f *outFrame }
	// crossing: the body is at mark m on its stream.
	crossing struct{ m *timeline.Mark }
	// ending: the frames are out, or were cut short by a mark or by the
	// watch falling behind (cut): the writes still to send, then the
	// recorded end.
	ending struct{ cut bool }
	// idling: everything recorded is out; the stream stays open as a live
	// watch does, until the client's timeout or a cancel.
	idling struct{}
	// ended: the body is over; Read returns err (io.EOF for a clean end).
	ended struct{ err error }
)

func (atFrame) step(b *body) state {
	if b.lag.Over(b.next) {
		return ending{cut: true}
	}
	if m := b.p.cut; m != nil && b.p.cutAfter >= 0 && b.next >= b.p.cutAfter {
		b.p.cut = nil
		return crossing{m}
	}
	fr, ok := b.p.frame(b.next)
	if !ok {
		return ending{}
	}
	b.frame = fr
	f := &b.frame
	if m := b.p.cut; m != nil && b.p.cutAfter == cutAtBookmark && f.initialEnd() {
		b.p.cut = nil
		return crossing{m}
	}
	if b.p.watch && !b.played && !f.initial() {
		return holding{f}
	}
	return afterHold(b, f)
}

func (atFrame) ready(b *body) bool {
	if b.lag.Over(b.next) || b.p.cut != nil && b.p.cutAfter >= 0 && b.next >= b.p.cutAfter {
		return false
	}
	fr, ok := b.p.frame(b.next)
	if !ok {
		return false
	}
	b.frame = fr
	f := &b.frame
	if b.p.cut != nil && b.p.cutAfter == cutAtBookmark && f.initialEnd() {
		return false
	}
	if b.p.watch && !b.played && !f.initial() {
		return holding{f}.ready(b)
	}
	return afterHold(b, f).ready(b)
}

// afterHold is the state of frame f once Options.Hold lets it go.
func afterHold(b *body, f *outFrame) state {
	if m, ok := f.payload.(markFailure); ok {
		return crossing{m.Mark}
	}
	if s, ok := f.step(); ok && s.Kind == timeline.StepEvent && b.s.worldClock != nil {
		return atWorldTime{f}
	}
	if b.s.settle > 0 && b.p.watch && b.unsent(f) {
		return settling{f}
	}
	return waiting{f}
}

// unsent reports whether f is a recorded change no client has been sent
// yet: a timeline event past now, or a frame of a recorded watch.
func (b *body) unsent(f *outFrame) bool {
	if s, ok := f.step(); ok {
		return s.Kind == timeline.StepEvent && f.rv > b.p.tl.Progress()
	}
	return true
}

func (h holding) ready(b *body) bool {
	return isClosed(b.s.prog.playing) && afterHold(b, h.f).ready(b)
}

func (h holding) step(b *body) state {
	if isClosed(b.s.prog.playing) {
		b.played = true
		// A watch asked for before Play counts its gaps from Play too,
		// though it comes here only after (a server's handler may): never
		// from its start, which would send its events early.
		if b.due.Before(b.s.prog.playedAt) {
			b.due = b.s.prog.playedAt
		}
		return afterHold(b, h.f)
	}
	var wake <-chan struct{}
	if b.p.follow != nil {
		wake = b.p.tl.Changed()
		rv := h.f.rv
		if m, ok := h.f.payload.(markFailure); ok {
			rv = m.RV
		}
		if ev, ok := b.p.follow.Before(rv); ok {
			return b.sendWrite(ev, atFrame{})
		}
	}
	var expire <-chan time.Time
	if end, ok := b.deadline(); ok {
		d := end.Sub(b.s.clock.Now())
		if d <= 0 {
			return ended{io.EOF}
		}
		tm := b.s.clock.NewTimer(d)
		defer tm.Stop()
		expire = tm.C()
	}
	select {
	case <-b.s.prog.playing:
		b.played = true
		// Recorded gaps count from the release, for every watch alike
		// however late it wakes to see it.
		b.due = b.s.prog.playedAt
	case <-wake:
	case <-expire:
		return ended{io.EOF} // the client's timeoutSeconds: a clean end
	case <-b.ctx.Done():
		return ended{b.ctx.Err()}
	case <-b.closed:
		return ended{errClosedBody}
	}
	return atFrame{}
}

// step waits until the replay has settled. Settle holds recorded changes,
// never writes: those that go before the change are sent first, and one
// made during the wait ends it, to be sent at once. (Held back, the
// writer's own cache would lag behind its writes: its next update would
// conflict, and its retries would keep the replay from ever settling.)
func (s settling) step(b *body) state {
	var wake <-chan struct{}
	if b.p.follow != nil {
		wake = b.p.tl.Changed()
		if ev, ok := b.p.follow.Before(s.f.rv); ok {
			return b.sendWrite(ev, atFrame{})
		}
	}
	switch err := b.settle(wake); {
	case err == errWoken:
		return atFrame{}
	case err != nil:
		return ended{err}
	}
	return waiting(s)
}

// ready: a settling frame waits for the code under test, whatever the
// clock says.
func (settling) ready(*body) bool { return false }

func (w waiting) ready(b *body) bool {
	f := w.f
	if d := b.p.pace.Wait(f.gap) + f.pause; d > 0 && b.due.Add(d).After(b.s.clock.Now()) {
		return false
	}
	return f.payload.ready(b)
}

func (w waiting) step(b *body) state {
	f := w.f
	if d := b.p.pace.Wait(f.gap) + f.pause; d > 0 {
		b.due = b.due.Add(d)
		if end, ok := b.deadline(); ok && b.due.After(end) {
			// The client's timeoutSeconds comes first: a clean end then.
			if err := b.waitUntil(end, false, nil, nil, nil); err != nil {
				return ended{err}
			}
			return ended{io.EOF}
		}
		if err := b.waitUntil(b.due, false, nil, nil, nil); err != nil {
			return ended{err}
		}
	}
	if b.paced() && !f.initial() {
		b.keepUp(b.next)
	}
	return emitting{f}
}

func (w atWorldTime) ready(b *body) bool {
	s, _ := w.f.step()
	d, ok := b.s.worldClock.Wait(s.At)
	return ok && d == 0 && !b.wentBack() && w.f.payload.ready(b)
}

// step waits until the world is at the time f was recorded at, sending
// the writes made meanwhile first, and ends the watch with a 410 Expired
// if the world is sought back meanwhile.
func (w atWorldTime) step(b *body) state {
	s, _ := w.f.step()
	wc := b.s.worldClock
	for {
		if b.wentBack() {
			return b.expire()
		}
		moved := wc.Changed()
		d, ok := wc.Wait(s.At)
		if ok && d == 0 {
			return emitting(w)
		}
		var wake <-chan struct{}
		if b.p.follow != nil {
			wake = b.p.tl.Changed()
			if ev, ok := b.p.follow.Before(w.f.rv); ok {
				return b.sendWrite(ev, atFrame{})
			}
		}
		end, timeout := b.deadline()
		if !ok && !timeout {
			end = b.s.clock.Now()
		} else if ok && (!timeout || b.s.clock.Now().Add(d).Before(end)) {
			end = b.s.clock.Now().Add(d)
		}
		switch err := b.waitUntil(end, !ok && !timeout, nil, wake, moved); {
		case err == errWoken:
			return atFrame{} // a write to send, or the world moved
		case err != nil:
			return ended{err}
		case timeout && !b.s.clock.Now().Before(end):
			return ended{io.EOF} // the client's timeoutSeconds: a clean end
		}
	}
}

// wentBack reports whether the world clock was sought back since the body
// started.
func (b *body) wentBack() bool {
	return b.s.worldClock != nil && b.s.worldClock.State().Back != b.back
}

// expire ends a watch the world left behind with the 410 Expired ERROR
// event a server sends a watch whose resourceVersion it no longer has.
func (b *body) expire() state {
	st := wire.Status(http.StatusGone, metav1.StatusReasonExpired,
		"too old resource version: the world clock was sought back (kwrec)", 0)
	b.frame = outFrame{payload: watchStep{&timeline.Step{Kind: timeline.StepExpired, Status: st}}}
	data, err := b.frame.payload.bytes(b)
	if err != nil {
		return ended{err}
	}
	return b.emit(data, ending{cut: true})
}

func (e emitting) ready(b *body) bool { return e.f.payload.ready(b) }

func (e emitting) step(b *body) state {
	f := e.f
	_, isStep := f.step()
	if isStep && f.rv != 0 {
		if ev, ok := b.writeBefore(f.rv); ok {
			return b.sendWrite(ev, e)
		}
	}
	data, err := f.payload.bytes(b)
	if err != nil {
		return ended{err}
	}
	b.next++
	// A timeline step moved now in writeBefore already.
	if f.rv != 0 && b.p.tl != nil && (!isStep || b.p.follow == nil) {
		b.s.prog.advance(b.p.tl, f.rv)
	}
	return b.emit(data, atFrame{})
}

// ready: whether a mark fires is decided as it is crossed.
func (crossing) ready(*body) bool { return false }

// step passes mark c.m: if it fires, the body serves its failure and ends
// there; otherwise the stream goes on.
func (c crossing) step(b *body) state {
	m := c.m
	if ev, ok := b.writeBefore(m.RV); ok {
		return b.sendWrite(ev, atFrame{})
	}
	b.next++
	if !m.Fire() {
		return atFrame{}
	}
	switch m.Kind {
	case timeline.MarkReset:
		b.src.close(&b.s.fan)
		b.s.prog.finish(b.p.iv)
		return ended{&resetError{recorded: "kwrec: " + m.Label}}
	case timeline.MarkTruncate:
		return ending{cut: true}
	}
	if m.Skip > 0 && b.p.tl != nil {
		// The watch fell behind: the world moves on without it.
		b.s.prog.advance(b.p.tl, b.p.tl.After(m.RV, m.Skip))
	}
	data, err := markFailure{m}.bytes(b)
	if err != nil {
		return ended{err}
	}
	return b.emit(data, ending{cut: true})
}

// ready: the end may wait for the recorded end's gap, or for a write.
func (ending) ready(*body) bool { return false }

func (e ending) step(b *body) state {
	if !e.cut {
		if ev, ok := b.writeBefore(0); ok {
			return b.sendWrite(ev, e)
		}
	}
	b.src.close(&b.s.fan)
	p := b.p
	end := p.end
	if e.cut {
		end = endEOF
	}
	if end == endIdle {
		b.s.prog.finish(p.iv)
		return idling{}
	}
	if w := p.pace.Wait(p.endGap); w > 0 && !e.cut {
		b.due = b.due.Add(w)
		if err := b.waitUntil(b.due, false, nil, nil, nil); err != nil {
			return ended{err}
		}
	}
	b.s.prog.finish(p.iv)
	if end == endReset {
		return ended{&resetError{recorded: p.endErr}}
	}
	return b.eof()
}

func (idling) ready(*body) bool { return false }

func (idling) step(b *body) state {
	p := b.p
	var exhausted <-chan struct{}
	if b.s.exhaust {
		exhausted = b.s.prog.consumed
	}
	var wake <-chan struct{}
	if p.follow != nil {
		wake = p.tl.Changed()
		if p.follow.Pending() {
			return ending{}
		}
	}
	var moved <-chan struct{}
	if b.s.worldClock != nil {
		if b.wentBack() {
			return b.expire()
		}
		moved = b.s.worldClock.Changed()
	}
	switch err := b.waitUntil(b.start.Add(p.pace.Idle(p.timeout)), p.timeout <= 0, exhausted, wake, moved); err {
	case nil:
		return b.eof()
	case errWoken:
		if b.wentBack() {
			return b.expire()
		}
		return ending{}
	default:
		return ended{err}
	}
}

// step is never called: fill stops at ended.
func (e ended) step(*body) state { return e }

func (ended) ready(*body) bool { return false }
