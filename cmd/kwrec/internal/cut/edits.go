package cut

import (
	"iter"
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"

	"github.com/kwrec/kwrec/replay"
)

// carryEdits returns the header edits the cut res of window w keeps,
// moved with it, and those it drops. rv1 is the state's resourceVersion,
// off how much earlier the cut starts. A cut that ends open (a rebased
// part, which later parts go on from) keeps what falls after it.
func (r *Recording) carryEdits(w span, rv1 int64, off time.Duration, open bool, res *Result) (kept, dropped []string) {
	c := editCarrier{r: r, res: res, w: w, rv1: rv1, rv2: r.maxRV(w.to), off: off, open: open}
	if open {
		c.rv2, c.w.t2 = math.MaxInt64, math.MaxInt64
	}
	c.before, c.in = r.frameCounts(w)
	c.ids = res.asRecorded()
	for _, s := range r.Header.Edits {
		e, err := replay.ParseEdit(s)
		if err != nil {
			dropped = append(dropped, s)
			continue
		}
		if c.carry(&e) {
			kept = append(kept, e.String())
		} else {
			dropped = append(dropped, s)
		}
	}
	return kept, dropped
}

// editCarrier is what carryEdits knows of a cut to move a header edit
// with it.
type editCarrier struct {
	r          *Recording
	res        *Result
	w          span          // the window, its end never reached when open
	rv1, rv2   int64         // the resourceVersions at the window's start and end
	off        time.Duration // how much earlier the cut starts
	open       bool          // the cut ends open
	before, in map[int]int   // frames of each interaction before the window, and in it
	ids        map[int]bool  // the recorded interactions the cut holds as they were
}

// frameCounts returns the number of frames of each interaction of r
// before the window w, and in it.
func (r *Recording) frameCounts(w span) (before, in map[int]int) {
	before, in = map[int]int{}, map[int]int{}
	for i := range w.to {
		if l := r.lines.At(i); l.kind() == lineFrame {
			id := r.ivOf(l).in.ID
			if i < w.from {
				before[id]++
			} else {
				in[id]++
			}
		}
	}
	return before, in
}

// asRecorded returns the recorded interactions res holds as they were:
// all those it has a request of but the lists of the state.
func (res *Result) asRecorded() map[int]bool {
	ids := map[int]bool{}
	for id := range res.requests() {
		if !res.lists[id] {
			ids[id] = true
		}
	}
	return ids
}

// requests yields the interaction number and request of each request
// line of res, in order.
func (res *Result) requests() iter.Seq2[int, *cassettes.Request] {
	return func(yield func(int, *cassettes.Request) bool) {
		for _, e := range res.head {
			if e.Request != nil && !yield(e.ID, e.Request) {
				return
			}
		}
		if res.win == nil {
			return
		}
		r := res.win.rec
		for i := res.win.w.from; i < res.win.w.to; i++ {
			if l := r.lines.At(i); l.kind() == lineRequest {
				if v := r.ivOf(l); !yield(v.in.ID, &v.in.Request) {
					return
				}
			}
		}
	}
}

// carry reports whether the cut keeps edit e, and moves e with the cut:
// an edit of an interaction as carryRequest does; one at a
// resourceVersion when the window holds it; one at a time when the
// window holds it, moved off earlier.
func (c *editCarrier) carry(e *replay.Edit) bool {
	switch {
	case e.Request != 0:
		return c.carryRequest(e)
	case e.RV != 0:
		return e.RV > c.rv1 && e.RV <= c.rv2
	case e.At != 0:
		ok := e.At > c.w.t1 && e.At <= c.w.t2
		e.At -= c.off
		return ok
	}
	return true
}

// carryRequest is carry of an edit of one interaction: kept when the
// cut holds the interaction as recorded and the frame the edit names is
// in the window; its frame numbers, and its rank among those whose path
// holds its Match, moved to the cut's.
func (c *editCarrier) carryRequest(e *replay.Edit) bool {
	id := e.Request
	if e.Match != "" {
		id = c.r.nth(e.Match, e.Request)
	}
	if !c.ids[id] {
		return false
	}
	n, b := c.in[id], c.before[id]
	if c.open {
		n = math.MaxInt
	}
	ok := true
	switch e.Kind {
	case replay.EditWatchError, replay.EditReset, replay.EditTruncate:
		e.After -= b
		ok = e.After >= 0 && e.After <= n
	case replay.EditPause:
		e.Frame -= b
		ok = e.Frame >= 1 && e.Frame <= n
	case replay.EditDrop, replay.EditDup:
		e.Frame -= b
		ok = e.Frame >= 1 && e.Frame <= n
	}
	if e.Match != "" {
		e.Request = rankIn(c.res, e.Match, id)
	}
	return ok
}

// nth returns the ID of the nth interaction of r whose URL path holds
// match, 0 for none.
func (r *Recording) nth(match string, n int) int {
	for _, v := range r.order {
		if strings.Contains(pathOf(v.in.Request.URL), match) {
			if n--; n == 0 {
				return v.in.ID
			}
		}
	}
	return 0
}

// rankIn returns the rank of interaction id among those of res whose
// URL path holds match.
func rankIn(res *Result, match string, id int) int {
	n := 0
	for eid, req := range res.requests() {
		if strings.Contains(pathOf(req.URL), match) {
			n++
			if eid == id {
				return n
			}
		}
	}
	return 0
}

func pathOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Path
}
