package replay

import (
	"net/http"
	"time"

	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/pace"
)

// plan is a response as it will be served: head, frames and end. A body
// (body.go) serves it, one state at a time (state.go).
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
	pace    pace.Pacing
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
	table   tableForm // x nil: not in the Table form
	tableGV table.GroupVersion
	// cut, set by an edit anchored by verb with after or before=bookmark,
	// fails the stream once cutAfter frames are out, or just before the
	// bookmark that ends the initial events for cutAtBookmark (see
	// editSet.cut).
	cut      *timeline.Mark
	cutAfter int
}

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

// frame returns the plan's frame i (0-based), false past the last. i is
// the frame asked for last or the one after it: a timeline watch's steps
// are made as it reaches them.
func (p *plan) frame(i int) (outFrame, bool) {
	if i < p.recN {
		return recordedAt(p.iv, i, nextRecorded{}), true
	}
	if i -= p.recN; i < len(p.frames) {
		return p.frames[i], true
	}
	if i -= len(p.frames); p.steps == nil {
		return outFrame{}, false
	}
	s, ok := p.steps.At(i)
	if !ok {
		return outFrame{}, false
	}
	if s.Kind == timeline.StepMark {
		return outFrame{gap: s.Gap, rv: s.RV, payload: markFailure{s.Mark}}, true
	}
	return outFrame{gap: s.Gap, rv: s.RV, payload: watchStep{s}}, true
}

// ahead returns a copy of the plan's schedule that walks its frames from
// frame i on, for kube-apiserver's rule for a watch that cannot keep up
// (see pace.Lag).
func (p *plan) ahead(i int) pace.Schedule {
	c := *p
	if p.steps != nil {
		c.steps = p.steps.Clone()
	}
	return &schedule{p: &c, i: i}
}

type schedule struct {
	p *plan
	i int
}

func (s *schedule) Next() (time.Duration, bool) {
	f, ok := s.p.frame(s.i)
	if !ok {
		return 0, false
	}
	s.i++
	return s.p.pace.Wait(f.gap) + f.pause, true
}

// paced reports whether kube-apiserver's rule for a watch that cannot keep
// up applies to b: a watch on a schedule, the recording's.
func (b *body) paced() bool {
	return b.p.watch && b.p.pace.Paced() && b.s.settle <= 0
}

// keepUp applies the rule as frame k, due at b.due, is taken now.
func (b *body) keepUp(k int) {
	ahead := func() pace.Schedule { return b.p.ahead(k + 1) }
	budget := func() *pace.Budget { return b.s.fan.budget(b.p.tl) }
	if b.lag.KeepUp(k, b.s.clock.Since(b.due), ahead, budget) {
		b.s.fan.terminated.Add(1)
	}
}
