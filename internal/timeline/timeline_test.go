package timeline_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
)

const path = "/api/v1/namespaces/default/configmaps"

func cm(name string, rv int) string {
	return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","resourceVersion":"%d"}}`, name, rv)
}

// build returns a timeline of a list at 100 (a@90) and a watch from 100 of
// ADDED b@101, MODIFIED a@102, then the extra frames.
func build(t *testing.T, extra ...string) *timeline.Timeline {
	t.Helper()
	return buildWith(t, false, extra...)
}

// buildWith is build, of a timeline that takes writes when writes is set.
func buildWith(t *testing.T, writes bool, extra ...string) *timeline.Timeline {
	t.Helper()
	rp, _ := apipath.Parse(path)
	tl := timeline.New(path, rp)
	if writes {
		tl.TakeWrites()
	}
	list := &cassettes.Interaction{ID: 1, Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndEOF},
		Frames: []cassettes.Frame{{Data: []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"90"}}]}`)}}}
	frames := []string{
		`{"type":"ADDED","object":` + cm("b", 101) + "}\n",
		`{"type":"MODIFIED","object":` + cm("a", 102) + "}\n",
	}
	frames = append(frames, extra...)
	watch := &cassettes.Interaction{ID: 2, At: time.Second, Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndStopped}}
	for i, f := range frames {
		watch.Frames = append(watch.Frames, cassettes.Frame{At: time.Duration(i+1) * time.Second, Data: []byte(f)})
	}
	for _, in := range []*cassettes.Interaction{list, watch} {
		u, _ := url.Parse("https://h" + path + map[int]string{1: "?limit=500", 2: "?resourceVersion=100&watch=true"}[in.ID])
		s := tl.Stream(in, nil, u.Query(), timeline.JSON)
		for i, f := range in.Frames {
			s.Observe(i, f)
		}
	}
	tl.Seal()
	return tl
}

// steps summarises a watch's steps.
func steps(t *testing.T, tl *timeline.Timeline, query string) []string {
	t.Helper()
	q, _ := url.ParseQuery(query)
	sel, err := tl.Selector(q, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	ss, _, err := tl.Watch(q, sel)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, s := range ss {
		switch s.Kind {
		case timeline.StepInitial:
			out = append(out, "initial "+s.Obj.Key)
		case timeline.StepInitialEnd:
			out = append(out, fmt.Sprint("initial-end @", s.RV))
		case timeline.StepEvent:
			out = append(out, fmt.Sprintf("%s %s@%d +%v", s.Ev.Type, s.Ev.Obj.Key, s.Ev.RV(), s.Gap))
		case timeline.StepBookmark:
			out = append(out, fmt.Sprint("bookmark @", s.RV))
		case timeline.StepMark:
			out = append(out, "mark "+s.Mark.Label)
		case timeline.StepExpired:
			out = append(out, "expired: "+s.Status.Message)
		}
	}
	return out
}

func TestAWatchCrossesTheMarksBetweenItsStartAndTheLastEvent(t *testing.T) {
	recordedErr := `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410}}` + "\n"
	for _, tc := range []struct {
		name   string
		extra  []string
		marks  []*timeline.Mark
		fired  []string // marks fired before the watch
		query  string
		want   []string
		broken string
	}{
		{name: "a recorded ERROR event is a mark after the event before it",
			extra: []string{recordedErr}, query: "resourceVersion=100",
			want: []string{"ADDED default/b@101 +2s", "MODIFIED default/a@102 +1s", "mark the recorded ERROR event, frame 3 of interaction 2"}},
		{name: "a watch that starts at a recorded mark does not cross it",
			extra: []string{`{"type":"ADDED","object":` + cm("c", 103) + "}\n", recordedErr}, query: "resourceVersion=103",
			want: nil},
		{name: "an edit's mark between events sits between them",
			marks: []*timeline.Mark{{RV: 101, Once: true, Label: "edit"}}, query: "resourceVersion=100",
			want: []string{"ADDED default/b@101 +2s", "mark edit", "MODIFIED default/a@102 +1s"}},
		{name: "an edit's mark at the start reaches a watch from there until it fires",
			marks: []*timeline.Mark{{RV: 101, Once: true, Label: "edit"}}, query: "resourceVersion=101",
			want: []string{"mark edit", "MODIFIED default/a@102 +1s"}},
		{name: "a fired edit's mark at the start is behind the watch",
			marks: []*timeline.Mark{{RV: 101, Once: true, Label: "edit"}}, fired: []string{"edit"}, query: "resourceVersion=101",
			want: []string{"MODIFIED default/a@102 +1s"}},
		{name: "a mark past the last recorded event is never crossed",
			marks: []*timeline.Mark{{RV: 500, Once: true, Label: "edit"}}, query: "resourceVersion=100&allowWatchBookmarks=true",
			want: []string{"ADDED default/b@101 +2s", "MODIFIED default/a@102 +1s", "bookmark @102"}},
		{name: "a streaming list sends the state now, then its end, then the events and marks",
			marks: []*timeline.Mark{{RV: 101, Once: true, Label: "edit"}}, query: "sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
			want: []string{"initial default/a", "initial-end @100", "ADDED default/b@101 +2s", "mark edit", "MODIFIED default/a@102 +1s"}},
		{name: "a watch from before the recording is expired",
			query: "resourceVersion=50", want: []string{"expired: too old resource version: 50 (100)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := build(t, tc.extra...)
			for _, m := range tc.marks {
				tl.AddMark(m)
				for _, f := range tc.fired {
					if f == m.Label {
						m.Fire()
					}
				}
			}
			if d := cmp.Diff(tc.want, steps(t, tl, tc.query)); d != "" {
				t.Errorf("steps (-want +got):\n%s", d)
			}
		})
	}
}

func TestAListIsTheStateAtItsResourceVersion(t *testing.T) {
	tl := build(t)
	for _, tc := range []struct {
		query string
		want  []string
		code  int32
	}{
		{"", []string{"default/a@90"}, 0}, // now: nothing served yet
		{"resourceVersion=101&resourceVersionMatch=Exact", []string{"default/a@90", "default/b@101"}, 0},
		{"resourceVersion=102", []string{"default/a@102", "default/b@101"}, 0},
		{"resourceVersion=99&resourceVersionMatch=Exact", nil, http.StatusGone},
		{"resourceVersion=103", nil, http.StatusGatewayTimeout},
		{"resourceVersion=x", nil, http.StatusBadRequest},
		{"continue=garbage", nil, http.StatusBadRequest},
		{"resourceVersion=101&limit=5", []string{"default/a@90", "default/b@101"}, 0}, // a pager's legacy exact list
	} {
		t.Run(tc.query, func(t *testing.T) {
			q, _ := url.ParseQuery(tc.query)
			sel, _ := tl.Selector(q, "", nil)
			l, err := tl.List(q, sel)
			if tc.code != 0 {
				se, ok := err.(*timeline.StatusError)
				if !ok || se.Status.Code != tc.code {
					t.Fatalf("err = %v; want a %d Status", err, tc.code)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, o := range l.Items {
				rv := map[string]string{"default/a": "90", "default/b": "101"}[o.Key]
				if o.Ref.In != nil && o.Ref.In.ID == 2 {
					rv = map[string]string{"default/a": "102", "default/b": "101"}[o.Key]
				}
				got = append(got, o.Key+"@"+rv)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("items (-want +got):\n%s", d)
			}
		})
	}
}

// token is a continue token as kube-apiserver writes it.
func token(rv int64, start string) string {
	b, _ := json.Marshal(struct {
		V     string `json:"v"`
		RV    int64  `json:"rv"`
		Start string `json:"start"`
	}{"meta.k8s.io/v1", rv, start})
	return base64.RawURLEncoding.EncodeToString(b)
}

func TestAPagedListResumesWhereItsTokenSaysWhateverWasPlayedSince(t *testing.T) {
	gone := "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."
	for _, tc := range []struct {
		name     string
		query    url.Values
		advance  int64 // the replay has played up to here first
		want     []string
		cont     string // the token handed out, "" for none
		remain   *int64 // nil: not given
		err      string // the Status message of a refused list
		code     int32
		errToken string // the token in a refused list's Status
	}{
		{name: "the first page carries the server's token for the key after its last item, at the list's resourceVersion",
			query: url.Values{"limit": {"1"}, "resourceVersion": {"101"}, "resourceVersionMatch": {"NotOlderThan"}},
			want:  []string{"default/a"}, cont: token(101, "/a\x00"), remain: new(int64(1))},
		{name: "a token of this replay's resumes at its resourceVersion after the replay moved on",
			query: url.Values{"limit": {"1"}, "continue": {token(101, "/a\x00")}}, advance: 102,
			want: []string{"default/b"}},
		{name: "a token recorded from the server resumes the same way",
			query: url.Values{"limit": {"500"}, "continue": {token(100, "/a\x00")}}, advance: 102,
			want: []string{}},
		{name: "a token as etcd's store writes it, without the leading slash, resumes the same way",
			query: url.Values{"limit": {"500"}, "continue": {token(101, "a\x00")}},
			want:  []string{"default/b"}},
		{name: "a token at resourceVersion -1 continues in the latest state",
			query: url.Values{"continue": {token(-1, "/a\x00")}}, advance: 102,
			want: []string{"default/b"}},
		{name: "with a label selector the remaining count is not given",
			query: url.Values{"limit": {"1"}, "labelSelector": {"!x"}, "resourceVersion": {"101"}, "resourceVersionMatch": {"Exact"}},
			want:  []string{"default/a"}, cont: token(101, "/a\x00")},
		{name: "a token older than the recording is the server's 410 for a compacted one, with a token at -1",
			query: url.Values{"continue": {token(50, "/a\x00")}},
			code:  http.StatusGone, err: gone, errToken: token(-1, "/a\x00")},
		{name: "a token that is not one is a 400",
			query: url.Values{"continue": {"kwrec:2209:default%2Fcm-00499"}},
			code:  http.StatusBadRequest, err: "invalid continue token: continue key is not valid: illegal base64 data at input byte 5"},
		{name: "a token that climbs out of its collection is a 400",
			query: url.Values{"continue": {token(100, "../secrets/x")}},
			code:  http.StatusBadRequest, err: "invalid continue token: continue key is not valid: ../secrets/x"},
		{name: "a token with resourceVersion 0 is a 400",
			query: url.Values{"continue": {token(0, "/a\x00")}},
			code:  http.StatusBadRequest, err: "invalid continue token: continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)"},
		{name: "a token with a resourceVersion is a 400",
			query: url.Values{"continue": {token(100, "/a\x00")}, "resourceVersion": {"100"}},
			code:  http.StatusBadRequest, err: "specifying resource version is not allowed when using continue"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tl := build(t)
			if tc.advance > 0 {
				tl.Advance(tc.advance)
			}
			sel, err := tl.Selector(tc.query, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			l, err := tl.List(tc.query, sel)
			if tc.code != 0 {
				se, ok := err.(*timeline.StatusError)
				if !ok {
					t.Fatalf("err = %v; want a %d Status", err, tc.code)
				}
				if se.Status.Code != tc.code || se.Status.Message != tc.err || se.Status.Continue != tc.errToken {
					t.Errorf("Status = %d %q continue %q; want %d %q continue %q", se.Status.Code, se.Status.Message, se.Status.Continue, tc.code, tc.err, tc.errToken)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := []string{}
			for _, o := range l.Items {
				got = append(got, o.Key)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("items (-want +got):\n%s", d)
			}
			if l.Continue != tc.cont || !cmp.Equal(l.Remaining, tc.remain) {
				t.Errorf("continue %q remaining %v; want %q %v", l.Continue, l.Remaining, tc.cont, tc.remain)
			}
		})
	}
}

func TestATimelineWithANonIntegerResourceVersionIsBroken(t *testing.T) {
	tl := build(t, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"x","namespace":"default","resourceVersion":"abc"}}}`+"\n")
	if got, want := tl.Broken(), `interaction 2: resourceVersion "abc" is not an integer`; got != want {
		t.Errorf("Broken() = %q, want %q", got, want)
	}
}
