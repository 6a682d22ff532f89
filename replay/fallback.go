package replay

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
)

// fallback answers a GET list, watch or get of a recorded collection from
// the object state rebuilt from the recording (see state.go). It returns a
// nil plan and the reason when it cannot. Called with r.mu held.
//
// What a real API server does, and what this mirrors:
//   - list with resourceVersion "" or "0": the latest state. Here "latest"
//     is the point the replay has reached: the highest resourceVersion served
//     so far, so a re-list after an injected error sees what the client had
//     seen, and the watch that follows replays the rest.
//   - list at resourceVersion X (NotOlderThan, the default): state at X or
//     newer; resourceVersionMatch=Exact: state at exactly X. Older than the
//     oldest state held: 410 Expired. Newer than anything recorded: the
//     server waits about 3 s then answers 504 with Retry-After 1; here the
//     504 comes at once.
//   - watch from X: the recorded events after X, paced like the recording;
//     X older than held: 200 and one ERROR event with a 410 Expired Status,
//     then the stream ends (the watch cache's behaviour).
//   - watch with resourceVersion "" or "0": synthetic ADDED events for the
//     current state, then the events after it.
//   - streaming list (sendInitialEvents=true): ADDED per object, then a
//     BOOKMARK annotated k8s.io/initial-events-end: "true" carrying the
//     list's resourceVersion, then the events after it.
//   - allowWatchBookmarks=true: a BOOKMARK at the last resourceVersion once
//     the recorded events are out, so a later re-watch resumes there.
//
// Answers are JSON; a client that does not accept application/json (a
// protobuf-only client) gets ErrNoMatch. State is rebuilt from JSON
// recordings only.
func (r *Replayer) fallback(req *http.Request, got *cassettes.Request) (*plan, string) {
	if req.Method != http.MethodGet {
		return nil, "only GET list, watch and get requests are answered from state"
	}
	if acc := req.Header.Get("Accept"); acc != "" && !accepts(acc, "application/json") {
		return nil, "the client does not accept application/json, the only encoding state is served in"
	}
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		return nil, "not a resource path"
	}
	c := r.colls[rp.Collection()]
	if c == nil {
		for _, iv := range r.ivs {
			u, err := url.Parse(iv.in.Request.URL)
			if err == nil && u.Path == rp.Collection() && iv.in.Response != nil && !isJSON(iv.in.Response.Header) {
				return nil, fmt.Sprintf("%s was recorded in %s only; state is rebuilt from JSON recordings (record with a JSON client, e.g. rest.Config.ContentType = \"application/json\")",
					rp.Collection(), mediaType(iv.in.Response.Header.Get("Content-Type")))
			}
		}
		return nil, fmt.Sprintf("no JSON list or watch of %s was recorded", rp.Collection())
	}
	if c.broken != "" {
		return nil, "state of " + c.path + " cannot be rebuilt: " + c.broken
	}
	q := req.URL.Query()
	sel, err := parseSelector(q)
	if err != nil {
		return nil, err.Error()
	}
	kind, listKind, apiVersion := c.kinds()
	p := &plan{status: http.StatusOK, header: http.Header{"Content-Type": {"application/json"}},
		pace: r.pacing(nil), coll: c, end: endEOF, timeout: timeoutOf(req), kind: kind, apiVersion: apiVersion}
	retry := 0
	statusPlan := func(code int, reason, msg string) *plan {
		p.status = code
		p.frames = []outFrame{{data: statusJSON(code, reason, msg, retry)}}
		return p
	}
	readFailed := func(err error) *plan {
		p.end = endEOF
		return statusPlan(http.StatusInternalServerError, "InternalError", err.Error())
	}
	rvParam := q.Get("resourceVersion")
	var rv int64
	if rvParam != "" {
		if rv, err = strconv.ParseInt(rvParam, 10, 64); err != nil {
			return statusPlan(http.StatusBadRequest, "BadRequest", fmt.Sprintf("invalid resourceVersion %q", rvParam)), ""
		}
	}

	if rp.Name != "" { // get one object
		if isWatch(q) {
			return nil, "watch of a single object by path is not supported; use fieldSelector=metadata.name=NAME"
		}
		objs, _ := c.stateAt(c.progress)
		for _, o := range objs {
			if o.name() == rp.Name && o.namespace() == rp.Namespace {
				raws, err := r.raws(c, []object{o})
				if err != nil {
					return readFailed(err), ""
				}
				p.frames = []outFrame{{data: append(raws[0], '\n')}}
				return p, ""
			}
		}
		return statusPlan(http.StatusNotFound, "NotFound", fmt.Sprintf("%s %q not found", rp.Resource, rp.Name)), ""
	}

	if !isWatch(q) {
		at, after := c.progress, ""
		if tok := q.Get("continue"); tok != "" {
			var ok bool
			if at, after, ok = parseContinue(tok); !ok {
				return statusPlan(http.StatusGone, "Expired", "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter."), ""
			}
		} else if rv != 0 {
			switch {
			case rv > c.last:
				p.header.Set("Retry-After", "1")
				retry = 1
				return statusPlan(http.StatusGatewayTimeout, "Timeout", fmt.Sprintf("Too large resource version: %d, current: %d", rv, c.last)), ""
			case q.Get("resourceVersionMatch") == "Exact":
				at = rv
			case rv > at:
				at = rv
			}
		}
		objs, ok := c.stateAt(at)
		if !ok {
			return statusPlan(http.StatusGone, "Expired", fmt.Sprintf("too old resource version: %d (%d)", at, c.oldest)), ""
		}
		var items []object
		for _, o := range objs {
			if o.key > after && sel.matches(o) {
				items = append(items, o)
			}
		}
		cont, remaining := "", 0
		if limit, _ := strconv.Atoi(q.Get("limit")); limit > 0 && len(items) > limit {
			remaining = len(items) - limit
			items = items[:limit]
			cont = continueToken(at, items[limit-1].key)
		}
		raws, err := r.raws(c, items)
		if err != nil {
			return readFailed(err), ""
		}
		p.frames = []outFrame{{data: listJSON(listKind, apiVersion, at, cont, remaining, raws), rv: at}}
		return p, ""
	}

	// A watch.
	p.end = endIdle
	from := rv
	initial := q.Get("sendInitialEvents") == "true"
	switch {
	case initial || rvParam == "" || rvParam == "0":
		if initial && rv > c.progress {
			from = rv
		} else {
			from = c.progress
		}
		objs, ok := c.stateAt(from)
		if !ok {
			p.end = endEOF
			p.frames = []outFrame{{data: watchEventJSON("ERROR", trimNL(statusJSON(http.StatusGone, "Expired",
				fmt.Sprintf("too old resource version: %d (%d)", from, c.oldest), 0)))}}
			return p, ""
		}
		var added []object
		for _, o := range objs {
			if sel.matches(o) {
				added = append(added, o)
			}
		}
		raws, err := r.raws(c, added)
		if err != nil {
			return readFailed(err), ""
		}
		for i, o := range added {
			p.frames = append(p.frames, outFrame{data: eventJSON("ADDED", raws[i], o.ref.typed, kind, apiVersion)})
		}
		if initial {
			p.frames = append(p.frames, outFrame{data: bookmarkJSON(kind, apiVersion, from, true), rv: from})
		}
	case rv < c.oldest:
		p.end = endEOF
		p.frames = []outFrame{{data: watchEventJSON("ERROR", trimNL(statusJSON(http.StatusGone, "Expired",
			fmt.Sprintf("too old resource version: %d (%d)", rv, c.oldest), 0)))}}
		return p, ""
	}
	var prev *event
	lastRV := from
	for i := range c.events {
		e := &c.events[i]
		if e.rv <= from {
			continue
		}
		lastRV = e.rv
		if !sel.matches(e.obj) {
			continue
		}
		of := outFrame{ev: e, rv: e.rv}
		if prev != nil {
			of.gap = e.at() - prev.at()
		}
		prev = e
		p.frames = append(p.frames, of)
	}
	if q.Get("allowWatchBookmarks") == "true" && lastRV > from {
		p.frames = append(p.frames, outFrame{data: bookmarkJSON(kind, apiVersion, lastRV, false), rv: lastRV})
	}
	return p, ""
}

func trimNL(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
