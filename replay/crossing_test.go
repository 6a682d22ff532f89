package replay_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// The request shapes real clients send for the watch of
// testdata/configmaps.kwrec (see DESIGN.md, "Replay as a timeline").
var watchShapes = []struct {
	client, first, again string
	// initial lists what a streaming list sends before the events.
	initial, initialAgain []string
}{
	{client: "kwrec's watcher (the recorded request)",
		first: "?allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=412&watch=true",
		again: "?allowWatchBookmarks=true&resourceVersion=101&timeoutSeconds=412&watch=true"},
	{client: "kubectl get -w",
		first: "?resourceVersion=100&watch=true",
		again: "?resourceVersion=101&watch=true"},
	{client: "python3-kubernetes watch.Watch().stream",
		first: "?resourceVersion=100&timeoutSeconds=5&watch=True",
		again: "?resourceVersion=101&timeoutSeconds=5&watch=True"},
	{client: "a client-go informer with WatchListClient on",
		first:        "?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=300&watch=true",
		again:        "?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=300&watch=true",
		initial:      []string{"ADDED a@90", "ADDED b@95", "BOOKMARK @100 initial-events-end"},
		initialAgain: []string{"ADDED a@90", "ADDED b@95", "ADDED c@101", "BOOKMARK @101 initial-events-end"}},
}

// withRecordedError returns the fixture with a 410 ERROR event hand-written
// into the recorded watch (#2) after its first event, as a user would in
// the text form.
func withRecordedError(t *testing.T) *cassettes.Cassette {
	c := fixture(t, "configmaps.kwrec")
	in := c.Interactions[1]
	errFrame := cassettes.Frame{At: in.Frames[0].At, Data: []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (101)","reason":"Expired","code":410}}` + "\n")}
	in.Frames = append(in.Frames[:1], append([]cassettes.Frame{errFrame}, in.Frames[1:]...)...)
	return c
}

// watchLines serves one watch of default's ConfigMaps and returns its
// events, summarised, until the stream ends (the replay is exhausted or
// the stream is cut).
func watchLines(t *testing.T, r *replay.Replayer, pathQuery string) []string {
	t.Helper()
	return watchAt(t, r, cmPath+pathQuery)
}

// watchAt is watchLines of any collection's path and query.
func watchAt(t *testing.T, r *replay.Replayer, pathQuery string) []string {
	t.Helper()
	req := rawRequest(pathQuery)
	req = req.WithContext(ctxT(t))
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		out = append(out, summarizeLine(sc.Bytes()))
	}
	return out
}

func summarizeLine(line []byte) string {
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Code     int `json:"code"`
			Metadata struct {
				Name            string            `json:"name"`
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"object"`
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		return "garbage " + string(line)
	}
	md := ev.Object.Metadata
	switch {
	case ev.Type == "ERROR":
		return fmt.Sprintf("ERROR %d", ev.Object.Code)
	case ev.Type == "BOOKMARK" && md.Annotations["k8s.io/initial-events-end"] == "true":
		return "BOOKMARK @" + md.ResourceVersion + " initial-events-end"
	}
	return ev.Type + " " + md.Name + "@" + md.ResourceVersion
}

func TestEveryClientsWatchCrossesTheFailureOnce(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		failures := []struct {
			name  string
			edits []string
			c     func(t *testing.T) *cassettes.Cassette
		}{
			{"an edit on the recorded watch, after its first event", []string{"watch-error:request=2,after=1,code=410"}, func(t *testing.T) *cassettes.Cassette { return fixture(t, "configmaps.kwrec") }},
			{"an edit anchored on the timeline at resourceVersion 101", []string{"watch-error:resource=configmaps,rv=101,code=410"}, func(t *testing.T) *cassettes.Cassette { return fixture(t, "configmaps.kwrec") }},
			{"an edit anchored on the timeline at 150ms", []string{"watch-error:resource=configmaps,namespace=default,at=150ms,code=410"}, func(t *testing.T) *cassettes.Cassette { return fixture(t, "configmaps.kwrec") }},
			{"an ERROR event hand-written into the cassette", nil, withRecordedError},
		}
		for _, fail := range failures {
			for _, shape := range watchShapes {
				t.Run(fail.name+", "+shape.client, func(t *testing.T) {
					var edits []replay.Edit
					for _, s := range fail.edits {
						e, err := replay.ParseEdit(s)
						if err != nil {
							t.Fatal(err)
						}
						edits = append(edits, e)
					}
					r := src.replayer(t, fail.c(t), replay.Options{Edits: edits, ErrorWhenExhausted: true})
					want := append(append([]string{}, shape.initial...), "ADDED c@101", "ERROR 410")
					if d := cmp.Diff(want, watchLines(t, r, shape.first)); d != "" {
						t.Errorf("first watch (-want +got):\n%s", d)
					}
					// The client recovers: it re-watches (or re-lists) from
					// where it was and gets the rest, no event lost or repeated,
					// and no second failure.
					want = append(append([]string{}, shape.initialAgain...), "MODIFIED a@102", "DELETED b@103", "ADDED d@104")
					got := watchLines(t, r, shape.again)
					if n := len(got); n > 0 && strings.HasPrefix(got[n-1], "BOOKMARK @104") {
						got = got[:n-1] // allowWatchBookmarks: the last resourceVersion
					}
					if d := cmp.Diff(want, got); d != "" {
						t.Errorf("watch after the failure (-want +got):\n%s", d)
					}
					for _, e := range r.Edits() {
						if e.Fired != 1 {
							t.Errorf("edit %s", e)
						}
					}
				})
			}
		}
	})
}

func TestAnEditNoWatchReachesIsReportedAsNotFired(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct{ edit, want string }{
			{"watch-error:resource=secrets,rv=101,code=410", "watch-error:resource=secrets,rv=101,code=410 at nowhere: the cassette records no list or watch of secrets: did not fire"},
			{"watch-error:resource=configmaps,rv=900,code=410", "watch-error:resource=configmaps,rv=900,code=410 at /api/v1/namespaces/default/configmaps at resourceVersion 900, past the last recorded one (104): no watch will reach it: did not fire"},
			{"error:resource=configmaps,verb=get,nth=1,status=500", "error:resource=configmaps,verb=get,nth=1,status=500 at request 1 of configmaps, verb get: did not fire"},
			{"reset:request=2,after=3", "reset:request=2,after=3 at interaction 2 after frame 3 (/api/v1/namespaces/default/configmaps at resourceVersion 103): did not fire"},
		} {
			t.Run(tc.edit, func(t *testing.T) {
				e, err := replay.ParseEdit(tc.edit)
				if err != nil {
					t.Fatal(err)
				}
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: []replay.Edit{e}})
				// A client that lists and never watches.
				rawGet(t, r, ctxT(t), cmPath+"?limit=500&resourceVersion=0").Body.Close()
				if d := cmp.Diff([]string{tc.want}, reportStrings(r)); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
			})
		}
	})
}

func reportStrings(r *replay.Replayer) []string {
	var out []string
	for _, e := range r.Edits() {
		out = append(out, e.String())
	}
	return out
}

func TestAnErrorEditAnchoredOnAResourceFiresOnItsNthRequestWhateverItsQuery(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		e, err := replay.ParseEdit("error:resource=configmaps,verb=list,nth=2,status=503,retry-after=1")
		if err != nil {
			t.Fatal(err)
		}
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: []replay.Edit{e}})
		var codes []int
		for _, pq := range []string{
			"?limit=500&resourceVersion=0",    // list 1: the recording
			"?resourceVersion=100&watch=true", // a watch: not counted
			"/a",                              // a get: not counted
			"?labelSelector=app%3Ddemo",       // list 2: the error
			"?labelSelector=app%3Ddemo",       // list 3: the timeline
		} {
			req := rawRequest(cmPath + pq).WithContext(ctxT(t))
			resp, err := r.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			codes = append(codes, resp.StatusCode)
			if resp.StatusCode == http.StatusServiceUnavailable {
				b, _ := io.ReadAll(resp.Body)
				if !strings.Contains(string(b), `"reason":"ServiceUnavailable"`) || resp.Header.Get("Retry-After") != "1" {
					t.Errorf("the error's body %s, Retry-After %q", b, resp.Header.Get("Retry-After"))
				}
			}
			resp.Body.Close()
		}
		if d := cmp.Diff([]int{200, 200, 200, 503, 200}, codes); d != "" {
			t.Errorf("status codes (-want +got):\n%s", d)
		}
		if d := cmp.Diff([]string{"error:resource=configmaps,verb=list,nth=2,status=503,retry-after=1 at request 2 of configmaps, verb list: fired 1 time(s)"}, reportStrings(r)); d != "" {
			t.Errorf("report (-want +got):\n%s", d)
		}
	})
}

// TestAnAnchoredEditFiresInOverlayMode places a watch-error after the
// change at recorded resourceVersion 101 of default's ConfigMaps, in
// Overlay mode, where a namespace's watches are answered from the
// all-namespaces timeline (whose resourceVersions are scaled): a watch
// of another namespace crosses the point without firing it, and a watch
// of default fires it there.
// It runs in a synctest bubble: the watch of the other namespace ends at
// its timeoutSeconds, which passes at once there.
func TestAnAnchoredEditFiresInOverlayMode(t *testing.T) { synctest.Test(t, anchoredEditInOverlay) }

func anchoredEditInOverlay(t *testing.T) {
	e, err := replay.ParseEdit("watch-error:resource=configmaps,namespace=default,rv=101,code=410")
	if err != nil {
		t.Fatal(err)
	}
	r, err := replay.New(fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, Edits: []replay.Edit{e}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	watch := func(path string) []string {
		t.Helper()
		return watchAt(t, r, path+"?resourceVersion=100000&watch=true&timeoutSeconds=5")
	}
	if got := watch("/api/v1/namespaces/other/configmaps"); len(got) != 0 {
		t.Errorf("a watch of namespace other got %v, want nothing", got)
	}
	if d := cmp.Diff([]string{"ADDED c@101000", "ERROR 410"}, watch(cmPath)); d != "" {
		t.Errorf("a watch of default (-want +got):\n%s", d)
	}
	if got := r.Edits()[0]; got.Fired != 1 {
		t.Errorf("edit %s, want it fired once", got)
	}
}

// TestAWatchThatFellBehindReListsAWorldThatMovedOn places a 410 with
// skip=2 after the change at 101: the watch sends c's addition and the
// ERROR, and a list then holds the next two changes (a modified, b
// deleted), which no watch sent.
func TestAWatchThatFellBehindReListsAWorldThatMovedOn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e, err := replay.ParseEdit("watch-error:resource=configmaps,namespace=default,rv=101,code=410,skip=2")
		if err != nil {
			t.Fatal(err)
		}
		r, err := replay.New(fixture(t, "configmaps.kwrec"), replay.Options{Edits: []replay.Edit{e}})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { r.Close() })
		if d := cmp.Diff([]string{"ADDED c@101", "ERROR 410"}, watchLines(t, r, "?resourceVersion=100&watch=true")); d != "" {
			t.Errorf("the watch (-want +got):\n%s", d)
		}
		resp, err := r.RoundTrip(rawRequest(cmPath).WithContext(t.Context()))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Metadata struct{ ResourceVersion string }
			Items    []struct {
				Metadata struct{ Name string }
				Data     map[string]string
			}
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, it := range l.Items {
			got = append(got, it.Metadata.Name+"="+it.Data["k"])
		}
		if d := cmp.Diff([]string{"a=1b", "c=3"}, got); d != "" || l.Metadata.ResourceVersion != "103" {
			t.Errorf("the re-list at %s (-want +got):\n%s", l.Metadata.ResourceVersion, d)
		}
	})
}
