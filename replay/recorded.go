package replay

import (
	"sync"

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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// tableFeed is a recorded Table-form list or watch of a collection.
type tableFeed struct {
	in    *cassettes.Interaction
	watch bool
	rvs   []int64 // per watch frame: the resourceVersion of its row
}

func (f *tableFeed) observe(fr cassettes.Frame) {
	if f.watch {
		// The Table's resourceVersion comes first: its row's object's.
		f.rvs = append(f.rvs, wire.ScanRV(fr.Data))
	}
}

// tableSet is kubectl's Table form of a collection: the rows of its
// recorded Table-form lists and watches, read on first use. Parsing every
// row when the cassette is opened took a fifth of the open of a recording
// of 2,000 ConfigMaps and 1,200 changes, for a form only kubectl asks for.
type tableSet struct {
	feeds []*tableFeed
	once  sync.Once
	x     *table.Index
}

// index returns the set's rows, reading them from src the first time. A
// frame that cannot be read or indexed adds no row, as when it was read
// at open.
func (s *tableSet) index(src indexSource) *table.Index {
	s.once.Do(func() {
		s.x = new(table.Index)
		for _, f := range s.feeds {
			it, err := src.frames(f.in, 0)
			if err != nil {
				continue
			}
			var list []byte
			for {
				data, err := it.next()
				if err != nil {
					break
				}
				if f.watch {
					s.x.AddWatchEvent(data)
				} else {
					list = append(list, data...)
				}
			}
			it.close()
			if len(list) > 0 {
				s.x.AddList(list)
			}
		}
	})
	return s.x
}

// table returns the Table rows recorded for the collection at path, nil
// when none were.
func (r *Replayer) table(path string) *table.Index {
	if s := r.tables[path]; s != nil {
		return s.index(r.src)
	}
	return nil
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

// add makes the replay state of in, whose frames are fr, and files a 200 list or watch under its
// collection's timeline. Frames are observed separately.
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
	t := b.timelines[u.Path]
	if t == nil {
		t = timeline.New(u.Path, rp)
		b.timelines[u.Path] = t
		b.tlOrder = append(b.tlOrder, t)
	}
	iv.tl = t
	iv.stream = t.Stream(in, fr, q, enc)
	if rp.Namespace != "" {
		// A namespace's list or watch also feeds the resource's timeline of
		// all namespaces, used when the recording holds none of its own.
		all := rp
		all.Namespace = ""
		path := all.Collection()
		d := b.derived[path]
		if d == nil {
			d = timeline.New(path, all)
			b.derived[path] = d
		}
		iv.also = d.Stream(in, fr, q, enc)
		iv.also.Scope(rp.Namespace)
	}
	return iv
}

// recordedPlan builds the plan for a claimed interaction, edits applied.
func (r *Replayer) recordedPlan(iv *ivState, req *http.Request) *plan {
	in := iv.in
	for _, e := range iv.edits {
		if e.mark == nil {
			e.fire(fmt.Sprintf("interaction %d", in.ID))
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
	var last time.Duration
	if n := iv.frames.Len(); n > 0 {
		last = iv.frames.At(n - 1)
	}
	// The recorded end.
	p.end = endIdle
	if in.End != nil {
		p.endGap = in.End.At - last
		switch in.End.Reason {
		case cassettes.EndEOF:
			p.end = endEOF
		case cassettes.EndReset:
			p.end = endReset
		case cassettes.EndTimeout:
			if p.timeout == 0 {
				p.timeout = in.End.At
			}
		}
	}
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
	// Without edits the recorded frames are served as they are, described
	// on the fly (see plan.frame) rather than listed here.
	p.recN = nrec
	if reframe {
		p.frames, p.recN = editedFrames(iv, nrec, marks), 0
	}
	return p
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
		if e.mark != nil {
			out = append(out, placedMark{before: e.After + 1, mark: e.mark})
			own[e.mark] = true
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
			frames = append(frames, src{orig: i + 1, f: recordedAt(iv, i, false)})
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

// recordedAt describes frame i (0-based) of iv as served unedited; seq
// says it is served in order with the frames before it.
func recordedAt(iv *ivState, i int, seq bool) outFrame {
	gap := iv.frames.At(i)
	if i > 0 {
		gap -= iv.frames.At(i - 1)
	}
	return outFrame{gap: gap, rv: iv.rv(i), payload: recordedBytes{i: i, seq: seq}}
}

// errorPlan answers with the HTTP error of edit e, in front of iv (nil for
// an edit anchored by resource).
func (r *Replayer) errorPlan(iv *ivState, e Edit) *plan {
	h := http.Header{"Content-Type": {wire.MediaJSON}}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	st := wire.Status(e.Status, metav1.StatusReason(e.Reason), fmt.Sprintf("kwrec: injected by edit %s", e), e.RetryAfter)
	var lat time.Duration
	if iv != nil && iv.in.Response != nil {
		lat = iv.in.Response.Latency
	}
	return &plan{status: e.Status, header: h, latency: lat, pace: r.pacing(iv), end: endEOF,
		frames: []outFrame{dataFrame(wire.StatusBody(st, false))}}
}

// editStatus is the Status of a watch-error edit's ERROR event.
func editStatus(e Edit) *metav1.Status {
	msg := fmt.Sprintf("kwrec: injected by edit %s", e)
	if e.Status == http.StatusGone {
		// The watch cache's wording for a compacted version.
		msg = "too old resource version (" + msg + ")"
	}
	return wire.Status(e.Status, metav1.StatusReason(e.Reason), msg, 0)
}
