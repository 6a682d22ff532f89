package replay

import (
	"bytes"
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/wire"
)

// A Matcher compares a live request (got, with its URL, headers and body
// filled in) with a recorded interaction. It returns nil when the recorded
// interaction may answer the request, else the differences, each a short
// phrase such as "query resourceVersion=12 vs 10" (live value first). The
// differences also rank the nearest candidates in [ErrNoMatch] messages:
// fewer is nearer. A Matcher must be a pure function; it is called with the
// [Replayer]'s lock held.
type Matcher func(got *cassettes.Request, rec *cassettes.Interaction) []string

// volatileParams are the query parameters [DefaultMatcher] ignores: client-go
// picks a random timeoutSeconds (300-600 s) for every watch, and timeout is a
// per-call client deadline.
var volatileParams = []string{"timeoutSeconds", "timeout"}

// DefaultMatcher matches on method, URL path, canonical query (parameters
// sorted, timeoutSeconds and timeout ignored: client-go picks a random timeoutSeconds
// for every watch), the body for requests that have one, and
// the response's media type against the request's Accept header: a JSON-only
// client is not answered with a recorded protobuf stream, while client-go's
// "application/vnd.kubernetes.protobuf,application/json" takes either.
func DefaultMatcher(got *cassettes.Request, rec *cassettes.Interaction) []string {
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
	diffs = append(diffs, queryDiff(gu.Query(), ru.Query())...)
	if len(got.Body) > 0 || len(rec.Request.Body) > 0 {
		if !bytes.Equal(got.Body, rec.Request.Body) {
			diffs = append(diffs, fmt.Sprintf("body (%d bytes) vs recorded body (%d bytes)", len(got.Body), len(rec.Request.Body)))
		}
	}
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

// queryDiff compares two queries canonically: parameters sorted, values
// compared in order, timeoutSeconds and timeout ignored. It returns one phrase per
// differing parameter, live value first, "(absent)" for a missing one:
// "query resourceVersion=12 vs 10", "query watch (absent) vs true".
func queryDiff(got, rec url.Values) []string {
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
	sort.Strings(sorted)
	var diffs []string
	for _, k := range sorted {
		g, r := got[k], rec[k]
		if equalStrings(g, r) {
			continue
		}
		diffs = append(diffs, fmt.Sprintf("query %s vs %s", showParam(k, g), showParam("", r)))
	}
	return diffs
}

// canonicalQuery returns q encoded with sorted keys and without
// timeoutSeconds and timeout.
func canonicalQuery(q url.Values) string {
	c := url.Values{}
	for k, v := range q {
		if !volatile(k) {
			c[k] = v
		}
	}
	return c.Encode()
}

func volatile(k string) bool {
	for _, v := range volatileParams {
		if k == v {
			return true
		}
	}
	return false
}

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

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// wantsTable reports whether a request asks for kubectl's Table form.
func wantsTable(req *cassettes.Request) bool {
	_, ok := table.Wants(req.Header.Get("Accept"))
	return ok
}

// candidate is a recorded interaction and how it differs from a request.
type candidate struct {
	id    int
	diffs []string
	used  bool
}

// noMatchError builds the ErrNoMatch (or ErrExhausted) error for got.
func noMatchError(sentinel error, got *cassettes.Request, cands []candidate, extra string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", got.Method, pathAndQuery(got.URL))
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].diffs) < len(cands[j].diffs) })
	if len(cands) == 0 {
		b.WriteString(": the cassette has no interactions")
	} else {
		b.WriteString("; nearest recorded:")
		for i, c := range cands {
			if i == 3 {
				fmt.Fprintf(&b, " (and %d more)", len(cands)-3)
				break
			}
			switch {
			case len(c.diffs) == 0 && c.used:
				fmt.Fprintf(&b, " #%d matches but was already served;", c.id)
			default:
				fmt.Fprintf(&b, " #%d (%s);", c.id, strings.Join(c.diffs, ", "))
			}
		}
	}
	if extra != "" {
		b.WriteString(" ")
		b.WriteString(extra)
	}
	msg := strings.TrimSuffix(b.String(), ";")
	return fmt.Errorf("kwrec replay: %w: %s", sentinel, msg)
}

func pathAndQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.RawQuery == "" {
		return u.Path
	}
	return u.Path + "?" + canonicalQuery(u.Query())
}
