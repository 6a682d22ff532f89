package trace_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/trace"
)

const header = `{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","redactions":[]}` + "\n"

// render is one line per event other than metadata, with the args a test
// cares about.
func render(t *trace.Trace) []string {
	var out []string
	for _, e := range t.TraceEvents {
		if e.Ph == "M" {
			continue
		}
		s := fmt.Sprintf("%s %q ts=%g", e.Ph, e.Name, e.Ts)
		if e.Dur != nil {
			s += fmt.Sprintf(" dur=%g", *e.Dur)
		}
		s += fmt.Sprintf(" pid=%d tid=%d", e.Pid, e.Tid)
		for _, k := range []string{"object", "resourceVersion", "items", "code", "status", "end", "events"} {
			if v, ok := e.Args[k]; ok {
				s += fmt.Sprintf(" %s=%v", k, v)
			}
		}
		out = append(out, s)
	}
	return out
}

func build(t *testing.T, text string, opts trace.Options) *trace.Trace {
	t.Helper()
	r, err := cassettes.NewReader(strings.NewReader(header+text), "test.kwrec")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := trace.Build(r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestCassettesBecomeTraceEvents(t *testing.T) {
	tests := []struct {
		name string
		text string
		opts trace.Options
		want []string
	}{
		{
			name: "a list is a slice with the wait for headers nested in it and an instant for its body",
			text: `{"request":1,"at":"1ms","method":"GET","url":"https://h/api/v1/namespaces/default/configmaps?limit=500"}
{"response":1,"latency":"2ms","status":200}
{"frame":1,"at":"1ms","json":{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"200"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}]}}
{"end":1,"at":"1ms","reason":"eof"}
`,
			want: []string{
				`i "list" ts=4000 pid=2 tid=1 resourceVersion=200 items=2`,
				`X "GET /api/v1/namespaces/default/configmaps" ts=1000 dur=3000 pid=2 tid=1 status=200 end=eof`,
				`X "waiting for headers" ts=1000 dur=2000 pid=2 tid=1`,
			},
		},
		{
			name: "a watch has an instant per event and a rate counter per second",
			text: `{"request":1,"at":"0s","method":"GET","url":"/api/v1/configmaps?watch=true"}
{"response":1,"latency":"0s","status":200}
{"frame":1,"at":"100ms","json":{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","namespace":"d","resourceVersion":"5"}}}}
{"frame":1,"at":"200ms","json":{"type":"MODIFIED","object":{"kind":"ConfigMap","metadata":{"name":"a","namespace":"d","resourceVersion":"6"}}}}
{"frame":1,"at":"1.5s","json":{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"6"}}}}
{"frame":1,"at":"3.5s","json":{"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}}}
{"end":1,"at":"4s","reason":"eof"}
`,
			want: []string{
				`i "ADDED" ts=100000 pid=2 tid=1 object=d/a resourceVersion=5`,
				`i "MODIFIED" ts=200000 pid=2 tid=1 object=d/a resourceVersion=6`,
				`i "BOOKMARK" ts=1.5e+06 pid=2 tid=1 resourceVersion=6`,
				`i "ERROR" ts=3.5e+06 pid=2 tid=1 code=410`,
				`X "GET /api/v1/configmaps (watch)" ts=0 dur=4e+06 pid=2 tid=1 status=200 end=eof`,
				`X "waiting for headers" ts=0 dur=0 pid=2 tid=1`,
				`C "events/s" ts=0 pid=2 tid=0 events=2`,
				`C "events/s" ts=1e+06 pid=2 tid=0 events=0`,
				`C "events/s" ts=3e+06 pid=2 tid=0 events=1`,
				`C "events/s" ts=4e+06 pid=2 tid=0 events=0`,
			},
		},
		{
			name: "requests outside collections share process 1 and collections merge namespaces",
			text: `{"request":1,"at":"0s","method":"GET","url":"/version"}
{"request":2,"at":"0s","method":"GET","url":"/api/v1/namespaces/a/pods"}
{"request":3,"at":"0s","method":"GET","url":"/api/v1/namespaces/b/pods/p"}
{"request":4,"at":"0s","method":"GET","url":"/apis/apps/v1/deployments"}
{"end":1,"at":"1ms","reason":"reset","error":"connection refused"}
{"end":2,"at":"1ms","reason":"reset"}
{"end":3,"at":"1ms","reason":"reset"}
{"end":4,"at":"1ms","reason":"reset"}
`,
			want: []string{
				`X "GET /version" ts=0 dur=1000 pid=1 tid=1 end=reset`,
				`X "GET /api/v1/namespaces/a/pods" ts=0 dur=1000 pid=2 tid=2 end=reset`,
				`X "GET /api/v1/namespaces/b/pods/p" ts=0 dur=1000 pid=2 tid=3 end=reset`,
				`X "GET /apis/apps/v1/deployments" ts=0 dur=1000 pid=3 tid=4 end=reset`,
			},
		},
		{
			name: "a mark sits on its interaction's track at the frame it follows",
			text: `{"request":1,"at":"0s","method":"GET","url":"/api/v1/configmaps?watch=1"}
{"response":1,"latency":"1ms","status":200}
{"frame":1,"at":"1ms","json":{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}}
{"end":1,"at":"2s","reason":"stopped"}
`,
			opts: trace.Options{Marks: []trace.Mark{{Interaction: 1, After: 1, Name: "edit: x"}, {Interaction: 1, After: 9, Name: "edit: late"}, {Interaction: 7, Name: "edit: nowhere"}}},
			want: []string{
				`i "ADDED" ts=2000 pid=2 tid=1 object=a resourceVersion=5`,
				`X "GET /api/v1/configmaps (watch)" ts=0 dur=2.001e+06 pid=2 tid=1 status=200 end=stopped`,
				`X "waiting for headers" ts=0 dur=1000 pid=2 tid=1`,
				`i "edit: x" ts=2000 pid=2 tid=1`,
				`i "edit: late" ts=2.001e+06 pid=2 tid=1`,
				`C "events/s" ts=0 pid=2 tid=0 events=1`,
				`C "events/s" ts=1e+06 pid=2 tid=0 events=0`,
			},
		},
		{
			name: "a cut cassette ends its open interactions at their last frame",
			text: `{"request":1,"at":"0s","method":"GET","url":"/api/v1/configmaps?watch=1"}
{"response":1,"latency":"1ms","status":200}
{"frame":1,"at":"5ms","json":{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"5"}}}}
`,
			want: []string{
				`i "ADDED" ts=6000 pid=2 tid=1 object=a resourceVersion=5`,
				`X "GET /api/v1/configmaps (watch)" ts=0 dur=6000 pid=2 tid=1 status=200 end=cut`,
				`X "waiting for headers" ts=0 dur=1000 pid=2 tid=1`,
				`C "events/s" ts=0 pid=2 tid=0 events=1`,
				`C "events/s" ts=1e+06 pid=2 tid=0 events=0`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := render(build(t, tt.text, tt.opts))
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestTracksAreNamedByMethodAndTarget(t *testing.T) {
	tr := build(t, `{"request":1,"at":"0s","method":"GET","url":"https://h:6443/api/v1/namespaces/d/configmaps?watch=true&resourceVersion=5"}
{"end":1,"at":"0s","reason":"reset"}
`, trace.Options{})
	var got []string
	for _, e := range tr.TraceEvents {
		if e.Ph == "M" {
			got = append(got, fmt.Sprintf("%s pid=%d tid=%d %v", e.Name, e.Pid, e.Tid, e.Args))
		}
	}
	want := []string{
		"process_name pid=1 tid=0 map[name:requests outside collections]",
		"process_name pid=2 tid=0 map[name:/api/v1/configmaps]",
		"process_sort_index pid=2 tid=0 map[sort_index:2]",
		"thread_name pid=2 tid=1 map[name:#1 GET /api/v1/namespaces/d/configmaps?watch=true&resourceVersion=5]",
		"thread_sort_index pid=2 tid=1 map[sort_index:1]",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("metadata events (-want +got):\n%s", d)
	}
}

// TestRecordedCassetteExportsAValidTrace exports a recording from a real
// kube-apiserver v1.37.2 (kubectl get -w and a reflector's list and watch
// of ConfigMaps, with a 410 watch-error edit in its header), parses the
// JSON back and checks it as a trace viewer would read it.
func TestRecordedCassetteExportsAValidTrace(t *testing.T) {
	r, err := cassettes.Open("testdata/configmaps-410.kwrec.zst")
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tr, err := trace.Build(r, trace.Options{Marks: []trace.Mark{{Interaction: 10, After: 1, Name: "edit: watch-error:request=10,after=1,code=410"}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := tr.Write(&buf); err != nil {
		t.Fatal(err)
	}
	var file struct {
		TraceEvents     []map[string]any `json:"traceEvents"`
		DisplayTimeUnit string           `json:"displayTimeUnit"`
	}
	if err := json.Unmarshal(buf.Bytes(), &file); err != nil {
		t.Fatal(err)
	}
	if file.DisplayTimeUnit != "ms" {
		t.Errorf("displayTimeUnit = %q, want ms", file.DisplayTimeUnit)
	}
	if err := checkEvents(file.TraceEvents); err != nil {
		t.Fatal(err)
	}

	type track struct{ pid, tid float64 }
	names := map[track]string{}
	perPhase := map[string]int{}
	perTrack := map[track]map[string]int{}
	for _, e := range file.TraceEvents {
		tk := track{e["pid"].(float64), e["tid"].(float64)}
		ph := e["ph"].(string)
		perPhase[ph]++
		if ph == "M" && e["name"] == "thread_name" {
			names[tk] = e["args"].(map[string]any)["name"].(string)
		}
		if ph == "X" || ph == "i" {
			if perTrack[tk] == nil {
				perTrack[tk] = map[string]int{}
			}
			perTrack[tk][ph+" "+e["name"].(string)]++
		}
	}
	var gotNames []string
	for tk, n := range names {
		gotNames = append(gotNames, fmt.Sprintf("%g/%g %s", tk.pid, tk.tid, strings.SplitN(n, "?", 2)[0]))
	}
	sort.Strings(gotNames)
	wantNames := []string{
		"1/1 #1 GET /version", "1/2 #2 GET /api", "1/3 #3 GET /apis", "1/4 #4 GET /api/v1",
		"1/5 #5 GET /openapi/v3", "1/6 #6 GET /openapi/v3/api/v1",
		"2/10 #10 GET /api/v1/namespaces/default/configmaps",
		"2/7 #7 GET /api/v1/namespaces/default/configmaps",
		"2/8 #8 GET /api/v1/namespaces/default/configmaps",
		"2/9 #9 GET /api/v1/namespaces/default/configmaps",
	}
	if d := cmp.Diff(wantNames, gotNames); d != "" {
		t.Errorf("one named track per interaction (-want +got):\n%s", d)
	}
	watch := map[string]int{
		"X GET /api/v1/namespaces/default/configmaps (watch)": 1, "X waiting for headers": 1,
		"i ADDED": 3, "i MODIFIED": 1, "i DELETED": 1,
	}
	wantTracks := map[track]map[string]int{
		{2, 7}:  {"X GET /api/v1/namespaces/default/configmaps": 1, "X waiting for headers": 1, "i Table": 1},
		{2, 8}:  {"X GET /api/v1/namespaces/default/configmaps": 1, "X waiting for headers": 1, "i list": 1},
		{2, 9}:  watch,
		{2, 10}: withMark(watch, "i edit: watch-error:request=10,after=1,code=410"),
	}
	for _, tk := range []track{{2, 7}, {2, 8}, {2, 9}, {2, 10}} {
		if d := cmp.Diff(wantTracks[tk], perTrack[tk]); d != "" {
			t.Errorf("events on track %v (-want +got):\n%s", tk, d)
		}
	}
	// 10 process/thread names, 10 thread sort indexes, 2 processes named,
	// 1 process sort index; a slice and a header wait per interaction; the
	// two watches' events at 1.5s, 2.0s, 2.6s, 3.1s, 3.5s give 2, 4, 4, 0
	// events/s, the repeated 4 not sampled.
	wantPhases := map[string]int{"M": 23, "X": 20, "i": 6 + 2 + 10 + 1, "C": 3}
	if d := cmp.Diff(wantPhases, perPhase); d != "" {
		t.Errorf("events per phase (-want +got):\n%s", d)
	}
}

func withMark(m map[string]int, name string) map[string]int {
	out := map[string]int{name: 1}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// checkEvents checks each event's required fields for its phase and that
// the slices of each track nest: two slices on one track are disjoint or
// one holds the other.
func checkEvents(events []map[string]any) error {
	type span struct{ start, end float64 }
	tracks := map[[2]float64][]span{}
	for i, e := range events {
		for _, k := range []string{"name", "ph", "ts", "pid", "tid"} {
			if _, ok := e[k]; !ok {
				return fmt.Errorf("event %d %v: no %q", i, e, k)
			}
		}
		ts, _ := e["ts"].(float64)
		switch e["ph"] {
		case "X":
			dur, ok := e["dur"].(float64)
			if !ok || dur < 0 {
				return fmt.Errorf("event %d %v: slice without a dur >= 0", i, e)
			}
			k := [2]float64{e["pid"].(float64), e["tid"].(float64)}
			tracks[k] = append(tracks[k], span{ts, ts + dur})
		case "i":
			if s, _ := e["s"].(string); s != "t" && s != "p" && s != "g" {
				return fmt.Errorf("event %d %v: instant without a scope", i, e)
			}
		case "C", "M":
			if _, ok := e["args"].(map[string]any); !ok {
				return fmt.Errorf("event %d %v: no args", i, e)
			}
		default:
			return fmt.Errorf("event %d %v: unexpected phase", i, e)
		}
	}
	for k, spans := range tracks {
		for i, a := range spans {
			for _, b := range spans[i+1:] {
				disjoint := a.end <= b.start || b.end <= a.start
				nested := (a.start <= b.start && b.end <= a.end) || (b.start <= a.start && a.end <= b.end)
				if !disjoint && !nested {
					return fmt.Errorf("track %v: slices %v and %v partly overlap", k, a, b)
				}
			}
		}
	}
	return nil
}
