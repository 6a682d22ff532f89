package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/edit"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Resolving a replay's edits: each attached to the interaction it names,
// or placed as a mark on the timelines of the resource it names.

// resolveEdits resolves the cassette's edits and opts.Edits against r's
// forked timelines and interactions, once r has them.
func resolveEdits(r *Replayer, opts Options) error {
	var edits []Edit
	for _, s := range r.hist.header.Edits {
		e, err := ParseEdit(s)
		if err != nil {
			return fmt.Errorf("cassette header: %w", err)
		}
		edits = append(edits, e)
	}
	edits = append(edits, opts.Edits...)
	rs := resolver{r: r, byID: map[int]*ivState{}}
	for _, iv := range r.ivs {
		rs.byID[iv.in.ID] = iv
	}
	for _, e := range edits {
		if err := rs.resolve(e); err != nil {
			return err
		}
	}
	r.prog.check()
	return nil
}

// resolver resolves a replay's edits: it attaches each to the
// interaction or the timelines it names, in the Replayer r.
type resolver struct {
	r    *Replayer
	byID map[int]*ivState // the interactions by ID
}

// resolve attaches e to the interaction or timelines it names.
func (rs resolver) resolve(e Edit) error {
	r := rs.r
	es := &editState{Edit: e}
	r.edits.all = append(r.edits.all, es)
	switch {
	case e.Kind == EditWarp && e.Request == 0:
		es.Where = "every interaction"
		es.Fire("")
		r.edits.global = append(r.edits.global, e)
		return nil
	case e.Resource != "":
		rs.anchored(es)
		return nil
	}
	iv, err := rs.named(e)
	if err != nil {
		return err
	}
	return attach(es, iv)
}

// named returns the interaction e names: by ID, or the Nth whose path
// contains e.Match.
func (rs resolver) named(e Edit) (*ivState, error) {
	r := rs.r
	if e.Match == "" {
		if iv := rs.byID[e.Request]; iv != nil {
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

// attach attaches es to the recorded interaction iv.
func attach(es *editState, iv *ivState) error {
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
		placeCut(es, iv)
	case EditPause, EditDrop, EditDup:
		if e.Frame > nf {
			return fmt.Errorf("%w %s: interaction %d has only %d frame(s)", ErrBadEdit, e, iv.in.ID, nf)
		}
	}
	iv.edits = append(iv.edits, es)
	return nil
}

// placeCut places the mark of a watch-error, reset or truncate on iv after
// its frame After, and on the same point of its collection's timeline.
func placeCut(es *editState, iv *ivState) {
	es.Mark = newEditMark(es.Edit)
	es.Where += fmt.Sprintf(" after frame %d", es.After)
	es.Mark.RV = iv.pointOf(es.After)
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
func (iv *ivState) pointOf(after int) int64 {
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
	return edit.Anchor{Resource: e.Resource, Group: e.Group, Namespace: e.Namespace, Name: e.Name}
}

// anchored places an edit anchored by resource. An error edit needs no
// place: it counts requests.
func (rs resolver) anchored(es *editState) {
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
	case EditReset, EditWatchError:
		switch {
		case e.Verb != "" && e.After > 0:
			es.Where = fmt.Sprintf("request %d of %s, verb %s, after its frame %d", e.Nth, what, e.Verb, e.After)
			return
		case e.Verb != "":
			es.Where = fmt.Sprintf("request %d of %s, verb %s, before its first byte", e.Nth, what, e.Verb)
			return
		}
	}
	ts := e.anchor().On(rs.r.world.Recorded())
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
	es.Paths = rs.place(es, ts)
	es.Where = fmt.Sprintf("%s at resourceVersion %d", strings.Join(es.Paths, ", "), ts[0].Recorded(es.Mark.RV))
	if last := ts[0].Last(); es.Mark.RV > last {
		es.Where += fmt.Sprintf(", past the last recorded one (%d): no watch will reach it", ts[0].Recorded(last))
	}
}

// place adds the mark of es to the timelines that answer the watches of
// ts, and returns the paths of ts to report it on.
func (rs resolver) place(es *editState, ts []*timeline.Timeline) []string {
	r := rs.r
	var paths []string
	placed := map[*timeline.Timeline]bool{}
	for _, t := range ts {
		if r.world.AllOf(t) != t { // an assembled timeline is not named
			paths = append(paths, t.Path)
		}
		// The mark goes where the collection's watches are answered: in
		// Overlay mode a namespace's on the all-namespaces timeline, for
		// that namespace's watches only.
		at, ns := r.world.For(t.Res)
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
