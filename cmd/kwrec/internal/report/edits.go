package report

import (
	"errors"
	"net/url"
	"strings"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/replay"
)

// placeEdits resolves the cassette's edits and extra as `kwrec show` does
// (replay.Open, then Replayer.Edits for each one's place in words) and
// turns each place into points on the lanes: an edit on interaction N
// after frame K at that frame, one anchored by resource and
// resourceVersion across each named collection's group at the first frame
// that reaches the resourceVersion. rvs holds each lane's marks'
// resourceVersions.
func placeEdits(rep *Report, path string, h cassettes.Header, extra []replay.Edit, rvs [][]int64) error {
	rep.Edits = []Edit{}
	if len(h.Edits)+len(extra) == 0 {
		return nil
	}
	rp, err := replay.Open(path, replay.Options{Edits: extra})
	if errors.Is(err, replay.ErrBadEdit) {
		return err
	}
	if err != nil {
		// The report above shows what replay cannot read; list the
		// edits unplaced.
		for _, e := range h.Edits {
			rep.Edits = append(rep.Edits, Edit{Edit: e, Where: "nowhere: " + err.Error(), Places: []Place{}})
		}
		return nil
	}
	defer rp.Close()
	p := placer{rep: rep, rvs: rvs, lane: map[int]int{}}
	for i, l := range rep.Lanes {
		p.lane[l.ID] = i
	}
	for i, er := range rp.Edits() {
		rep.Edits = append(rep.Edits, Edit{
			Edit:     er.Edit.String(),
			Where:    er.Where,
			FromFlag: i >= len(h.Edits),
			Places:   p.places(er),
		})
	}
	return nil
}

type placer struct {
	rep  *Report
	rvs  [][]int64
	lane map[int]int // interaction ID → lane
}

func (p placer) places(er replay.EditReport) []Place {
	e := er.Edit
	switch {
	case e.Resource != "" && e.Kind == replay.EditError:
		return p.nthRequest(e)
	case e.Resource != "":
		return p.atRV(er.Collections, er.RV)
	}
	if er.Interaction == 0 {
		return []Place{} // a global warp: every interaction
	}
	li, ok := p.lane[er.Interaction]
	if !ok {
		return []Place{}
	}
	l := p.rep.Lanes[li]
	at := Place{Group: l.Group, Lane: li, T: l.At}
	switch e.Kind {
	case replay.EditWatchError, replay.EditReset, replay.EditTruncate:
		at.T = p.afterFrame(l, e.After)
	case replay.EditPause, replay.EditDrop, replay.EditDup:
		at.T = p.afterFrame(l, e.Frame)
	}
	return []Place{at}
}

// afterFrame is when lane l had received k frames.
func (p placer) afterFrame(l Lane, k int) int64 {
	if k <= 0 || l.Count == 0 {
		return max(l.Headers, l.At)
	}
	return p.rep.Marks.T[l.First+min(k, l.Count)-1]
}

// atRV places a point on each collection's group at the first frame
// reaching resourceVersion rv.
func (p placer) atRV(paths []string, rv int64) []Place {
	out := []Place{}
	for _, path := range paths {
		for gi, g := range p.rep.Groups {
			if g.Name == path {
				out = append(out, p.groupPoint(gi, rv))
			}
		}
	}
	return out
}

// groupPoint is the earliest frame of group gi's lanes at rv, else the
// earliest past it, else the group's last time (unreachable).
func (p placer) groupPoint(gi int, rv int64) Place {
	best := Place{Group: gi, Lane: -1, T: -1}
	var bestRV int64
	last := int64(0)
	for _, li := range p.rep.Groups[gi].Lanes {
		l := p.rep.Lanes[li]
		last = max(last, l.End, l.At)
		for k, r := range p.rvs[li] {
			t := p.rep.Marks.T[l.First+k]
			if r < rv {
				continue
			}
			if best.T < 0 || r < bestRV || (r == bestRV && t < best.T) {
				best.T, bestRV = t, r
			}
			break
		}
	}
	if best.T < 0 {
		best.T, best.Unreachable = last, true
	}
	return best
}

// nthRequest places an error edit anchored by resource on the request it
// fires on when replayed as recorded: the Nth of the resource and verb.
func (p placer) nthRequest(e replay.Edit) []Place {
	n := 0
	for li, l := range p.rep.Lanes {
		u, err := url.Parse(l.URL)
		if err != nil {
			continue
		}
		ap, ok := apipath.Parse(stripWatch(u.Path))
		if !ok || ap.Resource != e.Resource || ap.Group != e.Group || (e.Namespace != "" && ap.Namespace != e.Namespace) {
			continue
		}
		if e.Verb != "" && verb(l, ap) != e.Verb {
			continue
		}
		if n++; n == max(e.Nth, 1) {
			return []Place{{Group: l.Group, Lane: li, T: l.At}}
		}
	}
	return []Place{}
}

// verb is the API verb of lane l's request, as replay's error edits name
// them.
func verb(l Lane, ap apipath.Path) string {
	switch l.Method {
	case "GET":
		switch {
		case l.Watch:
			return "watch"
		case ap.Name != "":
			return "get"
		}
		return "list"
	case "POST":
		return "create"
	case "PUT":
		return "update"
	case "PATCH":
		return "patch"
	case "DELETE":
		if ap.Name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(l.Method)
}
