package diff_test

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/diff"
	"github.com/kwrec/kwrec/internal/wire"
)

const header = `{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","redactions":[]}`

// list is a JSON list interaction of ConfigMaps in default.
func list(id int, items ...string) string {
	return fmt.Sprintf(`{"request":%d,"at":"0s","method":"GET","url":"https://h/api/v1/namespaces/default/configmaps?limit=500"}
{"response":%d,"latency":"1ms","status":200}
{"frame":%d,"at":"0s","json":{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"900"},"items":[%s]}}
{"end":%d,"at":"0s","reason":"eof"}
`, id, id, id, strings.Join(items, ","), id)
}

// watch is a JSON all-namespaces watch interaction; events are "TYPE OBJECT".
func watch(id int, events ...string) string {
	var s strings.Builder
	fmt.Fprintf(&s, `{"request":%d,"at":"0s","method":"GET","url":"https://h/api/v1/configmaps?watch=true"}
{"response":%d,"latency":"1ms","status":200}
`, id, id)
	for _, e := range events {
		typ, obj, _ := strings.Cut(e, " ")
		fmt.Fprintf(&s, `{"frame":%d,"at":"1s","json":{"type":%q,"object":%s}}`+"\n", id, typ, obj)
	}
	fmt.Fprintf(&s, `{"end":%d,"at":"2s","reason":"stopped"}`+"\n", id)
	return s.String()
}

// cm is a ConfigMap item as the API server writes it in a list.
func cm(name, rv, data string) string {
	return fmt.Sprintf(`{"metadata":{"name":%q,"namespace":"default","uid":"u-%s-%s","resourceVersion":%q,"creationTimestamp":"2026-12-01T07:00:0%sZ","managedFields":[{"manager":"kubectl","time":"2026-12-01T07:00:00Z"}]},"data":%s}`,
		name, name, rv, rv, rv[len(rv)-1:], data)
}

// typed is cm with the kind and apiVersion of a watch event's object.
func typed(o string) string { return `{"kind":"ConfigMap","apiVersion":"v1",` + o[1:] }

// protoWatch is a protobuf watch interaction of typed ConfigMaps.
func protoWatch(t *testing.T, id int, typ string, cms ...*corev1.ConfigMap) string {
	s := fmt.Sprintf(`{"request":%d,"at":"0s","method":"GET","url":"https://h/api/v1/namespaces/default/configmaps?watch=true"}
{"response":%d,"latency":"1ms","status":200,"header":{"Content-Type":["application/vnd.kubernetes.protobuf;stream=watch"]}}
`, id, id)
	for _, c := range cms {
		b, err := c.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		f := wire.WatchEventProto(typ, wire.Envelope("v1", "ConfigMap", b))
		s += fmt.Sprintf(`{"frame":%d,"at":"1s","base64":%q}`+"\n", id, base64.StdEncoding.EncodeToString(f))
	}
	return s + fmt.Sprintf(`{"end":%d,"at":"2s","reason":"stopped"}`+"\n", id)
}

// protoList is a protobuf list interaction of ConfigMaps, its body cut in
// two frames as a recorder reads it.
func protoList(t *testing.T, id int, cms ...corev1.ConfigMap) string {
	b, err := (&corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: "900"}, Items: cms}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	body := wire.Envelope("v1", "ConfigMapList", b)
	half := len(body) / 2
	return fmt.Sprintf(`{"request":%d,"at":"0s","method":"GET","url":"https://h/api/v1/configmaps"}
{"response":%d,"latency":"1ms","status":200,"header":{"Content-Type":["application/vnd.kubernetes.protobuf"]}}
{"frame":%d,"at":"0s","base64":%q}
{"frame":%d,"at":"0s","base64":%q}
{"end":%d,"at":"0s","reason":"eof"}
`, id, id, id, base64.StdEncoding.EncodeToString(body[:half]), id, base64.StdEncoding.EncodeToString(body[half:]), id)
}

func compare(t *testing.T, a, b string, opts diff.Options) (*diff.Report, error) {
	t.Helper()
	open := func(name, text string) diff.Opener {
		return func() (diff.Source, error) {
			return cassettes.NewReader(strings.NewReader(header+"\n"+text), name)
		}
	}
	return diff.Compare(open("a", a), open("b", b), opts)
}

func TestCassettesCompareByObject(t *testing.T) {
	pcm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "7", UID: "x", Labels: map[string]string{"app": "web"}},
		Data:       map[string]string{"k": "1"},
	}
	tests := []struct {
		name string
		a, b string
		opts diff.Options
		want string // WriteText without the A:/B: lines; "" when equal
	}{
		{
			name: "equal cassettes are equal",
			a:    list(1, cm("a", "1", `{"k":"1"}`)) + watch(2, "MODIFIED "+typed(cm("a", "2", `{"k":"2"}`))),
			b:    list(1, cm("a", "1", `{"k":"1"}`)) + watch(2, "MODIFIED "+typed(cm("a", "2", `{"k":"2"}`))),
		},
		{
			name: "volatile fields are ignored: resourceVersion, uid, timestamps and managedFields",
			a:    list(1, cm("a", "1", `{"k":"1"}`)) + watch(2, "MODIFIED "+typed(cm("a", "2", `{"k":"2"}`))),
			b:    list(1, cm("a", "51", `{"k":"1"}`)) + watch(2, "MODIFIED "+typed(cm("a", "53", `{"k":"2"}`))),
		},
		{
			name: "an object only in one cassette is listed on its side",
			a:    list(1, cm("a", "1", `{}`), cm("b", "2", `{}`)),
			b:    list(1, cm("a", "1", `{}`)) + watch(2, "ADDED "+typed(cm("c", "3", `{}`))),
			want: `/api/v1/configmaps
  only in A: default/b
  only in B: default/c
`,
		},
		{
			name: "a changed field is shown with its path and both values",
			a:    list(1, cm("a", "1", `{"k":"1","same":"x"}`)) + watch(2, "MODIFIED "+typed(cm("a", "2", `{"k":"2","same":"x"}`))),
			b:    list(1, cm("a", "1", `{"k":"1","same":"x"}`)) + watch(2, "MODIFIED "+typed(cm("a", "2", `{"k":"3","same":"x","app.kubernetes.io/x":"y"}`))),
			want: `/api/v1/configmaps
  changed: default/a
    A#2 rv=2 ↔ B#2 rv=2:
      .data["app.kubernetes.io/x"]: (absent) → "y"
      .data.k: "2" → "3"
`,
		},
		{
			name: "--no-ignore makes a default volatile field count",
			a:    list(1, cm("a", "1", `{}`)),
			b:    list(1, cm("a", "51", `{}`)),
			opts: diff.Options{NoIgnore: []string{".metadata.uid"}},
			want: `/api/v1/configmaps
  changed: default/a
    A#1 rv=1 ↔ B#1 rv=51:
      .metadata.uid: "u-a-1" → "u-a-51"
`,
		},
		{
			name: "--ignore hides a field and everything under it",
			a:    list(1, cm("a", "1", `{"k":"1"}`)),
			b:    list(1, cm("a", "1", `{"k":"2"}`)),
			opts: diff.Options{Ignore: []string{".data"}},
		},
		{
			name: "a JSON and a protobuf recording of the same object are equal",
			a:    watch(1, `ADDED {"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","uid":"x","resourceVersion":"7","labels":{"app":"web"}},"data":{"k":"1"}}`),
			b:    protoWatch(t, 1, "ADDED", pcm),
		},
		{
			name: "a JSON list and a protobuf list of the same objects are equal",
			a:    list(1, cm("a", "1", `{"k":"1"}`), cm("b", "2", `{}`)),
			b: protoList(t, 1, corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "1"}, Data: map[string]string{"k": "1"}},
				corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "default", ResourceVersion: "2"}, Data: map[string]string{}}),
		},
		{
			name: "a protobuf object that differs shows the field",
			a:    watch(1, `ADDED {"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"7","labels":{"app":"api"}},"data":{"k":"1"}}`),
			b:    protoWatch(t, 1, "ADDED", pcm),
			want: `/api/v1/configmaps
  changed: default/a
    A#1 rv=7 ↔ B#1 rv=7:
      .metadata.labels.app: "api" → "web"
`,
		},
		{
			name: "an extra write in one history is a version only it has, the rest stays aligned",
			a:    watch(1, "ADDED "+typed(cm("a", "1", `{"k":"1"}`)), "MODIFIED "+typed(cm("a", "2", `{"k":"2"}`)), "MODIFIED "+typed(cm("a", "3", `{"k":"3"}`))),
			b:    watch(1, "ADDED "+typed(cm("a", "1", `{"k":"1"}`)), "MODIFIED "+typed(cm("a", "3", `{"k":"3"}`))),
			want: `/api/v1/configmaps
  changed: default/a
    A#2 rv=2: only in A
`,
		},
		{
			name: "a write that changed only ignored fields is no change",
			a:    watch(1, "ADDED "+typed(cm("a", "1", `{"k":"1"}`)), "MODIFIED "+typed(cm("a", "2", `{"k":"1"}`))),
			b:    watch(1, "ADDED "+typed(cm("a", "1", `{"k":"1"}`))),
		},
		{
			name: "a deletion only one recording saw is a version only it has",
			a:    watch(1, "ADDED "+typed(cm("a", "1", `{}`)), "DELETED "+typed(cm("a", "2", `{}`)), "DELETED "+typed(cm("a", "2", `{}`))),
			b:    watch(1, "ADDED "+typed(cm("a", "1", `{}`))),
			want: `/api/v1/configmaps
  changed: default/a
    A#2 rv=2 DELETED: only in A
`,
		},
		{
			name: "a namespaced list and an all-namespaces watch fill one collection, versions deduplicated",
			a:    list(1, cm("a", "1", `{}`)) + watch(2, "ADDED "+typed(cm("a", "1", `{}`))),
			b:    watch(1, "ADDED "+typed(cm("a", "1", `{}`))),
		},
		{
			name: "bookmarks, errors and kubectl tables hold no objects",
			a: watch(1, `BOOKMARK {"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"9"}}`,
				`ERROR {"kind":"Status","apiVersion":"v1","metadata":{},"code":410}`,
				`ADDED {"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"rows":[]}`),
			b: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := compare(t, tt.a, tt.b, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			got := strings.TrimPrefix(b.String(), "A: A\nB: B\n")
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("diff text (-want +got):\n%s", d)
			}
			if r.Equal != (tt.want == "") {
				t.Errorf("Equal = %v, want %v", r.Equal, tt.want == "")
			}
		})
	}
}

func TestBadIgnorePathsAreErrors(t *testing.T) {
	tests := []struct {
		name string
		opts diff.Options
		want string
	}{
		{"a path without a leading dot", diff.Options{Ignore: []string{"metadata.labels"}}, `ignore path "metadata.labels": it must start with . or [`},
		{"an unclosed bracket", diff.Options{Ignore: []string{".items[0"}}, `unclosed [`},
		{"a no-ignore path that is not a default", diff.Options{NoIgnore: []string{".data"}}, `.data is not ignored by default; the defaults are .metadata.resourceVersion`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := compare(t, "", "", tt.opts)
			if !errors.Is(err, diff.ErrBadPath) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want ErrBadPath containing %q", err, tt.want)
			}
		})
	}
}

func TestIgnoreDefaultsCanBeTakenOutInAnySpelling(t *testing.T) {
	r, err := compare(t, "", "", diff.Options{NoIgnore: []string{`.metadata["managedFields"][*].time`}, Ignore: []string{`.metadata.annotations["a.b/c"]`}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".metadata.resourceVersion", ".metadata.uid", ".metadata.generation", ".metadata.creationTimestamp",
		".metadata.deletionTimestamp", ".metadata.managedFields", ".status.conditions[].last*Time", `.metadata.annotations["a.b/c"]`}
	if d := cmp.Diff(want, r.Ignored); d != "" {
		t.Errorf("ignored (-want +got):\n%s", d)
	}
}

func TestALongHistoryWithOneExtraWriteStaysAligned(t *testing.T) {
	const n = 5000 // 5,000 × 5,001 versions: the first diff aligned these by index
	history := func(extra int) []string {
		var events []string
		for i := 1; i <= n; i++ {
			events = append(events, "MODIFIED "+typed(cm("a", fmt.Sprint(10*i), fmt.Sprintf(`{"k":"%d"}`, i))))
			if i == extra {
				events = append(events, "MODIFIED "+typed(cm("a", fmt.Sprint(10*i+5), `{"k":"extra"}`)))
			}
		}
		return events
	}
	tests := []struct {
		name string
		a, b []string
		want string
	}{
		{
			name: "an extra write in A is one version only A has",
			a:    history(1234),
			b:    history(0),
			want: "/api/v1/configmaps\n  changed: default/a\n    A#1235 rv=12345: only in A\n",
		},
		{
			name: "an extra write in B is one version only B has",
			a:    history(0),
			b:    history(4321),
			want: "/api/v1/configmaps\n  changed: default/a\n    B#4322 rv=43215: only in B\n",
		},
		{
			name: "an extra write in each at different places is one version only each has",
			a:    history(10),
			b:    history(4990),
			want: "/api/v1/configmaps\n  changed: default/a\n    A#11 rv=105: only in A\n    B#4991 rv=49905: only in B\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := compare(t, watch(1, tt.a...), watch(1, tt.b...), diff.Options{})
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			if err := r.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, strings.TrimPrefix(b.String(), "A: A\nB: B\n")); d != "" {
				t.Errorf("diff text (-want +got):\n%s", d)
			}
		})
	}
}

func TestACassetteThatChangesBetweenReadingsIsAnError(t *testing.T) {
	a := list(1, cm("a", "1", `{"k":"1"}`))
	b := list(1, cm("a", "1", `{"k":"2"}`))
	readings := 0
	changing := func() (diff.Source, error) {
		readings++
		text := b
		if readings > 1 {
			text = list(1, cm("a", "1", `{"k":"3"}`))
		}
		return cassettes.NewReader(strings.NewReader(header+"\n"+text), "b")
	}
	fixed := func() (diff.Source, error) { return cassettes.NewReader(strings.NewReader(header+"\n"+a), "a") }
	_, err := diff.Compare(fixed, changing, diff.Options{})
	want := "cassette B: line 5: the cassette changed while it was compared: default/a at resourceVersion 1 reads differently the second time"
	if !errors.Is(err, diff.ErrChanged) || err.Error() != want {
		t.Errorf("err = %v, want ErrChanged: %s", err, want)
	}
}
