package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/report"
	"github.com/kwrec/kwrec/replay"
)

// The cassette of cassettes/doc.go's complete example: a list of two
// ConfigMaps, a watch with an update, a hand-inserted 410 and a bookmark.
const docExample = `{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","server":"v1.37.2","redactions":["header:Authorization"]}
{"request":1,"at":"0s","method":"GET","url":"https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?limit=500","header":{"Accept":["application/json"]}}
{"response":1,"latency":"2.1ms","status":200,"header":{"Content-Type":["application/json"]}}
{"frame":1,"at":"0s","json":{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"200"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"198"}},{"metadata":{"name":"b","namespace":"default","resourceVersion":"199"}}]}}
{"end":1,"at":"0s","reason":"eof"}
{"request":2,"at":"5ms","method":"GET","url":"https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true&resourceVersion=200&timeoutSeconds=412&watch=true","header":{"Accept":["application/json"]}}
{"response":2,"latency":"1ms","status":200,"header":{"Content-Type":["application/json"]}}
{"frame":2,"at":"1.2s","json":{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"201"},"data":{"k":"v2"}}}}
{"frame":2,"at":"1.3s","json":{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 200 (201)","reason":"Expired","code":410}}}
{"frame":2,"at":"1m0s","json":{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"201"}}}}
{"end":2,"at":"1m30s","reason":"stopped"}
`

func writeCassette(t *testing.T, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.kwrec")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func mustEdit(t *testing.T, s string) replay.Edit {
	t.Helper()
	e, err := replay.ParseEdit(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// typesOf names each mark's type.
func typesOf(r *report.Report) []string {
	var out []string
	for _, ti := range r.Marks.Type {
		out = append(out, r.Types[ti])
	}
	return out
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name string
		// extra edits, as flags give them
		edits []string
		check func(t *testing.T, r *report.Report)
	}{
		{
			name: "lanes are grouped by collection, the watch's query and the list's removed",
			check: func(t *testing.T, r *report.Report) {
				want := []report.Group{{Name: "/api/v1/namespaces/default/configmaps", Lanes: []int{0, 1}}}
				if d := cmp.Diff(want, r.Groups); d != "" {
					t.Errorf("groups (-want +got):\n%s", d)
				}
			},
		},
		{
			name: "each frame is a mark typed by its watch event, a list body its own type",
			check: func(t *testing.T, r *report.Report) {
				want := []string{report.TypeList, report.TypeModified, report.TypeError, report.TypeBookmark}
				if d := cmp.Diff(want, typesOf(r)); d != "" {
					t.Errorf("mark types (-want +got):\n%s", d)
				}
			},
		},
		{
			name: "times are microseconds from the cassette start: request, latency, frame, end",
			check: func(t *testing.T, r *report.Report) {
				l := r.Lanes[1]
				got := []int64{l.At, l.Latency, l.Headers, r.Marks.T[l.First], l.End}
				if d := cmp.Diff([]int64{5000, 1000, 6000, 1206000, 90006000}, got); d != "" {
					t.Errorf("lane 2 times (-want +got):\n%s", d)
				}
				if l.Reason != "stopped" || !l.Watch || l.Status != 200 || l.ContentType != "application/json" {
					t.Errorf("lane 2 = %+v", l)
				}
			},
		},
		{
			name: "list items are versions of their objects, kind from the list",
			check: func(t *testing.T, r *report.Report) {
				var got []string
				for _, v := range r.Lists["0"] {
					o := r.Objects[r.Versions.Object[v]]
					got = append(got, o.Kind+" "+o.Namespace+"/"+o.Name+"@"+r.Versions.RV[v])
				}
				if d := cmp.Diff([]string{"ConfigMap default/a@198", "ConfigMap default/b@199"}, got); d != "" {
					t.Errorf("list items (-want +got):\n%s", d)
				}
			},
		},
		{
			name: "a watch event's version is a delta of the object's previous version",
			check: func(t *testing.T, r *report.Report) {
				v := r.Marks.Version[1]
				if r.Versions.RV[v] != "201" {
					t.Fatalf("MODIFIED carries rv %s, want 201", r.Versions.RV[v])
				}
				texts, err := r.Versions.Text()
				if err != nil {
					t.Fatal(err)
				}
				text := string(texts[v])
				if !strings.HasPrefix(text, "[0,") || !strings.Contains(text, `\"resourceVersion\": \"201\"`) {
					t.Errorf("delta %s: want one based on version 0 inserting rv 201", text)
				}
			},
		},
		{
			name: "an ERROR and a BOOKMARK carry no object, only a note",
			check: func(t *testing.T, r *report.Report) {
				var got []string
				for _, m := range []int{2, 3} {
					got = append(got, r.Notes[r.Marks.Note[m]])
					if r.Marks.Version[m] != -1 {
						t.Errorf("mark %d has version %d", m, r.Marks.Version[m])
					}
				}
				want := []string{"Status 410 Expired: too old resource version: 200 (201)", "ConfigMap rv=201"}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("notes (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "an edit on an interaction is drawn at the frame it follows",
			edits: []string{"watch-error:request=2,after=1,code=410"},
			check: func(t *testing.T, r *report.Report) {
				want := []report.Edit{{
					Edit:     "watch-error:request=2,after=1,code=410",
					Where:    "interaction 2 after frame 1 (/api/v1/namespaces/default/configmaps at resourceVersion 201)",
					FromFlag: true,
					Places:   []report.Place{{Group: 0, Lane: 1, T: 1206000}},
				}}
				if d := cmp.Diff(want, r.Edits); d != "" {
					t.Errorf("edits (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "an edit anchored by resourceVersion is drawn across the group where the rv is reached",
			edits: []string{"watch-error:resource=configmaps,rv=201"},
			check: func(t *testing.T, r *report.Report) {
				want := []report.Place{{Group: 0, Lane: -1, T: 1206000}}
				if d := cmp.Diff(want, r.Edits[0].Places); d != "" {
					t.Errorf("places (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "an edit past the last resourceVersion is drawn at the group's end, unreachable",
			edits: []string{"reset:resource=configmaps,rv=900"},
			check: func(t *testing.T, r *report.Report) {
				want := []report.Place{{Group: 0, Lane: -1, T: 90006000, Unreachable: true}}
				if d := cmp.Diff(want, r.Edits[0].Places); d != "" {
					t.Errorf("places (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "an error edit anchored by resource is drawn on the request it fires on",
			edits: []string{"error:resource=configmaps,verb=watch,status=503"},
			check: func(t *testing.T, r *report.Report) {
				want := []report.Place{{Group: 0, Lane: 1, T: 5000}}
				if d := cmp.Diff(want, r.Edits[0].Places); d != "" {
					t.Errorf("places (-want +got):\n%s", d)
				}
			},
		},
		{
			name:  "a global warp has no place on the timeline",
			edits: []string{"warp:scale=10"},
			check: func(t *testing.T, r *report.Report) {
				if len(r.Edits) != 1 || len(r.Edits[0].Places) != 0 || r.Edits[0].Where != "every interaction" {
					t.Errorf("edits = %+v", r.Edits)
				}
			},
		},
	}
	path := writeCassette(t, docExample)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var es []replay.Edit
			for _, s := range tt.edits {
				es = append(es, mustEdit(t, s))
			}
			r, err := report.Build(path, report.Options{Edits: es})
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, r)
		})
	}
}

func TestBuildErrors(t *testing.T) {
	tests := []struct {
		name, text string
		edits      []string
		want       string
	}{
		{name: "a file that is no cassette is refused", text: "hello\n", want: "not a kwrec cassette"},
		{name: "an edit naming a missing interaction is refused", text: docExample, edits: []string{"reset:request=9,after=1"}, want: "the cassette has no interaction 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var es []replay.Edit
			for _, s := range tt.edits {
				es = append(es, mustEdit(t, s))
			}
			_, err := report.Build(writeCassette(t, tt.text), report.Options{Edits: es})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Build = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestTruncatedCassetteIsReportedUpToTheCut(t *testing.T) {
	cut := docExample[:strings.Index(docExample, `{"end":2`)]
	r, err := report.Build(writeCassette(t, cut), report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Truncated == "" || len(r.Marks.T) != 4 || r.Lanes[1].End != -1 {
		t.Errorf("truncated=%q marks=%d end=%d", r.Truncated, len(r.Marks.T), r.Lanes[1].End)
	}
}

func TestHTMLEmbedsTheReportSafely(t *testing.T) {
	text := strings.Replace(docExample, `"message":"too old resource version: 200 (201)"`, `"message":"</script><script>alert(1)</script>"`, 1)
	r, err := report.Build(writeCassette(t, text), report.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := r.WriteHTML(&b); err != nil {
		t.Fatal(err)
	}
	html := b.String()
	if strings.Contains(html, "alert(1)</script>") || !strings.Contains(html, `\u003c/script\u003e`) {
		t.Error("a recorded </script> ends the data script")
	}
	for _, remote := range []string{"http://", "https://cdn", "<link", "src=\""} {
		if strings.Contains(page(t), remote) {
			t.Errorf("the page template loads something (%q): it must open offline", remote)
		}
	}
}

func page(t *testing.T) string {
	b, err := os.ReadFile("report.html")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
