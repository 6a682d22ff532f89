package match

import (
	"bytes"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/wire"
)

// volatileParams are the query parameters [Default] ignores: client-go
// picks a random timeoutSeconds (300-600 s) for every watch, and timeout is
// a per-call client deadline.
var volatileParams = []string{"timeoutSeconds", "timeout"}

// Default compares got with rec on method, URL path, canonical query, the
// body for requests that have one, and the response's media type against
// the request's Accept header (see replay.DefaultMatcher). It returns nil
// when rec may answer got, else the differences, live value first.
func Default(got *cassettes.Request, rec *cassettes.Interaction) []string {
	var diffs []string
	if !strings.EqualFold(got.Method, rec.Request.Method) {
		diffs = append(diffs, fmt.Sprintf("method %s vs %s", got.Method, rec.Request.Method))
	}
	gu, gerr := url.Parse(got.URL)
	ru, rerr := url.Parse(rec.Request.URL)
	if gerr != nil || rerr != nil {
		if got.URL != rec.Request.URL {
			diffs = append(diffs, fmt.Sprintf("url %s vs %s", got.URL, rec.Request.URL))
		}
		return diffs
	}
	if gu.Path != ru.Path {
		diffs = append(diffs, fmt.Sprintf("path %s vs %s", gu.Path, ru.Path))
	}
	diffs = append(diffs, QueryDiff(gu.Query(), ru.Query())...)
	if len(got.Body) > 0 || len(rec.Request.Body) > 0 {
		if !bytes.Equal(got.Body, rec.Request.Body) {
			diffs = append(diffs, fmt.Sprintf("body (%d bytes) vs recorded body (%d bytes)", len(got.Body), len(rec.Request.Body)))
		}
	}
	return append(diffs, acceptDiff(got, rec)...)
}

// acceptDiff compares the form got asks for with the one rec answered in.
func acceptDiff(got *cassettes.Request, rec *cassettes.Interaction) []string {
	var diffs []string
	if rec.Response != nil {
		ct := rec.Response.Header.Get("Content-Type")
		if acc := got.Header.Get("Accept"); ct != "" && acc != "" && !wire.Accepts(acc, ct) {
			diffs = append(diffs, fmt.Sprintf("accept %s does not take recorded %s", acc, wire.MediaType(ct)))
		}
	}
	// A Table (kubectl's server-side printing) is application/json too,
	// but not the same answer.
	if g, r := wantsTable(got), wantsTable(&rec.Request); g != r {
		diffs = append(diffs, map[bool]string{true: "accept asks for a Table vs recorded plain objects", false: "accept asks for plain objects vs a recorded Table"}[g])
	}
	return diffs
}

// QueryDiff compares two queries canonically: parameters sorted, values
// compared in order, timeoutSeconds and timeout ignored. It returns one
// phrase per differing parameter, live value first, "(absent)" for a
// missing one: "query resourceVersion=12 vs 10", "query watch (absent) vs
// true".
func QueryDiff(got, rec url.Values) []string {
	keys := map[string]bool{}
	for k := range got {
		keys[k] = true
	}
	for k := range rec {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		if !volatile(k) {
			sorted = append(sorted, k)
		}
	}
	slices.Sort(sorted)
	var diffs []string
	for _, k := range sorted {
		g, r := got[k], rec[k]
		if slices.Equal(g, r) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("query %s vs %s", showParam(k, g), showParam("", r)))
	}
	return diffs
}

// CanonicalQuery returns q encoded with sorted keys and without
// timeoutSeconds and timeout.
func CanonicalQuery(q url.Values) string {
	c := url.Values{}
	for k, v := range q {
		if !volatile(k) {
			c[k] = v
		}
	}
	return c.Encode()
}

func volatile(k string) bool { return slices.Contains(volatileParams, k) }

// showParam shows a live parameter as k=v and a recorded one as its value
// alone (k == ""), so a phrase reads "query resourceVersion=12 vs 10".
func showParam(k string, v []string) string {
	switch {
	case v == nil && k == "":
		return "(absent)"
	case v == nil:
		return k + " (absent)"
	case k == "":
		return strings.Join(v, ",")
	}
	return k + "=" + strings.Join(v, ",")
}

// wantsTable reports whether a request asks for kubectl's Table form.
func wantsTable(req *cassettes.Request) bool {
	_, ok := table.Wants(req.Header.Get("Accept"))
	return ok
}
