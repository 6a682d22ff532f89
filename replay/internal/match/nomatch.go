package match

import (
	"fmt"
	"net/url"
	"sort"
	"strings"

	"github.com/kwrec/kwrec/cassettes"
)

// Candidate is a recorded interaction and how it differs from a request:
// Diffs from the Matcher, or none and Used for one that matches but was
// already served.
type Candidate struct {
	ID    int
	Diffs []string
	Used  bool
}

// NoMatch builds the error for got when no recorded interaction answers
// it: sentinel (replay's ErrNoMatch or ErrExhausted) wrapped, the request,
// its three nearest candidates (fewest differences first), and extra, a
// reason in parentheses or "".
func NoMatch(sentinel error, got *cassettes.Request, cands []Candidate, extra string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", got.Method, pathAndQuery(got.URL))
	sort.SliceStable(cands, func(i, j int) bool { return len(cands[i].Diffs) < len(cands[j].Diffs) })
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
			case len(c.Diffs) == 0 && c.Used:
				fmt.Fprintf(&b, " #%d matches but was already served;", c.ID)
			default:
				fmt.Fprintf(&b, " #%d (%s);", c.ID, strings.Join(c.Diffs, ", "))
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

// pathAndQuery shows a request URL as its path and canonical query.
func pathAndQuery(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return raw
	}
	if u.RawQuery == "" {
		return u.Path
	}
	return u.Path + "?" + CanonicalQuery(u.Query())
}
