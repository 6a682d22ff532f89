package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/edit"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// editState is one resolved edit: where it sits and whether it fired.
type editState struct {
	Edit
	edit.State
}

// EditReport says where an edit sits on the cassette and whether it
// fired.
type EditReport struct {
	Edit Edit
	// Where is the edit's place: an interaction and frame, a collection
	// and resourceVersion, or "nowhere" with the reason.
	Where string
	// Interaction is the ID of the interaction the edit names (with
	// request= or match=), 0 for none.
	Interaction int
	// Collections and RV are the timeline point of a watch-error, reset
	// or truncate: the collection paths it sits on and the recorded
	// resourceVersion after which it fires; nil and 0 for other edits.
	Collections []string
	RV          int64
	// Fired counts the times it took effect: at most 1 for a watch-error,
	// reset or truncate (they fire once), one per attempt for an error.
	Fired int
}

func (e EditReport) String() string {
	if e.Fired == 0 {
		return fmt.Sprintf("%s at %s: did not fire", e.Edit, e.Where)
	}
	return fmt.Sprintf("%s at %s: fired %d time(s)", e.Edit, e.Where, e.Fired)
}

// Edits reports every edit of the replay (the cassette's, then
// [Options.Edits]), where it sits and whether it has fired so far. After
// a replay, an edit with Fired 0 was never reached by any client: a test
// that meant to inject a failure did not.
func (r *Replayer) Edits() []EditReport {
	out := make([]EditReport, 0, len(r.edits))
	for _, e := range r.edits {
		var rv int64
		if e.Mark != nil && len(e.Paths) > 0 {
			rv = r.timelines[e.Paths[0]].Recorded(e.Mark.RV)
		}
		out = append(out, EditReport{Edit: e.Edit, Where: e.Where, Fired: e.Fired(), Interaction: e.Interaction,
			Collections: e.Paths, RV: rv})
	}
	return out
}

// resolveEdits resolves the cassette's edits and opts.Edits against the
// forked timelines and interactions, once r has them.
func (r *Replayer) resolveEdits(opts Options) error {
	var edits []Edit
	for _, s := range r.header.Edits {
		e, err := ParseEdit(s)
		if err != nil {
			return fmt.Errorf("cassette header: %w", err)
		}
		edits = append(edits, e)
	}
	edits = append(edits, opts.Edits...)
	byID := map[int]*ivState{}
	for _, iv := range r.ivs {
		byID[iv.in.ID] = iv
	}
	for _, e := range edits {
		if err := r.resolve(e, byID); err != nil {
			return err
		}
	}
	r.mu.Lock()
	r.checkDoneLocked()
	r.mu.Unlock()
	return nil
}

// resolve attaches e to the interaction or timelines it names.
func (r *Replayer) resolve(e Edit, byID map[int]*ivState) error {
	es := &editState{Edit: e}
	r.edits = append(r.edits, es)
	switch {
	case e.Kind == EditWarp && e.Request == 0:
		es.Where = "every interaction"
		es.Fire("")
		r.global = append(r.global, e)
		return nil
	case e.Resource != "":
		r.resolveAnchored(es)
		return nil
	}
	iv, err := r.named(e, byID)
	if err != nil {
		return err
	}
	return r.resolveOn(es, iv)
}

// named returns the interaction e names: by ID, or the Nth whose path
// contains e.Match.
func (r *Replayer) named(e Edit, byID map[int]*ivState) (*ivState, error) {
	if e.Match == "" {
		if iv := byID[e.Request]; iv != nil {
			return iv, nil
		}
		return nil, fmt.Errorf("%w %s: the cassette has no interaction %d (it has %d interactions)", ErrBadEdit, e, e.Request, len(r.ivs))
	}
	n := 0
	for _, cand := range r.ivs {
		u, err := url.Parse(cand.in.Request.URL)
		if err == nil && strings.Contains(u.Path, e.Match) {
			if n++; n == e.Request {
				return cand, nil
			}
		}
	}
	return nil, fmt.Errorf("%w %s: the cassette has %d interaction(s) whose path contains %q, not %d", ErrBadEdit, e, n, e.Match, e.Request)
}

// resolveOn attaches es to the recorded interaction iv.
func (r *Replayer) resolveOn(es *editState, iv *ivState) error {
	e := es.Edit
	es.Where = fmt.Sprintf("interaction %d", iv.in.ID)
	es.Interaction = iv.in.ID
	nf := iv.frames.Len()
	switch e.Kind {
	case EditError:
		iv.errs = append(iv.errs, es)
		return nil
	case EditWatchError, EditReset, EditTruncate:
		if iv.in.Response == nil {
			return fmt.Errorf("%w %s: interaction %d has no response to cut", ErrBadEdit, e, iv.in.ID)
		}
		if e.After > nf {
			return fmt.Errorf("%w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
		r.cut(es, iv)
	case EditPause, EditDrop, EditDup:
		if e.Frame > nf {
			return fmt.Errorf("%w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
	}
	iv.edits = append(iv.edits, es)
	return nil
}

// cut places the mark of a watch-error, reset or truncate on iv after
// its frame After, and on the same point of its collection's timeline.
func (r *Replayer) cut(es *editState, iv *ivState) {
	es.Mark = newEditMark(es.Edit)
	es.Where += fmt.Sprintf(" after frame %d", es.After)
	es.Mark.RV = r.pointOf(iv, es.After)
	if iv.tl != nil && wire.IsWatch(queryOf(iv.in.Request.URL)) {
		// The same point on the timeline: whichever watch of the
		// collection crosses it first gets the failure.
		iv.tl.AddMark(es.Mark)
		es.Paths = []string{iv.tl.Path}
		es.Where += fmt.Sprintf(" (%s at resourceVersion %d)", iv.tl.Path, iv.tl.Recorded(es.Mark.RV))
	}
}

// pointOf is the resourceVersion iv's collection was at after its first
// after frames: that of the last of them that carried one, else the
// watch's starting resourceVersion.
func (r *Replayer) pointOf(iv *ivState, after int) int64 {
	for i := after - 1; i >= 0; i-- {
		if rv := iv.rv(i); rv != 0 {
			return rv
		}
	}
	rv, _ := strconv.ParseInt(queryOf(iv.in.Request.URL).Get("resourceVersion"), 10, 64)
	return rv
}

func newEditMark(e Edit) *timeline.Mark {
	m := &timeline.Mark{Once: true, Label: e.String(), Skip: e.Skip}
	switch e.Kind {
	case EditWatchError:
		m.Kind, m.Status = timeline.MarkError, editStatus(e)
	case EditReset:
		m.Kind = timeline.MarkReset
	case EditTruncate:
		m.Kind = timeline.MarkTruncate
	}
	return m
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

// anchor is the resource an edit anchored by resource names.
func (e Edit) anchor() edit.Anchor {
	return edit.Anchor{Resource: e.Resource, Group: e.Group, Namespace: e.Namespace}
}

// resolveAnchored places an edit anchored by resource. An error edit
// needs no place: it counts requests.
func (r *Replayer) resolveAnchored(es *editState) {
	e := es.Edit
	what := e.anchor().What()
	switch e.Kind {
	case EditError:
		verb := e.Verb
		if verb == "" {
			verb = "any"
		}
		es.Where = fmt.Sprintf("request %d of %s, verb %s", e.Nth, what, verb)
		return
	case EditExpireContinue:
		es.Where = fmt.Sprintf("list request %d of %s that carries a continue token", e.Nth, what)
		return
	}
	ts := e.anchor().On(r.tlOrder)
	if len(ts) == 0 {
		es.Where = fmt.Sprintf("nowhere: the cassette records no list or watch of %s", what)
		return
	}
	es.Mark = newEditMark(e)
	// rv is a recorded resourceVersion; a timeline that takes writes
	// holds them scaled.
	es.Mark.RV = ts[0].Served(e.RV)
	if e.At > 0 {
		es.Mark.RV = ts[0].RVAt(e.At)
	}
	es.Paths = r.placeMark(es, ts)
	es.Where = fmt.Sprintf("%s at resourceVersion %d", strings.Join(es.Paths, ", "), ts[0].Recorded(es.Mark.RV))
	if last := ts[0].Last(); es.Mark.RV > last {
		es.Where += fmt.Sprintf(", past the last recorded one (%d): no watch will reach it", ts[0].Recorded(last))
	}
}

// placeMark adds the mark of es to the timelines that answer the watches
// of ts, and returns the paths of ts to report it on.
func (r *Replayer) placeMark(es *editState, ts []*timeline.Timeline) []string {
	var paths []string
	placed := map[*timeline.Timeline]bool{}
	for _, t := range ts {
		if r.allOf[t] != t { // an assembled timeline is not named
			paths = append(paths, t.Path)
		}
		// The mark goes where the collection's watches are answered: in
		// Overlay mode a namespace's on the all-namespaces timeline, for
		// that namespace's watches only.
		at, ns := r.timelineFor(t.Res)
		if at == nil {
			at = t
		}
		if ns != "" && es.Namespace != "" {
			es.Mark.Namespace = ns
		}
		if !placed[at] {
			placed[at] = true
			at.AddMark(es.Mark)
		}
	}
	return paths
}

// anchoredError counts req against the edits anchored by resource that
// answer a request (error, expire-continue) and returns the plan of the
// one it fires, nil for none.
func (r *Replayer) anchoredError(req *http.Request) *plan {
	var rp apipath.Path
	var verb string
	for _, es := range r.edits {
		if es.Kind != EditError && es.Kind != EditExpireContinue || es.Resource == "" {
			continue
		}
		if verb == "" {
			if rp, verb = edit.Verb(req); verb == "" {
				return nil
			}
		}
		if !es.anchor().Names(rp) {
			continue
		}
		var expired *metav1.Status
		switch {
		case es.Kind == EditError && es.Verb != "" && es.Verb != verb:
			continue
		case es.Kind == EditExpireContinue:
			if verb != "list" {
				continue
			}
			if expired = edit.ContinueExpired(req.URL.Query().Get("continue")); expired == nil {
				continue // no token, or one the server refuses with a 400 anyway
			}
		}
		if !es.Count(es.Nth) {
			continue
		}
		es.Fire(req.Method + " " + req.URL.Path)
		if expired != nil {
			enc, _ := wire.Negotiate(req.Header.Get("Accept"))
			return r.statusPlan(expired, 0, enc)
		}
		return r.errorPlan(nil, es.Edit)
	}
	return nil
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
		frames: []outFrame{{data: wire.StatusBody(st, false)}}}
}
