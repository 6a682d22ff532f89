package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// ivState is the replay state of one recorded interaction.
type ivState struct {
	in       *cassettes.Interaction
	frames   timeline.Frames // in's frames: their count and times
	errs     []*editState    // pending error edits, fired on successive attempts
	edits    []*editState    // stream edits (warp, pause, drop, dup, and cuts)
	claimed  bool
	finished bool
	// tl and stream are set for a 200 list or watch of a collection: the
	// interaction feeds the timeline, and its frames move it on when served.
	tl     *timeline.Timeline
	stream *timeline.Stream
	// also feeds the resource's all-namespaces timeline (see add).
	also *timeline.Stream
	// table is set for a 200 list or watch recorded in kubectl's Table
	// form: its rows feed the collection's table index, and tl is set once
	// every interaction is read (the Table form may come first).
	table *tableFeed
}

// observe takes frame i of iv as the recording is read.
func (iv *ivState) observe(i int, f cassettes.Frame) {
	switch {
	case iv.stream != nil:
		iv.stream.Observe(i, f)
		if iv.also != nil {
			iv.also.Observe(i, f)
		}
	case iv.table != nil:
		iv.table.observe(f)
	}
}

// queryOf and pathOf split a recorded request URL (a URL that does not
// parse has no query and no path).
func queryOf(raw string) url.Values {
	u, err := url.Parse(raw)
	if err != nil {
		return url.Values{}
	}
	return u.Query()
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}

// rv returns the resourceVersion serving frame i moves the timeline to.
func (iv *ivState) rv(i int) int64 {
	switch {
	case iv.stream != nil:
		return iv.stream.RV(i)
	case iv.table != nil && i < len(iv.table.rvs):
		return iv.table.rvs[i]
	}
	return 0
}

// encodingOf returns the timeline encoding of a response, false for one
// a timeline cannot read.
func encodingOf(resp *cassettes.Response) (timeline.Encoding, bool) {
	switch wire.MediaType(resp.Header.Get("Content-Type")) {
	case wire.MediaJSON:
		return timeline.JSON, true
	case wire.MediaProtobuf:
		return timeline.Protobuf, true
	}
	return 0, false
}

// add makes the replay state of in, whose frames are fr, and files a 200
// list or watch under its collection's timeline (or, in kubectl's Table
// form, its table set). Frames are observed separately.
func (b *builder) add(in *cassettes.Interaction, fr timeline.Frames) *ivState {
	iv := &ivState{in: in, frames: fr}
	if !strings.EqualFold(in.Request.Method, http.MethodGet) || in.Response == nil || in.Response.Status != http.StatusOK {
		return iv
	}
	enc, ok := encodingOf(in.Response)
	if !ok {
		return iv
	}
	u, err := url.Parse(in.Request.URL)
	if err != nil {
		return iv
	}
	q := u.Query()
	rp, ok := apipath.Parse(u.Path)
	if !ok || rp.Name != "" {
		return iv
	}
	if _, ok := table.Wants(in.Request.Header.Get("Accept")); ok && enc == timeline.JSON {
		set := b.tables[u.Path]
		if set == nil {
			set = &tableSet{}
			b.tables[u.Path] = set
		}
		iv.table = &tableFeed{in: in, watch: wire.IsWatch(q)}
		set.feeds = append(set.feeds, iv.table)
		return iv
	}
	b.feed(iv, u.Path, rp, q, enc)
	return iv
}

// feed makes iv, a list or watch of the collection rp at path, feed its
// timeline.
func (b *builder) feed(iv *ivState, path string, rp apipath.Path, q url.Values, enc timeline.Encoding) {
	t := b.timelines[path]
	if t == nil {
		t = timeline.New(path, rp)
		b.timelines[path] = t
		b.tlOrder = append(b.tlOrder, t)
	}
	iv.tl = t
	iv.stream = t.Stream(iv.in, iv.frames, q, enc)
	if rp.Namespace == "" {
		return
	}
	// A namespace's list or watch also feeds the resource's timeline of
	// all namespaces, used when the recording holds none of its own.
	all := rp
	all.Namespace = ""
	d := b.derived[all.Collection()]
	if d == nil {
		d = timeline.New(all.Collection(), all)
		b.derived[all.Collection()] = d
	}
	iv.also = d.Stream(iv.in, iv.frames, q, enc)
	iv.also.Scope(rp.Namespace)
}

// recordedPlan builds the plan for a claimed interaction, edits applied.
func (r *Replayer) recordedPlan(iv *ivState, req *http.Request) *plan {
	in := iv.in
	for _, e := range iv.edits {
		if e.Mark == nil {
			e.Fire(fmt.Sprintf("interaction %d", in.ID))
		}
	}
	p := &plan{iv: iv, pace: r.pacing(iv), timeout: wire.TimeoutSeconds(req.URL.Query()), tl: iv.tl,
		watch: wire.IsWatch(req.URL.Query())}
	if in.End != nil {
		p.endErr = in.End.Error
	}
	if in.Response == nil {
		p.end = endIdle
		if in.End != nil {
			if in.End.Reason == cassettes.EndReset {
				p.end = endReset
			}
			p.latency = in.End.At
		}
		return p
	}
	p.status, p.header, p.latency = in.Response.Status, in.Response.Header, in.Response.Latency
	p.proto = wire.MediaType(p.header.Get("Content-Type")) == wire.MediaProtobuf
	recordedEnd(p, iv)
	r.recordedFrames(p, iv)
	return p
}

// recordedEnd sets how p ends as iv's recording did.
func recordedEnd(p *plan, iv *ivState) {
	p.end = endIdle
	if iv.in.End == nil {
		return
	}
	var last time.Duration
	if n := iv.frames.Len(); n > 0 {
		last = iv.frames.At(n - 1)
	}
	p.endGap = iv.in.End.At - last
	switch iv.in.End.Reason {
	case cassettes.EndEOF:
		p.end = endEOF
	case cassettes.EndReset:
		p.end = endReset
	case cassettes.EndTimeout:
		if p.timeout == 0 {
			p.timeout = iv.in.End.At
		}
	}
}

// recordedFrames sets the frames p serves of iv: as recorded (described on
// the fly, see plan.frame, rather than listed here), or with its frame
// edits and marks applied.
func (r *Replayer) recordedFrames(p *plan, iv *ivState) {
	nrec := iv.frames.Len()
	if iv.stream != nil && iv.stream.ErrorAt() >= 0 {
		// The API server ends a watch after an ERROR event.
		nrec = iv.stream.ErrorAt() + 1
		p.end, p.endGap = endEOF, 0
	}
	marks := r.marksOn(iv)
	reframe := len(marks) > 0
	for _, e := range iv.edits {
		switch e.Kind {
		case EditPause, EditDrop, EditDup:
			reframe = true
		}
	}
	p.recN = nrec
	if reframe {
		p.frames, p.recN = editedFrames(iv, nrec, marks), 0
	}
}

// placedMark is a mark on a recorded stream: before recorded frame
// before (1-based; past the last frame for the end).
type placedMark struct {
	before int
	mark   *timeline.Mark
}

// marksOn returns the marks a recorded watch crosses: its own cut edits
// (request=N,after=K) after their frame, and the unfired edit marks of its
// timeline placed by resourceVersion.
func (r *Replayer) marksOn(iv *ivState) []placedMark {
	var out []placedMark
	own := map[*timeline.Mark]bool{}
	for _, e := range iv.edits {
		if e.Mark != nil {
			out = append(out, placedMark{before: e.After + 1, mark: e.Mark})
			own[e.Mark] = true
		}
	}
	if iv.tl == nil {
		return out
	}
	q := queryOf(iv.in.Request.URL)
	if !wire.IsWatch(q) {
		return out
	}
	from, _ := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	for _, m := range iv.tl.Marks() {
		// Only edits: a recorded watch replays its own recorded marks
		// and no other's. A mark past the last recorded event is never
		// crossed.
		if !m.Once || own[m] || m.Fired() > 0 || m.RV < from || m.RV > iv.tl.Last() {
			continue
		}
		i := 0
		for i < iv.frames.Len() && iv.rv(i) <= m.RV {
			i++
		}
		out = append(out, placedMark{before: i + 1, mark: m})
	}
	return out
}

// editedFrames lists the first n recorded frames of iv with its pause,
// drop and dup edits applied and its marks in place.
func editedFrames(iv *ivState, n int, marks []placedMark) []outFrame {
	type src struct {
		orig int // 1-based recorded frame number
		f    outFrame
	}
	frames := make([]src, 0, n+len(marks))
	for i := 0; i <= n; i++ {
		for _, m := range marks {
			if m.before == i+1 {
				frames = append(frames, src{orig: -1, f: outFrame{payload: markFailure{m.mark}}})
			}
		}
		if i < n {
			frames = append(frames, src{orig: i + 1, f: recordedAt(iv, i, recordedBytes{i})})
		}
	}
	for _, e := range iv.edits {
		i := 0
		for i < len(frames) && frames[i].orig != e.Frame {
			i++
		}
		if i == len(frames) {
			continue
		}
		switch e.Kind {
		case EditPause:
			frames[i].f.pause += e.For
		case EditDrop:
			frames = append(frames[:i], frames[i+1:]...)
		case EditDup:
			d := frames[i]
			d.f.gap, d.f.pause = 0, 0
			frames = append(frames[:i+1], append([]src{d}, frames[i+1:]...)...)
		}
	}
	out := make([]outFrame, len(frames))
	for i, s := range frames {
		out[i] = s.f
	}
	return out
}

// recordedAt describes frame i (0-based) of iv as served unedited, its
// bytes what pl makes.
func recordedAt(iv *ivState, i int, pl payload) outFrame {
	gap := iv.frames.At(i)
	if i > 0 {
		gap -= iv.frames.At(i - 1)
	}
	return outFrame{gap: gap, rv: iv.rv(i), payload: pl}
}
