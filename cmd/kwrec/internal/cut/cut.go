package cut

import (
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/timepoint"
	"github.com/kwrec/kwrec/internal/wire"
)

// Result is a cut, ready to write.
type Result struct {
	// Header is the cut's header, edits carried.
	Header cassettes.Header
	// Dropped are the header edits whose point falls outside the window.
	Dropped []string
	// RV is the resourceVersion of the state the cut starts with, 0 when
	// it starts at the recording's start.
	RV    int64
	head  []cassettes.Entry // the lines the cut starts with: the state, what is carried
	lists map[int]bool      // the lists of the state, by interaction number
	win   *window           // the window's lines, read again from the recording; nil for none
	tail  []cassettes.Entry // the ends of what is open at the window's end
}

// window is the lines of a cut after its head: those of rec in w, of
// the interactions that start in it and of those kept says go on in it,
// retimed by t. t and kept are as the head leaves them; each read of the
// window starts from a copy.
type window struct {
	rec  *Recording
	w    span
	t    retimer
	kept map[int]bool
}

// Cut returns the window of rec from from to to (see the package doc):
// the start moved to from, interactions open at to ended there as
// stopped.
func Cut(rec *Recording, from, to timepoint.Point) (*Result, error) {
	w, err := rec.window(from, to)
	if err != nil {
		return nil, err
	}
	return rec.cut(w, true)
}

// Rebase returns the part file of rec (one of the files rec was read
// from) as a rebased part: the state at its start, then its lines, in
// the recording's clock and numbers, what goes on in the next part left
// open (see the package doc).
func Rebase(rec *Recording, file string) (*Result, error) {
	w := span{from: -1}
	for i := range rec.lines.Len() {
		if rec.fileOf(i) != file {
			continue
		}
		if w.from < 0 {
			w.from, w.t1 = i, rec.lines.At(max(i-1, 0)).mono
		}
		w.to, w.t2 = i+1, rec.lines.At(i).mono
	}
	if w.from < 0 {
		return nil, fmt.Errorf("%s: not a part of the recording read, or holds no line", file)
	}
	if w.from == 0 {
		w.t1 = 0
	}
	h, err := cassettes.ReadHeader(file)
	if err != nil {
		return nil, err
	}
	res, err := rec.cut(w, false)
	if err != nil {
		return nil, err
	}
	res.Header.Part, res.Header.Rebased = h.Part, true
	return res, nil
}

// Base returns the state at the start of the part file of rec (one of
// the files rec was read from) as a rebased part of its own, numbered
// one before file: the lines [Rebase] starts file with, without file's.
// Written over the part before file, it supersedes the parts before it,
// and file and the parts after it read on from it unchanged: kwrec
// record --keep writes the state so, which costs the state's bytes and
// not a part's more.
func Base(rec *Recording, file string) (*Result, error) {
	res, err := Rebase(rec, file)
	if err != nil {
		return nil, err
	}
	if res.Header.Part < 2 {
		return nil, fmt.Errorf("%s: part %d: no part before it to hold the state at its start", file, res.Header.Part)
	}
	res.win, res.tail = nil, nil
	res.Header.Part--
	return res, nil
}

// carried is an interaction before the window that the cut starts with:
// a list of the state, an answer carried over, or a watch that goes on.
type carried struct {
	id   int
	at   time.Duration
	in   *cassettes.Interaction // what to write: request, response, frames, end
	from *iv                    // the interaction that goes on in the window, else nil
	list bool                   // a list of the state
	of   *iv                    // the interaction whose frames in holds, read back
	n    int                    // how many of them
}

// cut makes the window w of r; shift moves its start to w.t1 and ends
// what is open at w.to.
func (r *Recording) cut(w span, shift bool) (*Result, error) {
	res := &Result{Header: r.Header, lists: map[int]bool{}}
	res.Header.Part, res.Header.Rebased = 0, false
	rv1 := r.maxRV(w.from)
	res.RV = rv1
	head, err := r.before(w, rv1)
	if err != nil {
		return nil, err
	}
	var off time.Duration
	if shift {
		off = w.t1
		res.Header.RecordedAt = r.Header.RecordedAt.Add(off)
	}
	t := retimer{off: off, at: map[int][2]time.Duration{}, body: map[int]time.Duration{}, lat: map[int]time.Duration{}}
	kept := map[int]bool{} // the interactions whose lines in the window the cut holds
	res.addHead(&t, head, kept)
	res.win = &window{rec: r, w: w, t: t, kept: kept}
	if shift {
		// What is open at the window's end, from what the lines are
		// (their bytes are not needed).
		t, kept := res.win.start()
		for i := w.from; i < w.to; i++ {
			res.win.step(&t, kept, r.entryOf(i))
		}
		res.endOpen(&t, w.t2, off)
	}
	res.Header.Edits, res.Dropped = r.carryEdits(w, rv1, off, !shift, res)
	return res, nil
}

// maxRV returns the largest resourceVersion of r's first n lines, 0 for
// none.
func (r *Recording) maxRV(n int) int64 {
	var rv int64
	for i := range n {
		rv = max(rv, r.rvOf(i))
	}
	return rv
}

// addHead adds the lines of head, what the cut starts with, to res,
// retimed by t: an answer done before the point as it was answered, at
// the start; an interaction that goes on in the window with its times
// moved. kept records which of them go on in the window.
func (res *Result) addHead(t *retimer, head []carried, kept map[int]bool) {
	for _, c := range head {
		kept[c.id] = c.from != nil // what goes on in the window
		res.lists[c.id] = c.list
		res.head = append(res.head, t.request(c.id, c.at, c.in.Request))
		if c.in.Response == nil {
			continue
		}
		if c.from == nil {
			// Done before the point: as it was answered, at the start.
			res.head = append(res.head, cassettes.Entry{ID: c.id, Response: c.in.Response})
			for _, f := range c.in.Frames {
				res.head = append(res.head, cassettes.Entry{ID: c.id, Frame: &f})
			}
		} else {
			res.head = append(res.head, t.response(c.id, *c.in.Response))
			for _, f := range c.in.Frames {
				res.head = append(res.head, t.frame(c.id, f))
			}
		}
		if c.in.End != nil {
			res.head = append(res.head, cassettes.Entry{ID: c.id, End: c.in.End})
			delete(t.at, c.id)
		}
	}
}

// start returns copies of the retimer and the interactions kept as the
// head leaves them, to read the window with.
func (win *window) start() (retimer, map[int]bool) {
	t := win.t
	t.at, t.lat, t.body = maps.Clone(t.at), maps.Clone(t.lat), maps.Clone(t.body)
	return t, maps.Clone(win.kept)
}

// step returns line e of the window as the cut holds it, retimed by t,
// false for a line of an interaction the cut drops: those of the
// interactions that start in the window, and of those kept says go on
// in it.
func (win *window) step(t *retimer, kept map[int]bool, e cassettes.Entry) (cassettes.Entry, bool) {
	switch {
	case e.Request != nil:
		kept[e.ID] = true
		e = t.request(e.ID, e.At, *e.Request)
	case !kept[e.ID]:
		return e, false
	case e.Response != nil:
		e = t.response(e.ID, *e.Response)
	case e.Frame != nil:
		e = t.frame(e.ID, *e.Frame)
	case e.End != nil:
		end := *e.End
		end.At = max(end.At-t.body[e.ID], 0)
		e.End = &end
		delete(t.at, e.ID)
	}
	return e, true
}

// each calls fn with each line of the window in order, read again from
// the recording, and stops at fn's first error.
func (win *window) each(fn func(cassettes.Entry) error) error {
	t, kept := win.start()
	return win.rec.reread(win.w.to, func(i int, e cassettes.Entry) error {
		if i < win.w.from {
			return nil
		}
		if e, ok := win.step(&t, kept, e); ok {
			return fn(e)
		}
		return nil
	})
}

// entryOf returns line i of r as it was read, a frame without its bytes.
func (r *Recording) entryOf(i int) cassettes.Entry {
	l := r.lines.At(i)
	v := r.ivOf(l)
	e := cassettes.Entry{ID: v.in.ID}
	switch l.kind() {
	case lineRequest:
		e.At, e.Request = v.in.At, &v.in.Request
	case lineResponse:
		e.Response = v.in.Response
	case lineFrame:
		e.Frame = &cassettes.Frame{At: *v.ats.At(int(l.fr))}
	case lineEnd:
		e.End = v.in.End
	}
	return e
}

// endOpen ends as stopped, in ID order, the interactions t holds open,
// at the window's end t2 moved off earlier.
func (res *Result) endOpen(t *retimer, t2, off time.Duration) {
	ids := make([]int, 0, len(t.at))
	for id := range t.at {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		// From the response, or the request when there is none.
		base := t.at[id][1] + t.lat[id]
		res.tail = append(res.tail, cassettes.Entry{ID: id, End: &cassettes.End{At: max(t2-off-base, 0), Reason: cassettes.EndStopped}})
	}
}

// retimer moves a cut's lines off earlier: a request before the new
// start to it, a response too, the frames after it by as much as the
// response moved.
type retimer struct {
	off  time.Duration
	at   map[int][2]time.Duration // open interactions: their request's offset, before and after
	lat  map[int]time.Duration    // their latency, after
	body map[int]time.Duration    // how much earlier their frames and end are
}

func (t *retimer) request(id int, at time.Duration, r cassettes.Request) cassettes.Entry {
	now := max(at-t.off, 0)
	t.at[id] = [2]time.Duration{at, now}
	return cassettes.Entry{ID: id, At: now, Request: &r}
}

func (t *retimer) response(id int, r cassettes.Response) cassettes.Entry {
	at := t.at[id]
	base := at[0] + r.Latency
	r.Latency = max(base-t.off, 0) - at[1]
	t.body[id] = max(t.off-base, 0)
	t.lat[id] = r.Latency
	return cassettes.Entry{ID: id, Response: &r}
}

func (t *retimer) frame(id int, f cassettes.Frame) cassettes.Entry {
	f.At = max(f.At-t.body[id], 0)
	return cassettes.Entry{ID: id, Frame: &f}
}

// before returns what the cut starts with, by interaction number: the
// answers carried over, the watches that go on, and a list of each
// collection's state at rv1, each in the place of an interaction
// dropped.
func (r *Recording) before(w span, rv1 int64) ([]carried, error) {
	if w.from == 0 {
		return nil, nil
	}
	p := r.sortBefore(w, rv1)
	if err := r.readBack(p, rv1); err != nil {
		return nil, err
	}
	// kubectl's Table form first, each in its own list's place: kubectl
	// get prints the state with the columns the server printed.
	for _, t := range r.tlList {
		tmpl := p.lastTable[t.Path]
		if tmpl == nil || t.Broken() != "" || t.Oldest() > rv1 {
			continue
		}
		if in, ok := r.tableListOf(t, tmpl, rv1, r.Header.RecordedAt.Add(w.t1), p.back); ok {
			p.taken[tmpl] = true
			p.head = append(p.head, carried{id: tmpl.in.ID, at: tmpl.in.At, in: in, list: true})
		}
	}
	// Each list in its own collection's place first, so that no
	// collection takes another's place for want of its own.
	var later []*timeline.Timeline
	for _, t := range r.tlList {
		placed, err := r.placeList(p, t, w, rv1, false)
		if err != nil {
			return nil, err
		}
		if !placed {
			later = append(later, t)
		}
	}
	for _, t := range later {
		if _, err := r.placeList(p, t, w, rv1, true); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(p.head, func(a, b carried) int { return a.id - b.id })
	return p.head, nil
}

// prefix is the interactions before a cut's point, sorted by what the
// cut does with them.
type prefix struct {
	head      []carried                  // carried: answers, and what goes on in the window
	free      []*iv                      // dropped, by ID: places for the lists of the state
	taken     map[*iv]bool               // carried, or a place taken
	lastOf    map[*timeline.Timeline]*iv // each collection's last list, else watch
	lastTable map[string]*iv             // each collection's last list in kubectl's Table form
	back      *readBack                  // the bytes the cut reads back
}

// readBack reads back the bytes the cut of p writes: the frames of what
// it carries, then those of the objects of every collection's state at
// rv1 and the rows of its Table form, for the collections with a list
// before the point to take the place of.
func (r *Recording) readBack(p *prefix, rv1 int64) error {
	b := newReadBack()
	for _, c := range p.head {
		b.wantFrames(c.id, c.n)
	}
	for _, t := range r.tlList {
		if t.Broken() != "" || t.Oldest() > rv1 || p.lastOf[t] == nil && p.lastTable[t.Path] == nil {
			continue
		}
		b.wantState(t, rv1)
		if p.lastTable[t.Path] != nil {
			b.wantTable(t.Path)
		}
	}
	if err := b.read(r); err != nil {
		return err
	}
	for i := range p.head {
		if c := &p.head[i]; c.n > 0 {
			c.in.Frames = b.framesOf(c.of, c.n)
		}
	}
	p.back = b
	return nil
}

// sortBefore sorts the interactions before w's point.
func (r *Recording) sortBefore(w span, rv1 int64) *prefix {
	p := &prefix{taken: map[*iv]bool{}, lastOf: map[*timeline.Timeline]*iv{}, lastTable: map[string]*iv{}}
	lastAnswer := map[string]*iv{} // carried answers by request
	before, _ := r.frameCounts(w)
	for _, v := range r.order {
		if v.req >= w.from {
			break
		}
		if v.end < 0 || v.end >= w.from {
			// Open at the point: it goes on in the window.
			c := carried{id: v.in.ID, at: v.in.At, in: r.soFar(v, w.from), from: v, of: v, n: before[v.in.ID]}
			if (v.stream != nil || v.table) && v.watch {
				goesOn(c.in, rv1)
				c.n = 0
			}
			p.head = append(p.head, c)
			p.taken[v] = true
			if v.stream != nil && (p.lastOf[v.tl] == nil || p.lastOf[v.tl].watch) {
				p.lastOf[v.tl] = v
			}
			continue
		}
		switch {
		case v.stream != nil && !v.watch:
			p.lastOf[v.tl] = v
		case v.table && !v.watch:
			p.lastTable[v.path] = v
		case answer(v):
			k := v.in.Request.Method + " " + v.in.Request.URL + " " + v.in.Request.Header.Get("Accept")
			if old := lastAnswer[k]; old != nil {
				p.free = append(p.free, old)
			}
			lastAnswer[k] = v
			continue
		}
		p.free = append(p.free, v)
	}
	for _, v := range lastAnswer {
		in := *v.in
		p.head = append(p.head, carried{id: v.in.ID, at: v.in.At, in: &in, of: v, n: v.Len()})
	}
	slices.SortFunc(p.free, func(a, b *iv) int { return a.in.ID - b.in.ID })
	return p
}

// placeList adds the list of t's state at rv1 to p.head, in the place
// of t's last list before the point; when that place is taken, and
// elsewhere is true, in the place of the first interaction dropped, else
// as the initial events of the watch that goes on. It reports whether
// t's state is placed (or has none to place).
func (r *Recording) placeList(p *prefix, t *timeline.Timeline, w span, rv1 int64, elsewhere bool) (bool, error) {
	tmpl := p.lastOf[t]
	if tmpl == nil || t.Broken() != "" || t.Oldest() > rv1 {
		return true, nil // not recorded before the point, or its state not known at rv1
	}
	slot := tmpl
	if p.taken[tmpl] {
		if !elsewhere {
			return false, nil
		}
		slot = nil
		for _, f := range p.free {
			if !p.taken[f] {
				slot = f
				break
			}
		}
		switch {
		case slot != nil:
		case !tmpl.watch:
			return true, nil // the list in progress at the point holds the state
		case r.streamInitial(p, tmpl, w.t1, rv1) == nil:
			return true, nil // the watch that goes on sends the state first
		default:
			return false, fmt.Errorf("no interaction number before the window is free for the list of %s at resourceVersion %d: cut at another point", t.Path, rv1)
		}
	}
	p.taken[slot] = true
	in, err := listOf(t, tmpl, rv1, p.back.got)
	if err != nil {
		return false, err
	}
	in.ID, in.At = slot.in.ID, slot.in.At
	p.head = append(p.head, carried{id: slot.in.ID, at: slot.in.At, in: in, list: true})
	return true, nil
}

// answer reports whether v is an answer a cut carries over: a GET
// answered 200 of a path that names no collection or object (discovery,
// /version, OpenAPI).
func answer(v *iv) bool {
	in := v.in
	if !strings.EqualFold(in.Request.Method, http.MethodGet) || in.Response == nil || in.Response.Status != http.StatusOK || in.End == nil {
		return false
	}
	u, err := url.Parse(in.Request.URL)
	if err != nil {
		return false
	}
	_, ok := apipath.Parse(u.Path)
	return !ok
}

// soFar returns v as its lines before line from hold it, its frames
// left to read back.
func (r *Recording) soFar(v *iv, from int) *cassettes.Interaction {
	in := *v.in
	in.Frames, in.End = nil, nil
	if v.resp < 0 || v.resp >= from {
		in.Response = nil
	}
	return &in
}

// goesOn makes watch in, as recorded up to the window, start from rv1:
// its frames before the window are in the state.
func goesOn(in *cassettes.Interaction, rv1 int64) {
	in.Frames = nil
	u, err := url.Parse(in.Request.URL)
	if err == nil {
		q := u.Query()
		if from, _ := strconv.ParseInt(q.Get("resourceVersion"), 10, 64); from < rv1 {
			q.Set("resourceVersion", strconv.FormatInt(rv1, 10))
		}
		q.Del("sendInitialEvents")
		q.Del("resourceVersionMatch")
		u.RawQuery = q.Encode()
		in.Request.URL = u.String()
	}
}

// streamInitial makes watch tmpl, carried in head, a streaming list
// (sendInitialEvents) whose initial events are the state at rv1, sent at
// the point t1: the place of a list of its collection, when no
// interaction before the point is free to take one.
func (r *Recording) streamInitial(p *prefix, tmpl *iv, t1 time.Duration, rv1 int64) error {
	var c *carried
	for i := range p.head {
		if p.head[i].from == tmpl {
			c = &p.head[i]
		}
	}
	if c == nil || c.in.Response == nil {
		return errors.New("no watch goes on")
	}
	u, err := url.Parse(c.in.Request.URL)
	if err != nil {
		return err
	}
	q := u.Query()
	l, raws, err := stateOf(tmpl.tl, q, rv1, p.back.got)
	if err != nil {
		return err
	}
	codec, t := timeline.Codec{}, tmpl.tl
	at := max(t1-c.in.At-c.in.Response.Latency, 0)
	for i := range l.Items {
		b, err := codec.WatchEvent(t, "ADDED", &l.Items[i], raws[i], tmpl.proto)
		if err != nil {
			return err
		}
		c.in.Frames = append(c.in.Frames, cassettes.Frame{At: at, Data: b})
	}
	c.in.Frames = append(c.in.Frames, cassettes.Frame{At: at, Data: codec.Bookmark(t, rv1, true, tmpl.proto)})
	q.Set("sendInitialEvents", "true")
	q.Set("resourceVersionMatch", "NotOlderThan")
	q.Set("allowWatchBookmarks", "true")
	u.RawQuery = q.Encode()
	c.in.Request.URL = u.String()
	return nil
}

// tableListOf returns the list of t at rv1 in kubectl's Table form, as
// the recorded Table-form list tmpl asked for it, its rows those recorded
// (in the Table-form lists and watches of t's path) of the versions the
// state holds, or made from the objects as of now when not recorded;
// false when a row can be neither.
func (r *Recording) tableListOf(t *timeline.Timeline, tmpl *iv, rv1 int64, now time.Time, b *readBack) (*cassettes.Interaction, bool) {
	x := &b.tables[t.Path].x
	u, err := url.Parse(tmpl.in.Request.URL)
	if err != nil {
		return nil, false
	}
	q := u.Query()
	q.Del("continue")
	u.RawQuery = q.Encode()
	l, raws, err := stateOf(t, q, rv1, b.got)
	if err != nil {
		return nil, false
	}
	vs := make([]table.Version, len(l.Items))
	for i, o := range l.Items {
		vs[i] = table.Version{Key: o.Key, RV: strconv.FormatInt(o.RV, 10)}
		// A version whose row is in a part not read yet (the Table-form
		// watch's event comes after the JSON one): printed as the
		// server's printer prints it.
		if !x.Has(vs[i]) && !x.AddObject(vs[i], raws[i], now) {
			return nil, false
		}
	}
	gv, _ := table.Wants(tmpl.in.Request.Header.Get("Accept"))
	body, ok := x.List(gv, strconv.FormatInt(rv1, 10), "", nil, vs)
	if !ok {
		return nil, false
	}
	if body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	return &cassettes.Interaction{
		Request:  cassettes.Request{Method: http.MethodGet, URL: u.String(), Header: tmpl.in.Request.Header.Clone()},
		Response: &cassettes.Response{Status: http.StatusOK, Header: tmpl.in.Response.Header.Clone()},
		Frames:   []cassettes.Frame{{Data: body}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}, true
}

// stateOf returns the objects of t at rv1 a request with query q selects,
// and their recorded bytes, read back in got.
func stateOf(t *timeline.Timeline, q url.Values, rv1 int64, got objBytes) (timeline.List, [][]byte, error) {
	sel, err := t.Selector(q, "", nil)
	if err != nil {
		return timeline.List{}, nil, fmt.Errorf("the state of %s: %v", t.Path, err)
	}
	at := min(rv1, t.Newest())
	l, err := t.List(stateQuery(at), sel)
	if err != nil {
		return l, nil, fmt.Errorf("the state of %s at resourceVersion %d: %v", t.Path, at, err)
	}
	l.RV = rv1
	raws := make([][]byte, len(l.Items))
	for i, o := range l.Items {
		if raws[i], err = got.of(t, o.Ref); err != nil {
			return l, nil, err
		}
	}
	return l, raws, nil
}

// stateQuery is the query of a list of a timeline's objects at rv.
func stateQuery(rv int64) url.Values {
	return url.Values{"resourceVersion": {strconv.FormatInt(rv, 10)}, "resourceVersionMatch": {"Exact"}}
}

// listOf returns the list of t at rv1 as the recorded list (or watch)
// tmpl asked for it: its path and query (selectors, limit; the list
// whole, in one page), its Accept, its encoding.
func listOf(t *timeline.Timeline, tmpl *iv, rv1 int64, got objBytes) (*cassettes.Interaction, error) {
	u, err := url.Parse(tmpl.in.Request.URL)
	if err != nil {
		return nil, err
	}
	q := u.Query()
	drop := []string{"continue"} // the list whole, in one page
	if tmpl.watch {
		drop = append(drop, "watch", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "allowWatchBookmarks", "timeoutSeconds")
	}
	for _, k := range drop {
		q.Del(k)
	}
	u.RawQuery = q.Encode()
	l, raws, err := stateOf(t, q, rv1, got)
	if err != nil {
		return nil, err
	}
	body, err := timeline.Codec{}.List(t, l, raws, tmpl.proto)
	if err != nil {
		return nil, fmt.Errorf("the list of %s: %v", t.Path, err)
	}
	ct := wire.MediaJSON
	if tmpl.proto {
		ct = wire.MediaProtobuf
	} else if body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	resp := &cassettes.Response{Status: http.StatusOK, Header: tmpl.in.Response.Header.Clone()}
	resp.Header.Set("Content-Type", ct)
	return &cassettes.Interaction{
		Request:  cassettes.Request{Method: http.MethodGet, URL: u.String(), Header: tmpl.in.Request.Header.Clone()},
		Response: resp,
		Frames:   []cassettes.Frame{{Data: body}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}, nil
}

// each calls fn with each line of the cut in order, the window's read
// again from the recording, and stops at fn's first error.
func (res *Result) each(fn func(cassettes.Entry) error) error {
	for _, e := range res.head {
		if err := fn(e); err != nil {
			return err
		}
	}
	if res.win != nil {
		if err := res.win.each(fn); err != nil {
			return err
		}
	}
	for _, e := range res.tail {
		if err := fn(e); err != nil {
			return err
		}
	}
	return nil
}

// Write writes the cut to out as opts say (the Writer's numbering kept),
// reading the window's lines again from the recording's files.
func (res *Result) Write(out io.Writer, opts cassettes.WriterOptions) error {
	opts.FlushInterval = time.Hour
	w, err := cassettes.NewWriter(out, res.Header, opts)
	if err != nil {
		return err
	}
	err = res.each(func(e cassettes.Entry) error {
		switch {
		case e.Request != nil:
			return w.RequestAs(e.ID, e.At, *e.Request)
		case e.Response != nil:
			return w.Response(e.ID, *e.Response)
		case e.Frame != nil:
			return w.Frame(e.ID, *e.Frame)
		case e.End != nil:
			return w.End(e.ID, *e.End)
		}
		return nil
	})
	if err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

// Save writes the cut to path atomically ([cassettes.WriteAtomic]),
// compressed when path ends in ".zst".
func (res *Result) Save(path string) error {
	opts := cassettes.WriterOptions{Compress: strings.HasSuffix(path, ".zst")}
	return cassettes.WriteAtomic(path, func(w io.Writer) error { return res.Write(w, opts) })
}

// Entries returns the cut's lines as a stream, as a [cassettes.Reader]
// gives a cassette's (Line left 0): to compare a cut without writing it.
// The window's lines are read again from the recording as they are
// asked for; Close the stream when not read to its end.
func (res *Result) Entries() *Entries {
	next, stop := iter.Pull2(func(yield func(cassettes.Entry, error) bool) {
		err := res.each(func(e cassettes.Entry) error {
			if !yield(e, nil) {
				return errStopped
			}
			return nil
		})
		if err != nil && err != errStopped {
			yield(cassettes.Entry{}, err)
		}
	})
	return &Entries{next: next, stop: stop}
}

// errStopped stops the reading of a cut's lines no one reads on.
var errStopped = errors.New("stopped")

// Entries streams a cut's lines.
type Entries struct {
	next func() (cassettes.Entry, error, bool)
	stop func()
	err  error
}

// Next returns the next line, io.EOF after the last, or the error that
// reading the recording again met.
func (e *Entries) Next() (cassettes.Entry, error) {
	if e.err != nil {
		return cassettes.Entry{}, e.err
	}
	l, err, ok := e.next()
	switch {
	case !ok:
		e.err = io.EOF
	case err != nil:
		e.err = err
	default:
		return l, nil
	}
	e.stop()
	return cassettes.Entry{}, e.err
}

// Close stops the stream, closing the recording's files.
func (e *Entries) Close() error {
	e.stop()
	return nil
}
