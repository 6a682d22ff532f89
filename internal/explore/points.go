package explore

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/kwrec/kwrec/replay"
)

// FaultKind is a kind of fault an exploration injects.
type FaultKind string

// The fault kinds. Watch faults are placed after each recorded change of a
// collection the code under test watched; list faults on each list it
// made; write faults on each write it made (create, update, patch, delete,
// deletecollection), in the reference run.
const (
	// FaultExpired ends the watch with a 410 Expired ERROR event: the
	// client must list again, and finds the world where its watch left.
	FaultExpired FaultKind = "410"
	// FaultBehind is a 410 as a watch that fell behind gets it: the
	// world moves past the next recorded change as the error comes
	// (replay.Edit.Skip 1), so the client's re-list holds a change its
	// watch never sent, a deletion perhaps.
	FaultBehind FaultKind = "410behind"
	// FaultReset resets the watch's connection.
	FaultReset FaultKind = "reset"
	// FaultList500 and FaultList503 answer a list with 500 InternalError
	// and 503 ServiceUnavailable.
	FaultList500 FaultKind = "list500"
	FaultList503 FaultKind = "list503"
	// FaultConflict, FaultWrite500 and FaultThrottled answer a write with
	// 409 Conflict, 500 InternalError and 429 TooManyRequests with
	// Retry-After: 1 (client-go waits and retries a 429 itself).
	FaultConflict  FaultKind = "409"
	FaultWrite500  FaultKind = "500"
	FaultThrottled FaultKind = "429"
	// FaultGet500 and FaultGet503 answer a get with 500 InternalError
	// and 503 ServiceUnavailable.
	FaultGet500 FaultKind = "get500"
	FaultGet503 FaultKind = "get503"
	// The watch-open faults refuse the request that opens a watch (an
	// informer's initial sync included, which client-go v0.37 makes a
	// streaming watch): FaultWatchCompacted as a cluster whose etcd
	// compacted the resourceVersion asked for (200 and an ERROR 410
	// Expired "too old resource version", and so every later watch from
	// that version or older: the client must list again);
	// FaultWatch429 with Retry-After: 1, FaultWatch500, FaultWatch503;
	// FaultWatchReset resets the connection before the first byte
	// (client-go retries that itself).
	FaultWatchCompacted FaultKind = "watch410"
	FaultWatch429       FaultKind = "watch429"
	FaultWatch500       FaultKind = "watch500"
	FaultWatch503       FaultKind = "watch503"
	FaultWatchReset     FaultKind = "watchreset"
	// FaultWatchCut410 and FaultWatchCutReset fail a watch after the
	// first frame it sends, with a 410 ERROR event or a connection reset:
	// for a streaming list (an informer's initial sync), part-way
	// through its initial events.
	FaultWatchCut410   FaultKind = "watchcut410"
	FaultWatchCutReset FaultKind = "watchcutreset"
	// FaultBookmarkReset resets a streaming list (an informer's initial
	// sync) once its initial events are out, just before the bookmark
	// that ends them: the client has every object and must not take the
	// sync for done.
	FaultBookmarkReset FaultKind = "bookmarkreset"
	// FaultTimeout ends a watch after a change as the server ends one at
	// its timeoutSeconds: a clean end of the stream, no error.
	FaultTimeout FaultKind = "timeout"
)

// AllFaults are the kinds an exploration injects by default.
var AllFaults = []FaultKind{FaultExpired, FaultBehind, FaultReset, FaultTimeout, FaultList500, FaultList503,
	FaultGet500, FaultGet503, FaultWatchCompacted, FaultWatch429, FaultWatch500, FaultWatch503, FaultWatchReset,
	FaultWatchCut410, FaultWatchCutReset, FaultBookmarkReset, FaultConflict, FaultWrite500, FaultThrottled}

// ParseKinds parses a comma-separated list of fault kinds, such as
// "410,list500"; "" is nil, which [Select] reads as [AllFaults]. An
// unknown kind is an error naming it and the known ones.
func ParseKinds(s string) ([]FaultKind, error) {
	if s == "" {
		return nil, nil
	}
	var out []FaultKind
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if !slices.Contains(AllFaults, FaultKind(k)) {
			return nil, fmt.Errorf("unknown fault kind %q: want a comma-separated list of %s", k, kindList())
		}
		if !slices.Contains(out, FaultKind(k)) {
			out = append(out, FaultKind(k))
		}
	}
	return out, nil
}

// kindList is AllFaults as "a, b or c".
func kindList() string {
	s := make([]string, len(AllFaults))
	for i, k := range AllFaults {
		s[i] = string(k)
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}

// Point is one fault an exploration injects: its name and the edit.
type Point struct {
	// Name says what is injected where, for example
	// "410@configmaps/default:rv=215" (after the change at recorded
	// resourceVersion 215 of the ConfigMaps of default) or
	// "409@update:configmaps/default/alpha:nth=2" (the second update of
	// ConfigMap default/alpha).
	Name string
	Edit replay.Edit
	// Then, in a point of two faults (Select.Depth 2), is the second,
	// placed after Edit; nil for one fault.
	Then *replay.Edit
}

// Edits returns the point's edits: Edit, then Then if set.
func (p Point) Edits() []replay.Edit {
	if p.Then == nil {
		return []replay.Edit{p.Edit}
	}
	return []replay.Edit{p.Edit, *p.Then}
}

// String is the point's edits as their syntax, joined by " then ".
func (p Point) String() string {
	s := p.Edit.String()
	if p.Then != nil {
		s += " then " + p.Then.String()
	}
	return s
}

// Select selects the points [Points] returns.
type Select struct {
	// Kinds are the kinds tried; nil for [AllFaults].
	Kinds []FaultKind
	// Max, when above 0, keeps a sample of Max points, drawn with Seed
	// (the same sample for the same points and Seed); 0 keeps every point.
	Max  int
	Seed uint64
	// Depth 2 tries two faults at once: Max pairs (by default as many
	// pairs as there are single points) drawn with Seed from the points,
	// the second placed after the first in the points' order (recovery
	// code failing in its turn). 0 and 1 try one fault a point.
	Depth int
}

// Points lists the points of the kinds sel selects, from the changes and
// requests of a reference run ([replay.Replayer.Changes],
// [replay.Replayer.Requests]): after each change of a watched resource,
// on each list, get, watch and write; then the sample of sel.Max.
func Points(changes []replay.Change, requests []replay.RequestCount, sel Select) []Point {
	kinds := sel.Kinds
	if kinds == nil {
		kinds = AllFaults
	}
	out := watchFaultPoints(nil, changes, requests, kinds)
	out = requestFaultPoints(out, requests, kinds)
	if sel.Depth == 2 {
		return pairs(out, sel.Max, sel.Seed)
	}
	if sel.Max > 0 && len(out) > sel.Max {
		rng := rand.New(rand.NewPCG(sel.Seed, sel.Seed^0x6b77726563))
		idx := rng.Perm(len(out))[:sel.Max]
		slices.Sort(idx)
		sample := make([]Point, 0, sel.Max)
		for _, i := range idx {
			sample = append(sample, out[i])
		}
		out = sample
	}
	return out
}

// watchFaultPoints appends to out the watch faults of kinds after each
// change of a resource the requests watched.
func watchFaultPoints(out []Point, changes []replay.Change, requests []replay.RequestCount, kinds []FaultKind) []Point {
	for _, c := range changes {
		if made(requests, "watch", c.Group, c.Resource) == 0 {
			continue
		}
		where := fmt.Sprintf("%s/%s:rv=%d", ResourceName(c.Group, c.Resource), c.Namespace, c.RV)
		if c.Namespace == "" {
			where = fmt.Sprintf("%s:rv=%d", ResourceName(c.Group, c.Resource), c.RV)
		}
		at := replay.Edit{Resource: c.Resource, Group: c.Group, Namespace: c.Namespace, RV: c.RV}
		if slices.Contains(kinds, FaultExpired) {
			e := at
			e.Kind, e.Status = replay.EditWatchError, 410
			out = append(out, Point{Name: "410@" + where, Edit: e})
		}
		if slices.Contains(kinds, FaultBehind) {
			e := at
			e.Kind, e.Status, e.Skip = replay.EditWatchError, 410, 1
			out = append(out, Point{Name: "410behind@" + where, Edit: e})
		}
		if slices.Contains(kinds, FaultReset) {
			e := at
			e.Kind = replay.EditReset
			out = append(out, Point{Name: "reset@" + where, Edit: e})
		}
		if slices.Contains(kinds, FaultTimeout) {
			e := at
			e.Kind = replay.EditTruncate
			out = append(out, Point{Name: "timeout@" + where, Edit: e})
		}
	}
	return out
}

// requestFaultPoints appends to out the list and write faults of kinds
// on each list and each write of the requests. A get, update, patch or
// delete of one object is counted, and named, by object where requests
// holds the counts of objects ([replay.Replayer.ObjectRequests]); its
// count by resource is then passed over.
func requestFaultPoints(out []Point, requests []replay.RequestCount, kinds []FaultKind) []Point {
	byObject := map[string]bool{}
	for _, c := range requests {
		if c.Name != "" {
			byObject[c.Verb+" "+c.Group+" "+c.Resource] = true
		}
	}
	for _, c := range requests {
		if c.Name == "" && byObject[c.Verb+" "+c.Group+" "+c.Resource] {
			continue
		}
		switch c.Verb {
		case "list":
			if slices.Contains(kinds, FaultList500) {
				out = errorPoints(out, 500, 0, c)
			}
			if slices.Contains(kinds, FaultList503) {
				out = errorPoints(out, 503, 0, c)
			}
		case "get":
			if slices.Contains(kinds, FaultGet500) {
				out = errorPoints(out, 500, 0, c)
			}
			if slices.Contains(kinds, FaultGet503) {
				out = errorPoints(out, 503, 0, c)
			}
		case "watch":
			out = watchOpenPoints(out, kinds, c)
		case "create", "update", "patch", "delete", "deletecollection":
			if slices.Contains(kinds, FaultConflict) {
				out = errorPoints(out, 409, 0, c)
			}
			if slices.Contains(kinds, FaultWrite500) {
				out = errorPoints(out, 500, 0, c)
			}
			if slices.Contains(kinds, FaultThrottled) {
				out = errorPoints(out, 429, 1, c)
			}
		}
	}
	return out
}

// errorPoints appends to out a point answering each of the c.N requests
// counted in c with status (and Retry-After: retryAfter, when above 0).
func errorPoints(out []Point, status, retryAfter int, c replay.RequestCount) []Point {
	what := ResourceName(c.Group, c.Resource)
	switch {
	case c.Name != "" && c.Namespace != "":
		what += "/" + c.Namespace + "/" + c.Name
	case c.Name != "":
		what += "/" + c.Name
	}
	for n := 1; n <= c.N; n++ {
		e := replay.Edit{Kind: replay.EditError, Resource: c.Resource, Group: c.Group, Namespace: c.Namespace, Name: c.Name,
			Verb: c.Verb, Nth: n, Status: status, RetryAfter: retryAfter}
		out = append(out, Point{Name: fmt.Sprintf("%d@%s:%s:nth=%d", status, c.Verb, what, n), Edit: e})
	}
	return out
}

// watchOpenPoints appends to out the watch-open faults of kinds on each
// of the c.N watches counted in c.
func watchOpenPoints(out []Point, kinds []FaultKind, c replay.RequestCount) []Point {
	for n := 1; n <= c.N; n++ {
		at := replay.Edit{Kind: replay.EditError, Resource: c.Resource, Group: c.Group, Verb: "watch", Nth: n}
		for _, k := range []struct {
			kind       FaultKind
			status     int
			retryAfter int
		}{{FaultWatchCompacted, 410, 0}, {FaultWatch429, 429, 1}, {FaultWatch500, 500, 0}, {FaultWatch503, 503, 0}} {
			if slices.Contains(kinds, k.kind) {
				e := at
				e.Status, e.RetryAfter = k.status, k.retryAfter
				out = append(out, Point{Name: fmt.Sprintf("%d@watch-open:%s:nth=%d", k.status, ResourceName(c.Group, c.Resource), n), Edit: e})
			}
		}
		if slices.Contains(kinds, FaultWatchReset) {
			e := at
			e.Kind = replay.EditReset
			out = append(out, Point{Name: fmt.Sprintf("reset@watch-open:%s:nth=%d", ResourceName(c.Group, c.Resource), n), Edit: e})
		}
		if slices.Contains(kinds, FaultWatchCut410) {
			e := at
			e.Kind, e.Status, e.After = replay.EditWatchError, 410, 1
			out = append(out, Point{Name: fmt.Sprintf("410@watch:%s:nth=%d,after=1", ResourceName(c.Group, c.Resource), n), Edit: e})
		}
		if slices.Contains(kinds, FaultWatchCutReset) {
			e := at
			e.Kind, e.After = replay.EditReset, 1
			out = append(out, Point{Name: fmt.Sprintf("reset@watch:%s:nth=%d,after=1", ResourceName(c.Group, c.Resource), n), Edit: e})
		}
	}
	if slices.Contains(kinds, FaultBookmarkReset) {
		// Streaming lists are counted among themselves (before=bookmark).
		for n := 1; n <= c.Streaming; n++ {
			e := replay.Edit{Kind: replay.EditReset, Resource: c.Resource, Group: c.Group, Verb: "watch", Nth: n, BeforeBookmark: true}
			out = append(out, Point{Name: fmt.Sprintf("reset@watch-list:%s:nth=%d,before=bookmark", ResourceName(c.Group, c.Resource), n), Edit: e})
		}
	}
	return out
}

// made is how many requests of verb the requests counted for resource of
// group, 0 for none.
func made(requests []replay.RequestCount, verb, group, resource string) int {
	for _, c := range requests {
		if c.Verb == verb && c.Group == group && c.Resource == resource && c.Name == "" {
			return c.N
		}
	}
	return 0
}

// ResourceName is resource.group as kubectl names it, the resource alone
// for the core group.
func ResourceName(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

// errShard is what a shard spec that is not "i/n" with 1 <= i <= n is
// told.
const errShard = "want i/n with 1 <= i <= n, such as 2/4"

// Shard keeps the points of shard spec "i/n" (1 <= i <= n): those whose
// rank is i modulo n, one shard of a CI job matrix; all of them for "".
// A spec of another form is an error saying what is wanted.
func Shard(points []Point, spec string) ([]Point, error) {
	if spec == "" {
		return points, nil
	}
	a, b, ok := strings.Cut(spec, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 1 || i > n {
		return nil, errors.New(errShard)
	}
	var out []Point
	for k, p := range points {
		if k%n == i-1 {
			out = append(out, p)
		}
	}
	return out, nil
}

// FileName makes a point's name a file name: "410@configmaps/default:rv=2"
// is "410_configmaps_default_rv_2".
func FileName(point string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '/', ':', '=', '@':
			return '_'
		}
		return r
	}, point)
}
