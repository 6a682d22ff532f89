package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/pace"
	"github.com/kwrec/kwrec/replay/internal/worldclock"
)

// serving is what a served body asks of its replay: the clock and the
// timers its waits share, how far the replay has got, the recorded bytes,
// what the watches of a collection share, the views that encode a
// timeline's steps, and the two options that change how it waits. A
// Replayer holds one, which every body it serves points at.
type serving struct {
	clock   clock.Clock
	alarms  *pace.Alarms // the timers of the bodies' waits, one per instant
	prog    *progress
	src     indexSource
	fan     sharing // what the watches share: hubs, budgets (sharing.go)
	views   *views
	settle  time.Duration // Options.Settle
	settled func()        // Options.Settled
	exhaust bool          // Options.ErrorWhenExhausted
	// worldClock is the world's clock (Options.WorldClock), nil on the
	// consumption clock.
	worldClock *worldclock.Clock
}

// body serves a plan as an http.Response body. It is a state machine
// (state.go): each Read takes it from state to state until a state makes
// bytes or ends it. Read and Close may be called from different
// goroutines, as client-go does to stop a watch.
type body struct {
	s      *serving
	p      *plan
	ctx    context.Context
	start  time.Time
	closed chan struct{}
	once   sync.Once

	state state    // where the response is
	frame outFrame // the frame it is at, from atFrame on
	cur   []byte   // bytes made and not yet read

	// The schedule: frame next of the plan is due at due plus its wait.
	next   int
	due    time.Time
	played bool     // Options.Hold no longer holds this watch
	lag    pace.Lag // kube-apiserver's rule for a watch that cannot keep up
	back   uint64   // the world clock's seeks back when the body started

	src       frameSource
	tableSent bool // a Table watch event went out: the next carries no columns
	gz        *gzip.Writer
	gzbuf     *bytes.Buffer
}

func newBody(s *serving, ctx context.Context, p *plan, start time.Time, gzipped bool) *body {
	b := &body{s: s, p: p, ctx: ctx, start: start, due: start, closed: make(chan struct{}),
		state: atFrame{}, src: frameSource{cursor: cursor{src: s.src}}}
	if s.worldClock != nil {
		b.back = s.worldClock.State().Back
	}
	if gzipped {
		b.gzbuf = new(bytes.Buffer)
		// Level 1, kube-apiserver's (gzipContentEncodingLevel): most of
		// the saving for a fraction of the CPU of the default level.
		b.gz, _ = gzip.NewWriterLevel(b.gzbuf, gzip.BestSpeed)
	}
	return b
}

// Read serves the body's frames, one at a time.
func (b *body) Read(p []byte) (int, error) {
	if err := b.fill(); err != nil {
		return 0, err
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// chunk returns the body's next bytes, waiting for them, without a copy:
// they are valid until the next call.
func (b *body) chunk() ([]byte, error) {
	if err := b.fill(); err != nil {
		return nil, err
	}
	d := b.cur
	b.cur = nil
	return d, nil
}

// fill moves the body from state to state until it has bytes or has ended.
func (b *body) fill() error {
	for len(b.cur) == 0 {
		if e, ok := b.state.(ended); ok {
			return e.err
		}
		select {
		case <-b.closed:
			b.state = ended{errClosedBody}
		case <-b.ctx.Done():
			b.state = ended{b.ctx.Err()}
		default:
			b.state = b.state.step(b)
		}
	}
	return nil
}

// ready reports whether the body's next bytes can be made without
// waiting: a frame that is due (or paced by no clock), of a watch that
// Options.Hold no longer holds, whose bytes are at hand. The server then
// writes it with the frames before it and flushes them together, as
// kube-apiserver flushes a watch only once no more events are queued for
// it (see serve.CopyFrames). When in doubt it says no: the caller flushes and
// then waits.
func (b *body) ready() bool {
	return len(b.cur) > 0 || b.state.ready(b)
}

// waitUntil blocks until t on the clock, the request is cancelled, the body
// is closed, (with exhausted non-nil) the replay is done, or wake or
// moved (a write, the world clock) is closed, returning errWoken.
func (b *body) waitUntil(t time.Time, forever bool, exhausted, wake, moved <-chan struct{}) error {
	var timer <-chan time.Time
	var fired <-chan struct{}
	if !forever {
		d := t.Sub(b.s.clock.Now())
		if d <= 0 {
			return nil
		}
		if al := b.s.alarms.Join(t, d); al != nil {
			defer b.s.alarms.Leave(al)
			fired = al.Fired()
		} else {
			tm := b.s.clock.NewTimer(d)
			defer tm.Stop()
			timer = tm.C()
		}
	}
	select {
	case <-timer:
		return nil
	case <-fired:
		return nil
	case <-b.ctx.Done():
		return b.ctx.Err()
	case <-b.closed:
		return errClosedBody
	case <-exhausted:
		return ErrExhausted
	case <-wake:
		return errWoken
	case <-moved:
		return errWoken
	}
}

// errWoken ends an idle wait: a write came for the watch to send.
var errWoken = errors.New("kwrec replay: woken by a write")

// deadline is when a watch the client gave timeoutSeconds ends, as the
// server ends it, whatever is still to come (on the warped clock).
func (b *body) deadline() (time.Time, bool) {
	if !b.p.watch || b.p.timeout <= 0 {
		return time.Time{}, false
	}
	return b.start.Add(b.p.pace.Idle(b.p.timeout)), true
}

// settle waits until Options.Settle has passed since the last request and
// the last recorded change (see Options.Settle), then notes this change.
// A close of wake (a write to send) ends the wait with errWoken.
func (b *body) settle(wake <-chan struct{}) error {
	s := b.s
	for {
		last := max(s.prog.activity.Load(), s.prog.changed.Load())
		idle := s.clock.Since(time.Unix(0, last))
		if idle >= s.settle {
			if s.settled != nil {
				s.settled()
			}
			break
		}
		if err := b.waitUntil(s.clock.Now().Add(s.settle-idle), false, nil, wake, nil); err != nil {
			return err
		}
	}
	s.prog.changed.Store(s.clock.Now().UnixNano())
	return nil
}

// writeBefore returns the next write of a timeline watch that goes before
// a step moving the timeline to rv (0: any write, the steps being out).
// With none, now moves to rv: a write from then on goes after the step.
func (b *body) writeBefore(rv int64) (timeline.Event, bool) {
	if b.p.follow == nil {
		return timeline.Event{}, false
	}
	ev, ok, reachedLast := b.p.follow.Next(rv)
	if reachedLast {
		b.s.prog.reached()
	}
	return ev, ok
}

// sendWrite makes write ev the body's next bytes, then goes on in state then.
func (b *body) sendWrite(ev timeline.Event, then state) state {
	s := watchStep{&timeline.Step{Kind: timeline.StepEvent, Ev: &ev, RV: ev.RV()}}
	data, err := s.bytes(b)
	if err != nil {
		return ended{err}
	}
	return b.emit(data, then)
}

// emit makes data the body's next bytes, as they go on the wire, then goes
// on in state then.
func (b *body) emit(data []byte, then state) state {
	data, err := b.encode(data)
	if err != nil {
		return ended{err}
	}
	b.cur = data
	return then
}

// eof ends the body cleanly, with the end of its gzip stream if it has one.
func (b *body) eof() state {
	if b.gz != nil {
		b.gzbuf.Reset()
		b.gz.Close()
		b.cur = b.gzbuf.Bytes()
	}
	return ended{io.EOF}
}

// proto reports whether the body is protobuf.
func (b *body) proto() bool {
	if b.p.tl != nil && b.p.iv == nil {
		return b.p.proto
	}
	return wire.MediaType(b.p.header.Get("Content-Type")) == wire.MediaProtobuf
}

// encode returns data as it goes on the wire: in the metadata-only form
// if asked, gzip-compressed and flushed when the client asked for gzip.
func (b *body) encode(data []byte) ([]byte, error) {
	if b.p.partial {
		pd, err := wire.PartialMetadata(data, b.p.shape, b.p.proto)
		if err != nil {
			return nil, fmt.Errorf("kwrec replay: the metadata-only form of a %s: %w", b.p.tl.Kind, err)
		}
		data = pd
	}
	if b.gz == nil {
		return data, nil
	}
	b.gzbuf.Reset()
	b.gz.Write(data)
	b.gz.Flush()
	return b.gzbuf.Bytes(), nil
}

// Close ends the body; a Read blocked in a wait returns at once.
func (b *body) Close() error {
	b.once.Do(func() {
		close(b.closed)
		b.src.close(&b.s.fan)
		b.s.prog.finish(b.p.iv)
	})
	return nil
}
