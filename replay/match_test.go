package replay_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

func TestDefaultMatcher(t *testing.T) {
	rec := &cassettes.Interaction{ID: 1,
		Request:  cassettes.Request{Method: "GET", URL: "https://h:6443/api/v1/pods?resourceVersion=10&watch=true&timeoutSeconds=300"},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
	}
	post := &cassettes.Interaction{ID: 2,
		Request:  cassettes.Request{Method: "POST", URL: "https://h/api/v1/namespaces/a/configmaps", Body: []byte(`{"a":1}`)},
		Response: &cassettes.Response{Status: 201, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}}},
	}
	for _, tc := range []struct {
		name string
		got  cassettes.Request
		rec  *cassettes.Interaction
		want []string
	}{
		{"a different timeoutSeconds and host still match", cassettes.Request{Method: "GET", URL: "http://other/api/v1/pods?timeoutSeconds=555&watch=true&resourceVersion=10"}, rec, nil},
		{"a dropped timeoutSeconds still matches", cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true&resourceVersion=10"}, rec, nil},
		{"another resourceVersion differs", cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true&resourceVersion=12"}, rec, []string{"query resourceVersion=12 vs 10"}},
		{"a missing parameter differs", cassettes.Request{Method: "GET", URL: "/api/v1/pods?resourceVersion=10"}, rec, []string{"query watch (absent) vs true"}},
		{"an extra parameter differs", cassettes.Request{Method: "GET", URL: "/api/v1/pods?resourceVersion=10&watch=true&labelSelector=a%3Db"}, rec, []string{"query labelSelector=a=b vs (absent)"}},
		{"method and path differ", cassettes.Request{Method: "DELETE", URL: "/api/v1/nodes?resourceVersion=10&watch=true"}, rec, []string{"method DELETE vs GET", "path /api/v1/nodes vs /api/v1/pods"}},
		{"a JSON-only client does not take a recorded protobuf response", cassettes.Request{Method: "POST", URL: "/api/v1/namespaces/a/configmaps", Body: []byte(`{"a":1}`), Header: http.Header{"Accept": {"application/json"}}}, post,
			[]string{"accept application/json does not take recorded application/vnd.kubernetes.protobuf"}},
		{"client-go's protobuf-or-JSON Accept takes either", cassettes.Request{Method: "POST", URL: "/api/v1/namespaces/a/configmaps", Body: []byte(`{"a":1}`), Header: http.Header{"Accept": {"application/vnd.kubernetes.protobuf,application/json"}}}, post, nil},
		{"another body differs", cassettes.Request{Method: "POST", URL: "/api/v1/namespaces/a/configmaps", Body: []byte(`{"a":2}`)}, post, []string{"body (7 bytes) vs recorded body (7 bytes)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, replay.DefaultMatcher(&tc.got, tc.rec)); d != "" {
				t.Errorf("diffs (-want +got):\n%s", d)
			}
		})
	}
}

func TestNoMatchErrorNamesRequestAndNearestCandidates(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name, method, url string
			before            int // identical requests sent first
			want              string
		}{
			{"another resourceVersion names the list first", "GET", cmPath + "?limit=500&resourceVersion=12", 0,
				"kwrec replay: no recorded interaction matches: GET " + cmPath + "?limit=500&resourceVersion=12; nearest recorded: #1 (query resourceVersion=12 vs 0); #2 (query allowWatchBookmarks (absent) vs true, query limit=500 vs (absent), query resourceVersion=12 vs 100, query watch (absent) vs true)"},
			{"another method", "DELETE", cmPath + "/a", 0,
				"kwrec replay: no recorded interaction matches: DELETE " + cmPath + "/a; nearest recorded: #1 (method DELETE vs GET, path " + cmPath + "/a vs " + cmPath + ", query limit (absent) vs 500, query resourceVersion (absent) vs 0); #2 (method DELETE vs GET, path " + cmPath + "/a vs " + cmPath + ", query allowWatchBookmarks (absent) vs true, query resourceVersion (absent) vs 100, query watch (absent) vs true)"},
			{"a repeat of a served request says so", "GET", cmPath + "?resourceVersion=0&limit=500", 1,
				"kwrec replay: no recorded interaction matches: GET " + cmPath + "?limit=500&resourceVersion=0; nearest recorded: #1 matches but was already served; #2 (query allowWatchBookmarks (absent) vs true, query limit=500 vs (absent), query resourceVersion=0 vs 100, query watch (absent) vs true)"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Strict: true})
				send := func() (*http.Response, error) {
					req, _ := http.NewRequestWithContext(context.Background(), tc.method, "https://x"+tc.url, nil)
					return r.RoundTrip(req)
				}
				for range tc.before {
					resp, err := send()
					if err != nil {
						t.Fatal(err)
					}
					resp.Body.Close()
				}
				_, err := send()
				if !errors.Is(err, replay.ErrNoMatch) {
					t.Fatalf("err = %v, want ErrNoMatch", err)
				}
				if d := cmp.Diff(tc.want, err.Error()); d != "" {
					t.Errorf("message (-want +got):\n%s", d)
				}
			})
		}
	})
}

func TestACustomMatcherDecidesWhatAnswers(t *testing.T) {
	// pathOnly lets a recorded GET answer any request for its path,
	// whatever the query: a Matcher as go-vcr users write one.
	pathOnly := func(got *cassettes.Request, rec *cassettes.Interaction) []string {
		g, _ := url.Parse(got.URL)
		r, _ := url.Parse(rec.Request.URL)
		if g.Path != r.Path {
			return []string{"path " + g.Path + " vs " + r.Path}
		}
		return nil
	}
	r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Strict: true, Matcher: pathOnly})
	// The recorded list was ?limit=500&resourceVersion=0; the default
	// matcher would refuse a labelSelector it never recorded.
	resp, err := r.RoundTrip(rawRequest(cmPath + "?labelSelector=app%3Dother"))
	if err != nil {
		t.Fatalf("a request the Matcher accepts: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(b), `"name":"b"`) {
		t.Errorf("answered %s, want the recorded list (a and b, unfiltered)", b)
	}
	_, err = r.RoundTrip(rawRequest("/api/v1/namespaces/default/secrets"))
	if !errors.Is(err, replay.ErrNoMatch) || !strings.Contains(err.Error(), "path /api/v1/namespaces/default/secrets vs "+cmPath) {
		t.Errorf("a request the Matcher refuses: %v, want ErrNoMatch naming the Matcher's difference", err)
	}
}
