package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// editState is one resolved edit and whether it fired.
type editState struct {
	Edit
	// where says where the edit sits, for reports; interaction, paths
	// and rv say it as data (see EditReport).
	where       string
	interaction int
	paths       []string
	rv          int64
	// mark is the timeline point of a watch-error, reset or truncate.
	mark *timeline.Mark

	mu      sync.Mutex
	fired   int
	firedAt string
	seen    int // requests counted by an error edit anchored by resource
}

func (e *editState) fire(at string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.fired++
	if e.firedAt == "" {
		e.firedAt = at
	}
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
		e.mu.Lock()
		n := e.fired
		e.mu.Unlock()
		if e.mark != nil {
			n = e.mark.Fired()
		}
		rv := e.rv
		if e.mark != nil && len(e.paths) > 0 {
			rv = r.timelines[e.paths[0]].Recorded(e.mark.RV)
		}
		out = append(out, EditReport{Edit: e.Edit, Where: e.where, Fired: n, Interaction: e.interaction,
			Collections: e.paths, RV: rv})
	}
	return out
}

// resolve attaches e to the interaction or timelines it names.
func (r *Replayer) resolve(e Edit, byID map[int]*ivState) error {
	es := &editState{Edit: e}
	r.edits = append(r.edits, es)
	if e.Kind == EditWarp && e.Request == 0 {
		es.where = "every interaction"
		es.fired = 1
		r.global = append(r.global, e)
		return nil
	}
	if e.Resource != "" {
		return r.resolveAnchored(es)
	}
	var iv *ivState
	if e.Match != "" {
		n := 0
		for _, cand := range r.ivs {
			u, err := url.Parse(cand.in.Request.URL)
			if err == nil && strings.Contains(u.Path, e.Match) {
				if n++; n == e.Request {
					iv = cand
					break
				}
			}
		}
		if iv == nil {
			return fmt.Errorf("%w %s: the cassette has %d interaction(s) whose path contains %q, not %d", ErrBadEdit, e, n, e.Match, e.Request)
		}
	} else if iv = byID[e.Request]; iv == nil {
		return fmt.Errorf("%w %s: the cassette has no interaction %d (it has %d interactions)", ErrBadEdit, e, e.Request, len(r.ivs))
	}
	es.where = fmt.Sprintf("interaction %d", iv.in.ID)
	es.interaction = iv.in.ID
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
		es.mark = newEditMark(e)
		es.where += fmt.Sprintf(" after frame %d", e.After)
		es.mark.RV = r.pointOf(iv, e.After)
		if iv.tl != nil && wire.IsWatch(queryOf(iv.in.Request.URL)) {
			// The same point on the timeline: whichever watch of the
			// collection crosses it first gets the failure.
			iv.tl.AddMark(es.mark)
			es.paths = []string{iv.tl.Path}
			es.where += fmt.Sprintf(" (%s at resourceVersion %d)", iv.tl.Path, iv.tl.Recorded(es.mark.RV))
		}
	case EditPause, EditDrop, EditDup:
		if e.Frame > nf {
			return fmt.Errorf("%w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
	}
	iv.edits = append(iv.edits, es)
	return nil
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

// anchors returns the timelines an edit anchored by resource names.
func (r *Replayer) anchors(e Edit) []*timeline.Timeline {
	var out []*timeline.Timeline
	for _, t := range r.tlOrder {
		if t.Res.Resource == e.Resource && t.Res.Group == e.Group && (e.Namespace == "" || t.Res.Namespace == e.Namespace) {
			out = append(out, t)
		}
	}
	return out
}

// resolveAnchored places an edit anchored by resource. An error edit
// needs no place: it counts requests.
func (r *Replayer) resolveAnchored(es *editState) error {
	e := es.Edit
	what := e.Resource
	if e.Group != "" {
		what += "." + e.Group
	}
	if e.Namespace != "" {
		what += " in namespace " + e.Namespace
	}
	switch e.Kind {
	case EditError:
		verb := e.Verb
		if verb == "" {
			verb = "any"
		}
		es.where = fmt.Sprintf("request %d of %s, verb %s", e.Nth, what, verb)
		return nil
	case EditExpireContinue:
		es.where = fmt.Sprintf("list request %d of %s that carries a continue token", e.Nth, what)
		return nil
	}
	ts := r.anchors(e)
	if len(ts) == 0 {
		es.where = fmt.Sprintf("nowhere: the cassette records no list or watch of %s", what)
		return nil
	}
	es.mark = newEditMark(e)
	// rv is a recorded resourceVersion; a timeline that takes writes
	// holds them scaled.
	es.mark.RV = ts[0].Served(e.RV)
	if e.At > 0 {
		es.mark.RV = ts[0].RVAt(e.At)
	}
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
		if ns != "" && e.Namespace != "" {
			es.mark.Namespace = ns
		}
		if !placed[at] {
			placed[at] = true
			at.AddMark(es.mark)
		}
	}
	es.paths = paths
	es.where = fmt.Sprintf("%s at resourceVersion %d", strings.Join(paths, ", "), ts[0].Recorded(es.mark.RV))
	if last := ts[0].Last(); es.mark.RV > last {
		es.where += fmt.Sprintf(", past the last recorded one (%d): no watch will reach it", ts[0].Recorded(last))
	}
	return nil
}

// verbOf is the API verb of a request, "" for a path that is not a
// resource.
func verbOf(req *http.Request) (apipath.Path, string) {
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		return rp, ""
	}
	switch req.Method {
	case http.MethodGet:
		switch {
		case wire.IsWatch(req.URL.Query()):
			return rp, "watch"
		case rp.Name != "":
			return rp, "get"
		}
		return rp, "list"
	case http.MethodPost:
		return rp, "create"
	case http.MethodPut:
		return rp, "update"
	case http.MethodPatch:
		return rp, "patch"
	case http.MethodDelete:
		if rp.Name == "" {
			return rp, "deletecollection"
		}
		return rp, "delete"
	}
	return rp, ""
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
			if rp, verb = verbOf(req); verb == "" {
				return nil
			}
		}
		if rp.Resource != es.Resource || rp.Group != es.Group || (es.Namespace != "" && rp.Namespace != es.Namespace) {
			continue
		}
		var expired *metav1.Status
		switch es.Kind {
		case EditError:
			if es.Verb != "" && es.Verb != verb {
				continue
			}
		case EditExpireContinue:
			if verb != "list" {
				continue
			}
			if expired = continueExpired(req.URL.Query().Get("continue")); expired == nil {
				continue // no token, or one the server refuses with a 400 anyway
			}
		}
		es.mu.Lock()
		es.seen++
		hit := es.seen == es.Nth
		es.mu.Unlock()
		if !hit {
			continue
		}
		es.fire(req.Method + " " + req.URL.Path)
		if expired != nil {
			enc, _ := wire.Negotiate(req.Header.Get("Accept"))
			return r.statusPlan(expired, 0, enc)
		}
		return r.errorPlan(nil, es.Edit)
	}
	return nil
}

// continueExpired is kube-apiserver's answer to a paged list whose
// continue token tok names a compacted resourceVersion: 410 Expired, and
// in the Status a token that continues from the same key at the latest
// state (resourceVersion -1). nil when tok is not a token the server would
// read (it answers those with a 400 whatever was compacted).
func continueExpired(tok string) *metav1.Status {
	if tok == "" {
		return nil
	}
	start, _, err := wire.DecodeContinue(tok, "")
	if err != nil {
		return nil
	}
	latest, err := wire.EncodeContinue(start, "", -1)
	if err != nil {
		return nil
	}
	st := wire.Status(http.StatusGone, metav1.StatusReasonExpired, wire.ContinueInconsistent, 0)
	st.Continue = latest
	return st
}
