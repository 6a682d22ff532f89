package match_test

import (
	"errors"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/match"
)

func TestCanonicalQuery(t *testing.T) {
	q, _ := url.ParseQuery("watch=true&timeoutSeconds=412&allowWatchBookmarks=true&resourceVersion=5&timeout=1m")
	if got, want := match.CanonicalQuery(q), "allowWatchBookmarks=true&resourceVersion=5&watch=true"; got != want {
		t.Errorf("CanonicalQuery = %q, want %q", got, want)
	}
}

func TestQueryDiff(t *testing.T) {
	for _, tc := range []struct {
		name, got, rec string
		want           []string
	}{
		{"the same parameters in another order match", "b=2&a=1", "a=1&b=2", nil},
		{"timeoutSeconds and timeout are ignored", "a=1&timeoutSeconds=5", "a=1&timeout=1m", nil},
		{"a differing value names the live one first", "resourceVersion=12", "resourceVersion=10", []string{"query resourceVersion=12 vs 10"}},
		{"a parameter missing live is absent", "", "watch=true", []string{"query watch (absent) vs true"}},
		{"a parameter missing in the recording is absent", "limit=5", "", []string{"query limit=5 vs (absent)"}},
		{"differences come sorted by parameter", "b=1&a=1", "b=2&a=2", []string{"query a=1 vs 2", "query b=1 vs 2"}},
		{"repeated values compare in order", "x=1&x=2", "x=2&x=1", []string{"query x=1,2 vs 2,1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := url.ParseQuery(tc.got)
			r, _ := url.ParseQuery(tc.rec)
			if d := cmp.Diff(tc.want, match.QueryDiff(g, r)); d != "" {
				t.Errorf("QueryDiff (-want +got):\n%s", d)
			}
		})
	}
}

func TestNoMatch(t *testing.T) {
	sentinel := errors.New("no recorded interaction matches")
	got := &cassettes.Request{Method: "GET", URL: "https://x/api/v1/pods?watch=true&timeoutSeconds=9&resourceVersion=3"}
	for _, tc := range []struct {
		name  string
		cands []match.Candidate
		extra string
		want  string
	}{
		{"an empty cassette says so", nil, "",
			"kwrec replay: no recorded interaction matches: GET /api/v1/pods?resourceVersion=3&watch=true: the cassette has no interactions"},
		{"the nearest come first, a served match named", []match.Candidate{{ID: 1, Diffs: []string{"a", "b"}}, {ID: 2, Used: true}}, "(why)",
			"kwrec replay: no recorded interaction matches: GET /api/v1/pods?resourceVersion=3&watch=true; nearest recorded: #2 matches but was already served; #1 (a, b); (why)"},
		{"at most three are named", []match.Candidate{{ID: 1, Diffs: []string{"a"}}, {ID: 2, Diffs: []string{"b"}}, {ID: 3, Diffs: []string{"c"}}, {ID: 4, Diffs: []string{"d"}}}, "",
			"kwrec replay: no recorded interaction matches: GET /api/v1/pods?resourceVersion=3&watch=true; nearest recorded: #1 (a); #2 (b); #3 (c); (and 1 more)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := match.NoMatch(sentinel, got, tc.cands, tc.extra)
			if !errors.Is(err, sentinel) {
				t.Errorf("%v does not wrap the sentinel", err)
			}
			if d := cmp.Diff(tc.want, err.Error()); d != "" {
				t.Errorf("message (-want +got):\n%s", d)
			}
		})
	}
}
