package cut

import (
	"math"
	"net/url"
	"strings"
	"time"

	"github.com/kwrec/kwrec/replay"
)

// carryEdits returns the header edits the cut res of window w keeps,
// moved with it, and those it drops. rv1 is the state's resourceVersion,
// off how much earlier the cut starts. A cut that ends open (a rebased
// part, which later parts go on from) keeps what falls after it.
func (r *Recording) carryEdits(w span, rv1 int64, off time.Duration, open bool, res *Result) (kept, dropped []string) {
	var rv2 int64
	for i := range w.to {
		rv2 = max(rv2, r.rvOf(i))
	}
	if open {
		rv2, w.t2 = math.MaxInt64, math.MaxInt64
	}
	// Frames of each interaction before the window, and in it.
	before, in := map[int]int{}, map[int]int{}
	for i := range w.to {
		if l := &r.lines[i]; l.e.Frame != nil {
			if i < w.from {
				before[l.e.ID]++
			} else {
				in[l.e.ID]++
			}
		}
	}
	ids := map[int]bool{} // the recorded interactions the cut holds as they were
	for _, e := range res.lines {
		if e.Request != nil && !res.lists[e.ID] {
			ids[e.ID] = true
		}
	}
	for _, s := range r.Header.Edits {
		e, err := replay.ParseEdit(s)
		if err != nil {
			dropped = append(dropped, s)
			continue
		}
		ok := true
		switch {
		case e.Request != 0:
			id := e.Request
			if e.Match != "" {
				id = r.nth(e.Match, e.Request)
			}
			if ok = ids[id]; !ok {
				break
			}
			n, b := in[id], before[id]
			if open {
				n = math.MaxInt
			}
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
				e.Request = rankIn(res, e.Match, id)
			}
		case e.RV != 0:
			ok = e.RV > rv1 && e.RV <= rv2
		case e.At != 0:
			ok = e.At > w.t1 && e.At <= w.t2
			e.At -= off
		}
		if ok {
			kept = append(kept, e.String())
		} else {
			dropped = append(dropped, s)
		}
	}
	return kept, dropped
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
	for _, e := range res.lines {
		if e.Request != nil && strings.Contains(pathOf(e.Request.URL), match) {
			n++
			if e.ID == id {
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
