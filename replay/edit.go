package replay

import (
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/replay/internal/edit"
)

// EditKind names what an [Edit] does.
type EditKind string

// The edit kinds. Frames are numbered from 1 in the recorded interaction.
const (
	// EditError answers the request with an HTTP error instead of the
	// recording: Status, optional Reason (default from the status code) and
	// RetryAfter. The interaction stays pending, so the client's retry gets
	// the recorded response. Several error edits on one interaction fire on
	// successive attempts.
	EditError EditKind = "error"
	// EditWatchError ends the stream after frame After with a watch ERROR
	// event carrying a Status of code Status (410 gives reason Expired),
	// then a clean end, as the API server does.
	EditWatchError EditKind = "watch-error"
	// EditReset ends the stream after frame After with a connection reset.
	EditReset EditKind = "reset"
	// EditTruncate ends the stream cleanly after frame After.
	EditTruncate EditKind = "truncate"
	// EditWarp changes pacing: Scale multiplies the speed, Cap bounds every
	// wait between frames. With Request 0 it applies to every interaction.
	EditWarp EditKind = "warp"
	// EditPause waits For (on the clock, unscaled) before frame Frame.
	EditPause EditKind = "pause"
	// EditDrop removes frame Frame.
	EditDrop EditKind = "drop"
	// EditDup sends frame Frame twice.
	EditDup EditKind = "dup"
	// EditExpireContinue answers the Nth list request of Resource that
	// carries a continue token (the second page or later of a paged list)
	// as kube-apiserver does once etcd has compacted the token's
	// resourceVersion: 410 Expired, with a fresh token in the Status that
	// continues at the latest state. client-go's pager then lists again in
	// full; kubectl get prints the error and exits 1. Without the edit a
	// token stays valid for as long as the replay runs.
	EditExpireContinue EditKind = "expire-continue"
)

// Edit is one change to how a cassette replays. Edits are plain comparable
// values: print one with [Edit.String], parse one with [ParseEdit], store
// them in [cassettes.Header.Edits] or pass them in [Options.Edits].
//
// Syntax: KIND:key=value,key=value, for example
//
//	error:request=3,status=503,retry-after=1
//	error:request=1,match=/configmaps,status=500,reason=InternalError
//	watch-error:request=2,after=1,code=410
//	reset:request=2,after=3
//	truncate:request=2,after=3
//	warp:scale=10
//	warp:cap=100ms
//	pause:request=2,before=3,for=5s
//	drop:request=2,frame=3
//	dup:request=2,frame=3
//
// request=N names interaction N of the cassette (its ID, as in the text
// form). With match=S, request=N instead names the Nth interaction (in
// cassette order) whose URL path contains S; request defaults to 1 then.
// after=K counts frames served before the edit takes effect (0: right after
// the response headers). code is an alias of status for watch-error.
//
// Edits also reach clients whose requests differ from the recorded ones,
// through the timeline of the collection (see the package documentation):
//
//	watch-error:resource=configmaps,rv=201,code=410
//	watch-error:resource=configmaps,rv=201,code=410,skip=1
//	reset:resource=pods,namespace=prod,at=1.5s
//	error:resource=configmaps,verb=list,nth=2,status=503
//	error:resource=configmaps,verb=watch,nth=2,status=410
//	reset:resource=configmaps,verb=watch,nth=1
//	expire-continue:resource=configmaps,nth=1
//
// A watch-error, reset or truncate names a point: with request and after,
// the point the recorded interaction had reached after frame K; with
// resource (and optionally group and namespace), the point after the event
// at resourceVersion rv, or the last event recorded at or before at (from
// the cassette start). It fires once, on the first watch of that collection
// to cross the point, recorded or synthesized, from any client; a recorded
// interaction named by request is cut there as recorded, if no other watch
// crossed the point first. An error with resource fires on the nth request
// (default 1) of that resource and verb (get, list, watch, create, update,
// patch, delete, deletecollection; default any), whatever its query; an
// error with request fires on each attempt at that recorded interaction,
// one attempt per error edit, so the client's retry gets the recording.
// A 410 error with resource on a watch answers as a cluster whose etcd
// compacted the resourceVersion the watch asked for: 200 and an ERROR
// event 410 Expired "too old resource version", and so every later watch
// of the resource from that version or older (a streaming list not older
// than it is served, as the watch cache serves it); a watch from the
// newest version the world has served, or from none, gets it once. A
// reset with resource and verb (no rv or at) resets the nth request of
// that verb before its first byte; with after=K too, a reset or a
// watch-error (verb=watch) fails the nth watch once it has sent K frames
// (part-way through a streaming list's initial events):
// watch-error:resource=configmaps,verb=watch,nth=1,after=1,code=410; with
// before=bookmark instead of after, on the nth streaming list
// (sendInitialEvents=true; other watches are not counted) once its initial
// events are out, just before the bookmark that ends them:
// reset:resource=configmaps,verb=watch,nth=1,before=bookmark. With
// name (and namespace), an error or a reset by verb counts only the
// requests of that object:
// error:resource=configmaps,namespace=prod,name=alpha,verb=get,nth=2,status=500. An expire-continue fires on the nth (default 1) list request of that
// resource that carries a continue token.
type Edit struct {
	Kind EditKind
	// Request is the interaction ID, or with Match the 1-based rank among
	// interactions whose path contains Match. 0 for a global warp and for
	// an edit anchored by Resource.
	Request int
	// Resource anchors the edit on the collections of a resource (plural,
	// as in the URL), with Group ("" for the core group) and Namespace (""
	// for any) narrowing it.
	Resource, Group, Namespace string
	// Name narrows an error, or a reset with Verb, to the requests of one
	// object: its Nth get, update, patch or delete.
	Name string
	// Verb and Nth pick the request an error edit anchored by Resource
	// fires on: the Nth (from 1) with that verb ("" for any).
	Verb string
	Nth  int
	// RV and At place a watch-error, reset or truncate anchored by
	// Resource: after the event at resourceVersion RV, or after the last
	// event recorded at or before At.
	RV int64
	At time.Duration
	// Match restricts Request to interactions whose URL path contains it.
	Match string
	// After is the number of frames served before a watch-error, reset or
	// truncate.
	After int
	// BeforeBookmark (before=bookmark), on a reset or watch-error with
	// verb=watch, fails the Nth streaming list (a watch with
	// sendInitialEvents=true; other watches are not counted) once its
	// initial events are out, just before the bookmark that ends them.
	BeforeBookmark bool
	// Frame is the 1-based frame of a pause (before it), drop or dup.
	Frame int
	// Status is the HTTP status (error) or the Status code (watch-error).
	Status int
	// Reason is the metav1 StatusReason; default from Status.
	Reason string
	// RetryAfter is the Retry-After header in seconds (error only).
	RetryAfter int
	// For is the pause length.
	For time.Duration
	// Scale multiplies the replay speed (warp).
	Scale float64
	// Cap bounds every wait between frames (warp).
	Cap time.Duration
	// Skip, on a watch-error anchored by resource, moves the collection
	// past the next Skip recorded changes as the error fires, as a watch
	// that fell behind sees the world: its 410 comes once the server has
	// moved on, so the client's re-list holds changes its watch never
	// sent (a deletion among them). 0: the re-list finds the world where
	// the watch left it.
	Skip int
}

// editSyntax is the grammar of edits: the keys each kind takes, required
// ones marked with '!'.
var editSyntax = edit.Syntax{Bad: ErrBadEdit, Keys: map[string][]string{
	string(EditError):      {"request", "match", "resource", "group", "namespace", "name", "verb", "nth", "!status", "reason", "retry-after"},
	string(EditWatchError): {"request", "match", "resource", "group", "namespace", "verb", "nth", "after", "before", "rv", "at", "code", "status", "reason", "skip"},
	string(EditReset):      {"request", "match", "resource", "group", "namespace", "name", "verb", "nth", "after", "before", "rv", "at"},
	string(EditTruncate):   {"request", "match", "resource", "group", "namespace", "after", "rv", "at"},
	string(EditWarp):       {"request", "match", "scale", "cap"},
	string(EditPause):      {"request", "match", "!before", "!for"},
	string(EditDrop):       {"request", "match", "!frame"},
	string(EditDup):        {"request", "match", "!frame"},
	// expire-continue is always anchored by resource.
	string(EditExpireContinue): {"!resource", "group", "namespace", "nth"},
}}

// editSetters parse each key's value into its field of an Edit.
var editSetters = map[string]func(e *Edit, v string) error{
	"request":   func(e *Edit, v string) (err error) { e.Request, err = edit.Positive(v, 1); return err },
	"match":     func(e *Edit, v string) error { e.Match = v; return nil },
	"resource":  func(e *Edit, v string) error { e.Resource = v; return edit.Name(v) },
	"group":     func(e *Edit, v string) error { e.Group = v; return edit.Name(v) },
	"namespace": func(e *Edit, v string) error { e.Namespace = v; return edit.Name(v) },
	"name":      func(e *Edit, v string) error { e.Name = v; return edit.Name(v) },
	"verb":      func(e *Edit, v string) error { e.Verb = v; return edit.CheckVerb(v) },
	"nth":       func(e *Edit, v string) (err error) { e.Nth, err = edit.Positive(v, 1); return err },
	"rv":        func(e *Edit, v string) error { n, err := edit.Positive(v, 1); e.RV = int64(n); return err },
	"at":        func(e *Edit, v string) (err error) { e.At, err = edit.Duration("at", v, false); return err },
	"after":     func(e *Edit, v string) (err error) { e.After, err = edit.Positive(v, 0); return err },
	"skip":      func(e *Edit, v string) (err error) { e.Skip, err = edit.Positive(v, 1); return err },
	"before": func(e *Edit, v string) (err error) {
		if v == "bookmark" {
			e.BeforeBookmark = true
			return nil
		}
		e.Frame, err = edit.Positive(v, 1)
		return err
	},
	"frame":       func(e *Edit, v string) (err error) { e.Frame, err = edit.Positive(v, 1); return err },
	"status":      func(e *Edit, v string) (err error) { e.Status, err = edit.Status(v); return err },
	"code":        func(e *Edit, v string) (err error) { e.Status, err = edit.Status(v); return err },
	"reason":      func(e *Edit, v string) error { e.Reason = v; return edit.Reason(v) },
	"retry-after": func(e *Edit, v string) (err error) { e.RetryAfter, err = edit.Positive(v, 0); return err },
	"for":         func(e *Edit, v string) (err error) { e.For, err = edit.Duration("for", v, false); return err },
	"scale":       func(e *Edit, v string) (err error) { e.Scale, err = edit.Scale(v); return err },
	"cap":         func(e *Edit, v string) (err error) { e.Cap, err = edit.Duration("cap", v, true); return err },
}

// ParseEdit parses one edit in the syntax documented on [Edit]. Errors wrap
// [ErrBadEdit] and say which keys the kind takes.
func ParseEdit(s string) (Edit, error) {
	var e Edit
	kind, seen, err := editSyntax.Parse(s, func(k, v string) error { return editSetters[k](&e, v) })
	if err != nil {
		return Edit{}, err
	}
	e.Kind = EditKind(kind)
	if why := e.complete(seen); why != "" {
		return Edit{}, editSyntax.Error(s, kind, "%s", why)
	}
	return e, nil
}

// complete checks the keys of e go together and fills in the defaults;
// it returns what is wrong, "" for nothing.
func (e *Edit) complete(seen map[string]bool) string {
	switch {
	case e.Kind == EditWatchError && e.Status == 0:
		e.Status = 410
	case e.Kind == EditWarp && e.Scale == 0 && e.Cap == 0:
		return "give scale or cap"
	}
	anchored := e.Resource != ""
	switch {
	case anchored && (seen["request"] || seen["match"]):
		return "give request (or match) or resource, not both"
	case !anchored && (seen["group"] || seen["namespace"] || seen["name"] || seen["verb"] || seen["nth"] || seen["rv"] || seen["at"]):
		return "group, namespace, name, verb, nth, rv and at go with resource"
	case seen["name"] && e.Kind == EditReset && !seen["verb"]:
		return "name goes with verb: a reset of the Nth request of that verb on that object"
	case e.Kind == EditReset && seen["nth"] && !seen["verb"]:
		return "nth goes with verb: a reset before the first byte of the Nth request of that verb"
	case e.Kind == EditWatchError && seen["nth"] && !seen["verb"]:
		return "nth goes with verb: a watch-error after frame after of the Nth watch"
	case (e.Kind == EditReset || e.Kind == EditWatchError) && seen["verb"] && (seen["rv"] || seen["at"]):
		return "give rv or at (after that change), or verb (the Nth request of that verb), not both"
	case (e.Kind == EditReset || e.Kind == EditWatchError) && seen["before"] && (!e.BeforeBookmark || e.Verb != "watch" || seen["after"] || seen["name"]):
		return "before goes with verb=watch, as before=bookmark (the Nth streaming list, before the bookmark that ends its initial events), not with after"
	case e.Kind == EditPause && e.BeforeBookmark:
		return "a pause takes before=N, the frame it pauses before"
	case e.Kind == EditWatchError && seen["verb"] && (e.Verb != "watch" || !seen["after"] && !seen["before"]):
		return "a watch-error with verb takes verb=watch and after (the frames the Nth watch sends first) or before=bookmark"
	case anchored && e.Kind != EditError && e.Kind != EditExpireContinue && !((e.Kind == EditReset || e.Kind == EditWatchError) && seen["verb"]) && seen["rv"] == seen["at"]:
		return "give rv or at with resource"
	case anchored && seen["after"] && !seen["verb"]:
		return "after goes with request, or with resource and verb; with resource give rv or at"
	case !anchored && !seen["after"] && (e.Kind == EditWatchError || e.Kind == EditReset || e.Kind == EditTruncate):
		return "missing after"
	case !anchored && e.Skip > 0:
		return "skip goes with resource: it moves a collection's timeline"
	}
	if anchored {
		if (e.Kind == EditError || e.Kind == EditExpireContinue || (e.Kind == EditReset || e.Kind == EditWatchError) && e.Verb != "") && e.Nth == 0 {
			e.Nth = 1
		}
		return ""
	}
	if e.Kind != EditWarp && e.Request == 0 {
		if e.Match == "" {
			return "missing request"
		}
		e.Request = 1
	}
	if e.Kind == EditWarp && e.Match != "" && e.Request == 0 {
		e.Request = 1
	}
	return ""
}

// String returns the edit in [ParseEdit]'s syntax, keys in a fixed order, so
// ParseEdit(e.String()) == e.
func (e Edit) String() string {
	var kv []string
	add := func(k, v string) { kv = append(kv, k+"="+v) }
	if e.Request != 0 {
		add("request", strconv.Itoa(e.Request))
	}
	if e.Match != "" {
		add("match", e.Match)
	}
	for _, p := range [][2]string{{"resource", e.Resource}, {"group", e.Group}, {"namespace", e.Namespace}, {"name", e.Name}, {"verb", e.Verb}} {
		if p[1] != "" {
			add(p[0], p[1])
		}
	}
	if e.Nth != 0 {
		add("nth", strconv.Itoa(e.Nth))
	}
	if e.RV != 0 {
		add("rv", strconv.FormatInt(e.RV, 10))
	}
	if e.At != 0 {
		add("at", e.At.String())
	}
	e.kindKeys(add)
	if e.Reason != "" {
		add("reason", e.Reason)
	}
	if e.RetryAfter != 0 {
		add("retry-after", strconv.Itoa(e.RetryAfter))
	}
	return string(e.Kind) + ":" + strings.Join(kv, ",")
}

// kindKeys adds the keys only e's kind takes, for [Edit.String].
func (e Edit) kindKeys(add func(k, v string)) {
	anchored := e.Resource != ""
	switch e.Kind {
	case EditError:
		add("status", strconv.Itoa(e.Status))
	case EditWatchError:
		switch {
		case e.BeforeBookmark:
			add("before", "bookmark")
		case !anchored || e.Verb != "":
			add("after", strconv.Itoa(e.After))
		}
		add("code", strconv.Itoa(e.Status))
		if e.Skip != 0 {
			add("skip", strconv.Itoa(e.Skip))
		}
	case EditReset, EditTruncate:
		switch {
		case e.BeforeBookmark:
			add("before", "bookmark")
		case !anchored || e.Verb != "" && e.After > 0:
			add("after", strconv.Itoa(e.After))
		}
	case EditPause:
		add("before", strconv.Itoa(e.Frame))
		add("for", e.For.String())
	case EditDrop, EditDup:
		add("frame", strconv.Itoa(e.Frame))
	case EditWarp:
		if e.Scale != 0 {
			add("scale", strconv.FormatFloat(e.Scale, 'g', -1, 64))
		}
		if e.Cap != 0 {
			add("cap", e.Cap.String())
		}
	}
}
