package replay

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// endKind is how a served body ends once its frames are out.
type endKind int

const (
	// endEOF: a clean end of body after endGap.
	endEOF endKind = iota
	// endReset: a connection reset after endGap.
	endReset
	// endIdle: stay open like a live watch until the client's
	// timeoutSeconds (on the warped clock), then a clean end; or until the
	// request is cancelled.
	endIdle
)

// outFrame is one frame as it will be served. Its bytes are data, or are
// made from the recording only when the frame is served: recorded frame
// rec of the plan's interaction, a timeline watch step, list or object, or
// the failure of a mark if it fires.
type outFrame struct {
	gap   time.Duration // recorded time since the previous frame (or the headers)
	pause time.Duration // extra wait before it, unscaled
	data  []byte
	rec   int              // > 0: the bytes of the interaction's recorded frame rec (1-based)
	step  *timeline.Step   // a timeline watch step
	list  *timeline.List   // a timeline list
	obj   *timeline.Object // a timeline get
	mark  *timeline.Mark   // a mark on a recorded stream
	rv    int64            // resourceVersion the frame moves its timeline to, 0 for none
}

// pacing turns recorded gaps into clock waits.
type pacing struct {
	speed float64       // 0: no waits
	cap   time.Duration // 0: no cap
}

func (p pacing) wait(d time.Duration) time.Duration {
	if p.speed <= 0 || d <= 0 {
		return 0
	}
	w := time.Duration(float64(d) / p.speed)
	if p.cap > 0 && w > p.cap {
		w = p.cap
	}
	return w
}

// idle is how long an idle stream lasts for a client timeout d: scaled by
// the speed but never capped; at speed 0 (no waits) the full d, so a client
// that re-watches at once does not spin.
func (p pacing) idle(d time.Duration) time.Duration {
	if p.speed <= 0 {
		return d
	}
	return time.Duration(float64(d) / p.speed)
}

// plan is a response as it will be served: head, frames and end.
type plan struct {
	status  int
	header  http.Header
	latency time.Duration
	recN    int        // the first recN recorded frames of iv, unedited (see frame)
	frames  []outFrame // then these
	end     endKind
	endGap  time.Duration
	endErr  string        // recorded reset text
	timeout time.Duration // idle length: the client's timeoutSeconds, else the recorded end for a server timeout; 0 = until cancelled
	pace    pacing
	tl      *timeline.Timeline // progress is reported here, may be nil
	proto   bool               // timeline frames are encoded in protobuf, else JSON
	iv      *ivState           // finish is reported here, nil for answers not from a recorded interaction
	steps   *timeline.Steps    // a timeline watch, after frames
	follow  *timeline.Follower // the writes a timeline watch sends, interleaved with steps
	watch   bool               // a watch: Options.Hold holds its recorded changes
	// partial sends every frame in its metadata-only form
	// (PartialObjectMetadata); shape says what a frame holds.
	partial bool
	shape   wire.Shape
	// table serves the watch steps in kubectl's Table form, version tableGV.
	table   *table.Index
	tableGV table.GroupVersion
}

// frame returns the plan's frame i (0-based), false past the last. i is
// the frame asked for last or the one after it: a timeline watch's steps
// are made as it reaches them.
func (p *plan) frame(i int) (outFrame, bool) {
	if i < p.recN {
		return recordedFrame(p.iv, i), true
	}
	if i -= p.recN; i < len(p.frames) {
		return p.frames[i], true
	}
	if i -= len(p.frames); p.steps == nil {
		return outFrame{}, false
	}
	if s, ok := p.steps.At(i); ok {
		f := outFrame{step: s, gap: s.Gap, rv: s.RV}
		if s.Kind == timeline.StepMark {
			f.mark = s.Mark
		}
		return f, true
	}
	return outFrame{}, false
}

// body serves a plan's frames as an http.Response body, waiting on the
// replayer's clock before each one. Read and Close may be called from
// different goroutines, as client-go does to stop a watch.
type body struct {
	r     *Replayer
	p     *plan
	ctx   context.Context
	start time.Time
	due   time.Time
	next  int
	cur   []byte
	cut   bool // a mark fired, or the watch could not keep up: no more frames
	// cutAt > 0 ends the watch before frame cutAt: it could not keep up
	// (see slow.go), which backlog tells; held is how long the dispatch
	// of its frames has waited for it so far.
	cutAt   int
	backlog *backlog
	held    time.Duration
	// waited says the pacing wait before frame next is over (a write was
	// served in front of it).
	waited bool
	played bool // Options.Hold no longer holds this watch
	// tableSent says a Table watch event went out (the next carries no columns).
	tableSent bool

	fmu        sync.Mutex // guards frames, pf and hub: Close may come from another goroutine
	frames     cursor
	pf         *prefetch // reads the unedited recorded frames ahead
	hub        *hub      // makes the frames of recorded events, shared (see fanout.go)
	framesDone bool
	err        error
	closed     chan struct{}
	once       sync.Once

	gz    *gzip.Writer
	gzbuf *bytes.Buffer
}

func newBody(r *Replayer, ctx context.Context, p *plan, start time.Time, gzipped bool) *body {
	b := &body{r: r, p: p, ctx: ctx, start: start, due: start, closed: make(chan struct{}), frames: cursor{src: r.src}}
	if gzipped {
		b.gzbuf = new(bytes.Buffer)
		// Level 1, kube-apiserver's (gzipContentEncodingLevel): most of
		// the saving for a fraction of the CPU of the default level.
		b.gz, _ = gzip.NewWriterLevel(b.gzbuf, gzip.BestSpeed)
	}
	return b
}

// waitUntil blocks until t on the clock, the request is cancelled, the body
// is closed, (with exhausted non-nil) the replay is done, or (with wake
// non-nil) wake is closed, returning errWoken.
func (b *body) waitUntil(t time.Time, forever bool, exhausted, wake <-chan struct{}) error {
	var timer <-chan time.Time
	var fired <-chan struct{}
	if !forever {
		d := t.Sub(b.r.clock.Now())
		if d <= 0 {
			return nil
		}
		if al := b.r.alarms.join(t, d); al != nil {
			defer b.r.alarms.leave(al)
			fired = al.fired
		} else {
			tm := b.r.clock.NewTimer(d)
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
	}
}

// errWoken ends an idle wait: a write came for the watch to send.
var errWoken = errors.New("kwrec replay: woken by a write")

// Read serves the body's frames, one at a time.
func (b *body) Read(p []byte) (int, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return 0, b.err
		}
		b.step()
	}
	n := copy(p, b.cur)
	b.cur = b.cur[n:]
	return n, nil
}

// chunk returns the body's next bytes, waiting for them, without a copy:
// they are valid until the next call.
func (b *body) chunk() ([]byte, error) {
	for len(b.cur) == 0 {
		if b.err != nil {
			return nil, b.err
		}
		b.step()
	}
	d := b.cur
	b.cur = nil
	return d, nil
}

// ready reports whether the body's next frame can be made without
// waiting: a frame that is due (or paced by no clock), of a watch that
// Options.Hold no longer holds, whose bytes are at hand. The server then
// writes it with the frames before it and flushes them together, as
// kube-apiserver flushes a watch only once no more events are queued for
// it (see copyFrames). When in doubt it says no: the caller flushes and
// then waits.
func (b *body) ready() bool {
	if b.err != nil || b.cut || len(b.cur) > 0 {
		return len(b.cur) > 0
	}
	f, ok := b.p.frame(b.next)
	if !ok || f.mark != nil || b.p.watch && b.r.opts.Settle > 0 {
		return false
	}
	if b.p.watch && !b.played && !initial(&f) && !isClosed(b.r.playing) {
		return false
	}
	if w := b.p.pace.wait(f.gap) + f.pause; w > 0 && !b.waited && b.due.Add(w).After(b.r.clock.Now()) {
		return false
	}
	if f.rec > 0 && b.next < b.p.recN {
		b.fmu.Lock()
		defer b.fmu.Unlock()
		return b.pf != nil && b.pf.ready()
	}
	if f.step != nil && f.step.N > 0 && b.p.table == nil {
		b.fmu.Lock()
		defer b.fmu.Unlock()
		return b.hub != nil && b.hub.has(int(f.step.N-1))
	}
	return true
}

// step takes the body one step: it makes its next bytes (b.cur), or sets
// its error (b.err, io.EOF at the end), or serves a write, crosses a mark
// or waits, then returns.
func (b *body) step() {
	select {
	case <-b.closed:
		b.err = errClosedBody
		return
	case <-b.ctx.Done():
		b.err = b.ctx.Err()
		return
	default:
	}
	if b.cutAt > 0 && b.next >= b.cutAt {
		b.cut = true
	}
	fr, ok := b.p.frame(b.next)
	if !ok || b.cut {
		b.end()
		return
	}
	f := &fr
	if b.p.watch && !b.played && !initial(f) {
		if b.hold(f) {
			return
		}
	}
	if f.mark != nil {
		if b.writeBefore(f.mark.RV) {
			return
		}
		if err := b.cross(f.mark); err != nil {
			b.err = err
		}
		return
	}
	if b.r.opts.Settle > 0 && b.p.watch && !b.waited && b.unsent(f) {
		// Settle holds recorded changes, never writes: those that go
		// before the change are sent first, and one made during the wait
		// ends it, to be sent at once. (Held back, the writer's own cache
		// would lag behind its writes: its next update would conflict,
		// and its retries would keep the replay from ever settling.)
		var wake <-chan struct{}
		if b.p.follow != nil {
			wake = b.p.tl.Changed()
			if ev, ok := b.p.follow.Before(f.rv); ok {
				b.sendWrite(ev)
				return
			}
		}
		switch err := b.settle(wake); {
		case err == errWoken:
			return
		case err != nil:
			b.err = err
			return
		}
	}
	if w := b.p.pace.wait(f.gap) + f.pause; w > 0 && !b.waited {
		b.due = b.due.Add(w)
		if end, ok := b.deadline(); ok && b.due.After(end) {
			// The client's timeoutSeconds comes first: a clean end then.
			if err := b.waitUntil(end, false, nil, nil); err != nil {
				b.err = err
				return
			}
			b.err = io.EOF
			return
		}
		if err := b.waitUntil(b.due, false, nil, nil); err != nil {
			b.err = err
			return
		}
	}
	b.waited = true
	if b.paced() && !initial(f) {
		b.keepUp(b.next)
	}
	if f.step != nil && f.rv != 0 && b.writeBefore(f.rv) {
		return
	}
	data, err := b.data(f, b.next < b.p.recN)
	if err != nil {
		b.err = err
		return
	}
	b.next++
	b.waited = false
	// A timeline step moved now in writeBefore already.
	if f.rv != 0 && b.p.tl != nil && (f.step == nil || b.p.follow == nil) {
		b.r.advance(b.p.tl, f.rv)
	}
	b.cur = b.encode(data)
}

// end serves what comes once the frames are out: the writes still to
// send, then the recorded end.
func (b *body) end() {
	if !b.cut && b.writeBefore(0) {
		return
	}
	b.closeFrames()
	if b.err = b.finish(); b.err == errWoken {
		b.err = nil
	}
	if b.err == io.EOF && b.gz != nil {
		b.gzbuf.Reset()
		b.gz.Close()
		b.cur = b.gzbuf.Bytes()
	}
}

// unsent reports whether f is a recorded change no client has been sent
// yet: a timeline event past now, or a frame of a recorded watch.
func (b *body) unsent(f *outFrame) bool {
	if f.step != nil {
		return f.step.Kind == timeline.StepEvent && f.rv > b.p.tl.Progress()
	}
	return true
}

// settle waits until Options.Settle has passed since the last request and
// the last recorded change (see Options.Settle), then notes this change.
// A close of wake (a write to send) ends the wait with errWoken.
func (b *body) settle(wake <-chan struct{}) error {
	r := b.r
	for {
		last := max(r.activity.Load(), r.changed.Load())
		idle := r.clock.Since(time.Unix(0, last))
		if idle >= r.opts.Settle {
			break
		}
		if err := b.waitUntil(r.clock.Now().Add(r.opts.Settle-idle), false, nil, wake); err != nil {
			return err
		}
	}
	r.changed.Store(r.clock.Now().UnixNano())
	return nil
}

// initial reports whether f is a timeline watch's initial state, which
// Options.Hold does not hold.
func initial(f *outFrame) bool {
	return f.step != nil && (f.step.Kind == timeline.StepInitial || f.step.Kind == timeline.StepInitialEnd)
}

// hold waits, before the first recorded change of a watch, until the
// replay plays, serving the writes that come meanwhile; it reports whether
// the caller must look at the frame again (a write was served, or the
// wait ended with b.err set).
func (b *body) hold(f *outFrame) bool {
	select {
	case <-b.r.playing:
		b.played = true
		// A watch asked for before Play counts its gaps from Play too,
		// though it comes here only after (a server's handler may): never
		// from its start, which would send its events early.
		if b.due.Before(b.r.playedAt) {
			b.due = b.r.playedAt
		}
		return false
	default:
	}
	var wake <-chan struct{}
	if b.p.follow != nil {
		wake = b.p.tl.Changed()
		rv := f.rv
		if f.mark != nil {
			rv = f.mark.RV
		}
		if ev, ok := b.p.follow.Before(rv); ok {
			return b.sendWrite(ev)
		}
	}
	var expire <-chan time.Time
	if end, ok := b.deadline(); ok {
		d := end.Sub(b.r.clock.Now())
		if d <= 0 {
			b.err = io.EOF
			return true
		}
		tm := b.r.clock.NewTimer(d)
		defer tm.Stop()
		expire = tm.C()
	}
	select {
	case <-b.r.playing:
		b.played = true
		// Recorded gaps count from the release, for every watch alike
		// however late it wakes to see it.
		b.due = b.r.playedAt
	case <-wake:
	case <-expire:
		b.err = io.EOF // the client's timeoutSeconds: a clean end
	case <-b.ctx.Done():
		b.err = b.ctx.Err()
	case <-b.closed:
		b.err = errClosedBody
	}
	return true
}

// deadline is when a watch the client gave timeoutSeconds ends, as the
// server ends it, whatever is still to come (on the warped clock).
func (b *body) deadline() (time.Time, bool) {
	if !b.p.watch || b.p.timeout <= 0 {
		return time.Time{}, false
	}
	return b.start.Add(b.p.pace.idle(b.p.timeout)), true
}

// writeBefore serves the next write of a timeline watch that goes before
// a step moving the timeline to rv (0: any write, the steps being out),
// and reports whether it did. With none, now moves to rv: a write from
// then on goes after the step. A body's error ends the stream.
func (b *body) writeBefore(rv int64) bool {
	if b.p.follow == nil {
		return false
	}
	ev, ok, reachedLast := b.p.follow.Next(rv)
	if reachedLast {
		b.r.reached()
	}
	return ok && b.sendWrite(ev)
}

// sendWrite makes write ev the body's next bytes; it returns true.
func (b *body) sendWrite(ev timeline.Event) bool {
	f := outFrame{step: &timeline.Step{Kind: timeline.StepEvent, Ev: &ev, RV: ev.RV()}, rv: ev.RV()}
	data, err := b.view(&f)
	if err != nil {
		b.err = err
		return true
	}
	b.cur = b.encode(data)
	return true
}

// cross passes mark m: if it fires, the body serves its failure and
// ends there (b.cut); otherwise the stream goes on.
func (b *body) cross(m *timeline.Mark) error {
	b.next++
	if !m.Fire() {
		return nil
	}
	b.cut = true
	switch m.Kind {
	case timeline.MarkReset:
		b.closeFrames()
		b.r.finish(b.p.iv)
		return &resetError{recorded: "kwrec: " + m.Label}
	case timeline.MarkTruncate:
		return nil
	}
	if m.Skip > 0 && b.p.tl != nil {
		// The watch fell behind: the world moves on without it.
		b.r.advance(b.p.tl, b.p.tl.After(m.RV, m.Skip))
	}
	var data []byte
	if m.Recorded == nil {
		data = b.r.codec.ErrorEvent(m.Status, b.proto())
	} else {
		raw, err := b.ref(*m.Recorded)
		if err != nil {
			return err
		}
		if data, err = b.r.codec.RecordedError(raw, m.Recorded.Enc, b.proto()); err != nil {
			return err
		}
	}
	b.cur = b.encode(data)
	return nil
}

// proto reports whether the body is protobuf.
func (b *body) proto() bool {
	if b.p.tl != nil && b.p.iv == nil {
		return b.p.proto
	}
	return wire.MediaType(b.p.header.Get("Content-Type")) == wire.MediaProtobuf
}

// ref returns the recorded bytes ref names (a copy-free view, valid until
// the next read of that interaction's frames).
func (b *body) ref(ref timeline.Ref) ([]byte, error) {
	if ref.In == nil {
		return b.p.tl.Bytes(ref)
	}
	b.fmu.Lock()
	defer b.fmu.Unlock()
	if b.framesDone {
		if isClosed(b.closed) {
			return nil, errClosedBody
		}
		// The recorded frames are out, and a write moved an object out
		// of the watch's selection: its DELETED carries the version the
		// watch last sent, read once from the recording.
		raws, err := b.r.raws(b.p.tl, []timeline.Object{{Ref: ref}})
		if err != nil {
			return nil, err
		}
		return raws[0], nil
	}
	d, err := b.frames.frame(ref.In, int(ref.I))
	if err != nil {
		return nil, err
	}
	return ref.Of(d)
}

// view returns the bytes of a timeline frame.
func (b *body) view(f *outFrame) ([]byte, error) {
	t, c, proto := b.p.tl, b.r.codec, b.p.proto
	switch {
	case f.list != nil:
		raws, err := b.r.raws(t, f.list.Items)
		if err != nil {
			return nil, err
		}
		return c.List(t, *f.list, raws, proto)
	case f.obj != nil:
		raw, err := b.ref(f.obj.Ref)
		if err != nil {
			return nil, err
		}
		return c.Object(t, f.obj, raw, proto)
	}
	s := f.step
	if b.p.table != nil {
		return b.tableStep(s)
	}
	switch s.Kind {
	case timeline.StepInitial, timeline.StepEvent:
		o, typ := s.Obj, "ADDED"
		if s.Kind == timeline.StepEvent {
			o, typ = &s.Ev.Obj, s.Ev.Type
			if s.N > 0 {
				if h := b.hubFor(int(s.N - 1)); h != nil {
					data, err := h.frame(b.ctx, b.closed, int(s.N-1))
					if data != nil || err != nil {
						return data, err
					}
				}
				b.r.fan.made.Add(1)
			}
		}
		raw, err := b.ref(o.Ref)
		if err != nil {
			return nil, err
		}
		return c.WatchEvent(t, typ, o, raw, proto)
	case timeline.StepInitialEnd, timeline.StepBookmark:
		return c.Bookmark(t, s.RV, s.Kind == timeline.StepInitialEnd, proto), nil
	case timeline.StepExpired:
		return c.ErrorEvent(s.Status, proto), nil
	}
	return nil, fmt.Errorf("kwrec replay: unknown watch step %d", s.Kind)
}

// tableStep returns a watch step in the Table form. Only the first event
// of a watch carries the column definitions, as the API server sends them.
func (b *body) tableStep(s *timeline.Step) ([]byte, error) {
	x, gv := b.p.table, b.p.tableGV
	first := !b.tableSent
	var data []byte
	var ok bool
	switch s.Kind {
	case timeline.StepInitial:
		data, ok = x.WatchEvent(gv, "ADDED", b.r.rowOf(x, b.p.tl, s.Obj), first)
	case timeline.StepEvent:
		data, ok = x.WatchEvent(gv, s.Ev.Type, b.r.rowOf(x, b.p.tl, &s.Ev.Obj), first)
	case timeline.StepInitialEnd, timeline.StepBookmark:
		// Without a recorded Table bookmark to shape it, the bookmark is
		// left out: kubectl, the only Table client, asks for none.
		data, ok = x.Bookmark(gv, strconv.FormatInt(s.RV, 10), s.Kind == timeline.StepInitialEnd, first)
		if !ok {
			return nil, nil
		}
	case timeline.StepExpired:
		return b.r.codec.ErrorEvent(s.Status, false), nil
	}
	if !ok {
		return nil, fmt.Errorf("kwrec replay: no recorded Table row for a watch step")
	}
	b.tableSent = true
	return data, nil
}

// data returns the bytes of f, read from the recording if need be.
// seq says f is the next of the unedited recorded frames [0, plan.recN).
func (b *body) data(f *outFrame, seq bool) ([]byte, error) {
	if f.rec == 0 {
		if f.step != nil || f.list != nil || f.obj != nil {
			return b.view(f)
		}
		return f.data, nil
	}
	b.fmu.Lock()
	if b.framesDone {
		b.fmu.Unlock()
		return nil, errClosedBody
	}
	if seq {
		if b.pf == nil {
			b.pf = startPrefetch(b.r.src, b.p.iv, b.p.recN)
		}
		pf := b.pf
		b.fmu.Unlock()
		return pf.take(b.ctx, b.closed)
	}
	defer b.fmu.Unlock()
	return b.frames.frame(b.p.iv.in, f.rec-1)
}

// hubFor returns the hub that makes the body's recorded events, attaching
// to it at the first one, first; nil once the frames are closed.
func (b *body) hubFor(first int) *hub {
	b.fmu.Lock()
	defer b.fmu.Unlock()
	if b.hub == nil && !b.framesDone {
		b.hub = b.r.fan.attach(b.r, b.p.tl, b.p.proto, first)
	}
	return b.hub
}

// closeFrames releases the readers of recorded frames and the hub.
func (b *body) closeFrames() {
	b.fmu.Lock()
	b.framesDone = true
	b.frames.close()
	if b.pf != nil {
		close(b.pf.stop)
		b.pf = nil
	}
	if b.hub != nil {
		b.r.fan.detach(b.hub)
		b.hub = nil
	}
	b.fmu.Unlock()
}

// encode returns data as it goes on the wire (gzip-compressed and flushed
// when the client asked for gzip).
func (b *body) encode(data []byte) []byte {
	if b.p.partial {
		pd, err := wire.PartialMetadata(data, b.p.shape, b.p.proto)
		if err != nil {
			b.err = fmt.Errorf("kwrec replay: the metadata-only form of a %s: %w", b.p.tl.Kind, err)
			return nil
		}
		data = pd
	}
	if b.gz == nil {
		return data
	}
	b.gzbuf.Reset()
	b.gz.Write(data)
	b.gz.Flush()
	return b.gzbuf.Bytes()
}

// finish waits for the recorded end and returns the body's final error.
func (b *body) finish() error {
	p := b.p
	end := p.end
	if b.cut {
		end = endEOF
	}
	switch end {
	case endEOF, endReset:
		if w := p.pace.wait(p.endGap); w > 0 && !b.cut {
			b.due = b.due.Add(w)
			if err := b.waitUntil(b.due, false, nil, nil); err != nil {
				return err
			}
		}
		b.r.finish(p.iv)
		if end == endReset {
			return &resetError{recorded: p.endErr}
		}
		return io.EOF
	}
	// endIdle: everything recorded is out; the stream now only waits.
	b.r.finish(p.iv)
	var exhausted <-chan struct{}
	if b.r.opts.ErrorWhenExhausted {
		exhausted = b.r.consumed
	}
	forever := p.timeout <= 0
	var wake <-chan struct{}
	if p.follow != nil && !b.cut {
		wake = p.tl.Changed()
		if p.follow.Pending() {
			return errWoken
		}
	}
	err := b.waitUntil(b.start.Add(p.pace.idle(p.timeout)), forever, exhausted, wake)
	if err == nil {
		return io.EOF
	}
	return err
}

// Close ends the body; a Read blocked in a wait returns at once.
func (b *body) Close() error {
	b.once.Do(func() {
		close(b.closed)
		b.closeFrames()
		b.r.finish(b.p.iv)
	})
	return nil
}
