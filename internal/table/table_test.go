package table_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/table"
)

// The fixture's states: list.json is the state before the watches,
// final.json (plain) and final-table.json the state after them.

func TestAListOfTheRecordedEndStateMatchesTheLiveTable(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watch.jsonl")
	rv, versions := plainVersions(t, fx["final.json"])
	got, ok := x.List(table.V1, jsonRV(t, fx["final-table.json"]), "", nil, versions)
	if !ok {
		t.Fatalf("List(%v) is not ok", versions)
	}
	if d := cmp.Diff(comparable(t, fx["final-table.json"]), comparable(t, got)); d != "" {
		t.Errorf("Table at the end (-live +built):\n%s", d)
	}
	// The same state at the plain list's resourceVersion, as v1beta1.
	got, ok = x.List(table.V1beta1, rv, "", nil, versions)
	if !ok {
		t.Fatal("v1beta1 List is not ok")
	}
	if d := cmp.Diff(comparable(t, fx["v1beta1.json"]), comparable(t, got)); d != "" {
		t.Errorf("v1beta1 Table at the end (-live +built):\n%s", d)
	}
}

func TestAWatchFromTheListReproducesTheRecordedWatchByteForByte(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watch.jsonl")
	for i, want := range fx.lines("watch.jsonl") {
		typ, v := eventVersion(t, want)
		got, ok := x.WatchEvent(table.V1, typ, v, i == 0)
		if !ok {
			t.Fatalf("event %d: WatchEvent(%s, %v) is not ok", i, typ, v)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("event %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

// A streaming list (sendInitialEvents) is rebuilt from rows recorded by a
// plain list and a plain watch: initial ADDED events, the bookmark ending
// them, then the changes. The bookmark's cells come from the empty
// streaming list's bookmark.
func TestAStreamingListIsRebuiltFromAListAndAWatch(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watch.jsonl", "watchlist-empty.jsonl")
	for i, want := range fx.lines("watchlist.jsonl") {
		typ, v := eventVersion(t, want)
		var got []byte
		var ok bool
		if typ == "BOOKMARK" {
			got, ok = x.Bookmark(table.V1, v.RV, true, i == 0)
		} else {
			got, ok = x.WatchEvent(table.V1, typ, v, i == 0)
		}
		if !ok {
			t.Fatalf("event %d (%s %v) is not ok", i, typ, v)
		}
		if d := cmp.Diff(comparable(t, want), comparable(t, got)); d != "" {
			t.Errorf("event %d (-live +built):\n%s", i, d)
		}
	}
}

// The bookmark that opens a streaming list of nothing carries the column
// definitions; the template comes from a later, header-less one.
func TestABookmarkThatOpensAWatchCarriesTheColumns(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watchlist.jsonl")
	want := fx.lines("watchlist-empty.jsonl")[0]
	_, v := eventVersion(t, want)
	got, ok := x.Bookmark(table.V1, v.RV, true, true)
	if !ok {
		t.Fatal("Bookmark is not ok")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("\n got %s\nwant %s", got, want)
	}
}

func TestAGetOfOneObjectMatchesTheLiveTable(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watch.jsonl")
	_, versions := plainVersions(t, fx["final.json"])
	var beta table.Version
	for _, v := range versions {
		if v.Key == "table/beta" {
			beta = v
		}
	}
	got, ok := x.Get(table.V1, beta)
	if !ok {
		t.Fatalf("Get(%v) is not ok", beta)
	}
	if d := cmp.Diff(comparable(t, fx["get-beta.json"]), comparable(t, got)); d != "" {
		t.Errorf("(-live +built):\n%s", d)
	}
}

func TestWantsAgreesWithTheLiveServer(t *testing.T) {
	fx := loadFixture(t)
	for _, line := range strings.Split(strings.TrimSpace(string(fx["accept.tsv"])), "\n") {
		accept, answer, _ := strings.Cut(line, "\t")
		t.Run(accept, func(t *testing.T) {
			var want table.GroupVersion
			f := strings.Fields(answer) // status media-type kind apiVersion
			wantOK := f[0] == "200" && f[1] == "application/json" && f[2] == "Table"
			if wantOK {
				want = table.GroupVersion(f[3])
			}
			got, ok := table.Wants(accept)
			if got != want || ok != wantOK {
				t.Errorf("Wants = %q, %v; the server answered %s", got, ok, answer)
			}
		})
	}
}

func TestWantsNothingWithoutAnAcceptHeader(t *testing.T) {
	for _, accept := range []string{"", ",", "application/json;as=Table"} {
		if gv, ok := table.Wants(accept); ok {
			t.Errorf("Wants(%q) = %q, true", accept, gv)
		}
	}
}

// smallTable is a two-row Table as the server writes it, without the
// long column descriptions.
const smallTable = `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` +
	`"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Age","type":"string"}],"rows":[` +
	`{"cells":["a","1s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}},` +
	`{"cells":["b","2s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}]}` + "\n"

func TestListWritesTheListMetadataAndRowsInTheOrderGiven(t *testing.T) {
	x := &table.Index{}
	if err := x.AddList([]byte(smallTable)); err != nil {
		t.Fatal(err)
	}
	a, b := table.Version{Key: "ns/a", RV: "7"}, table.Version{Key: "ns/b", RV: "8"}
	const cols = `"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Age","type":"string"}]`
	const rowA = `{"cells":["a","1s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","namespace":"ns","resourceVersion":"7"}}}`
	const rowB = `{"cells":["b","2s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}`
	two := int64(2)
	zero := int64(0)
	for _, c := range []struct {
		name      string
		rv, cont  string
		remaining *int64
		versions  []table.Version
		want      string // "" for not ok
	}{
		{name: "the recorded list comes back byte for byte", rv: "9", versions: []table.Version{a, b},
			want: smallTable},
		{name: "rows follow the order given", rv: "9", versions: []table.Version{b, a},
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` + cols + `,"rows":[` + rowB + `,` + rowA + "]}\n"},
		{name: "an empty list has an empty rows array", rv: "12",
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"12"},` + cols + `,"rows":[]}` + "\n"},
		{name: "a page carries continue and remainingItemCount", rv: "9", cont: "tok", remaining: &two, versions: []table.Version{a},
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"tok","remainingItemCount":2},` + cols + `,"rows":[` + rowA + "]}\n"},
		{name: "a zero remainingItemCount is written", rv: "9", cont: "tok", remaining: &zero, versions: []table.Version{a},
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"tok","remainingItemCount":0},` + cols + `,"rows":[` + rowA + "]}\n"},
		{name: "a page without a known remainder omits remainingItemCount", rv: "9", cont: "tok", versions: []table.Version{a},
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9","continue":"tok"},` + cols + `,"rows":[` + rowA + "]}\n"},
		{name: "remainingItemCount without continue is not written", rv: "9", remaining: &two, versions: []table.Version{a},
			want: `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},` + cols + `,"rows":[` + rowA + "]}\n"},
		{name: "a version never recorded is not ok", rv: "9", versions: []table.Version{a, {Key: "ns/a", RV: "8"}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := x.List("", c.rv, c.cont, c.remaining, c.versions)
			if ok != (c.want != "") {
				t.Fatalf("ok = %v, body %s", ok, got)
			}
			if d := cmp.Diff(c.want, string(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestAnEmptyIndexBuildsNothing(t *testing.T) {
	var x table.Index
	v := table.Version{Key: "ns/a", RV: "7"}
	if b, ok := x.List(table.V1, "1", "", nil, nil); ok {
		t.Errorf("List = %s, true; an index without columns cannot say what to print", b)
	}
	if b, ok := x.WatchEvent(table.V1, "ADDED", v, true); ok {
		t.Errorf("WatchEvent = %s, true", b)
	}
	if b, ok := x.Get(table.V1, v); ok {
		t.Errorf("Get = %s, true", b)
	}
	if b, ok := x.Bookmark(table.V1, "1", false, true); ok {
		t.Errorf("Bookmark = %s, true", b)
	}
}

func TestAWatchEventIsOneRowWithTheColumnsOnlyWhenFirst(t *testing.T) {
	x := &table.Index{}
	if err := x.AddList([]byte(smallTable)); err != nil {
		t.Fatal(err)
	}
	const rowB = `{"cells":["b","2s"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1beta1","metadata":{"name":"b","namespace":"ns","resourceVersion":"8"}}}`
	for _, c := range []struct {
		name  string
		first bool
		want  string
	}{
		{"the first event carries the column definitions", true,
			`{"type":"DELETED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"8"},"columnDefinitions":[{"name":"Name","type":"string"},{"name":"Age","type":"string"}],"rows":[` + rowB + "]}}\n"},
		{"a later event carries null column definitions", false,
			`{"type":"DELETED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1beta1","metadata":{"resourceVersion":"8"},"columnDefinitions":null,"rows":[` + rowB + "]}}\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := x.WatchEvent(table.V1beta1, "DELETED", table.Version{Key: "ns/b", RV: "8"}, c.first)
			if !ok {
				t.Fatal("not ok")
			}
			if d := cmp.Diff(c.want, string(got)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestAddRejectsWhatItCannotIndex(t *testing.T) {
	for _, c := range []struct {
		name    string
		add     func(*table.Index) error
		want    string
		wantErr error
	}{
		{name: "a plain list is not a Table",
			add: func(x *table.Index) error {
				return x.AddList([]byte(`{"kind":"ConfigMapList","apiVersion":"v1","items":[]}`))
			},
			want:    `not a meta.k8s.io Table; record it with kubectl's Accept header (application/json;as=Table;v=v1;g=meta.k8s.io): got kind "ConfigMapList", apiVersion "v1"`,
			wantErr: table.ErrNotTable},
		{name: "a body that is not JSON",
			add:  func(x *table.Index) error { return x.AddList([]byte(`<html>`)) },
			want: `table is not JSON: invalid character '<' looking for beginning of value`},
		{name: "rows recorded with includeObject=None have no key",
			add: func(x *table.Index) error {
				return x.AddList([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","columnDefinitions":[],"rows":[{"cells":["a"],"object":null}]}`))
			},
			want:    `row 0: table row has no object metadata; record the Table without includeObject (the default is Metadata)`,
			wantErr: table.ErrNoRowObject},
		{name: "a plain watch event is not a Table",
			add: func(x *table.Index) error {
				return x.AddWatchEvent([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}}` + "\n"))
			},
			want:    `ADDED watch event: not a meta.k8s.io Table; record it with kubectl's Accept header (application/json;as=Table;v=v1;g=meta.k8s.io): got kind "ConfigMap", apiVersion "v1"`,
			wantErr: table.ErrNotTable},
		{name: "a watch line that is not an event",
			add:  func(x *table.Index) error { return x.AddWatchEvent([]byte("{\n")) },
			want: `watch event: unexpected end of JSON input`},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := &table.Index{}
			err := c.add(x)
			if err == nil || err.Error() != c.want {
				t.Fatalf("error = %v, want %s", err, c.want)
			}
			if c.wantErr != nil && !errors.Is(err, c.wantErr) {
				t.Errorf("error %v is not %v", err, c.wantErr)
			}
			if x.Len() != 0 {
				t.Errorf("%d rows indexed from a rejected body", x.Len())
			}
		})
	}
}

func TestErrorAndBookmarkEventsIndexNoRows(t *testing.T) {
	fx := loadFixture(t)
	x := &table.Index{}
	for _, line := range [][]byte{
		[]byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (200)","reason":"Expired","code":410}}` + "\n"),
		fx.lines("watchlist-empty.jsonl")[0],
	} {
		if err := x.AddWatchEvent(line); err != nil {
			t.Errorf("AddWatchEvent(%.40s...) = %v", line, err)
		}
	}
	if x.Len() != 0 {
		t.Errorf("Len = %d, want 0", x.Len())
	}
}

// A row recorded by a list and again by a watch at the same
// resourceVersion is stored once, as first seen.
func TestARowSeenTwiceIsStoredOnce(t *testing.T) {
	fx := loadFixture(t)
	x := fx.index(t, "list.json", "watch.jsonl", "watchlist.jsonl", "final-table.json")
	_, final := plainVersions(t, fx["final.json"])
	// alpha, beta, gamma as listed; delta, alpha, beta, gamma (deleted),
	// epsilon as watched.
	if got, want := x.Len(), 8; got != want {
		t.Errorf("Len = %d, want %d (final state %v)", got, want, final)
	}
}

func TestAWrittenObjectGetsTheRowTheServerWouldPrint(t *testing.T) {
	x := new(table.Index)
	cols := `[{"name":"Name","type":"string","format":"name","description":"","priority":0},{"name":"Data","type":"string","format":"","description":"","priority":0},{"name":"Age","type":"string","format":"","description":"","priority":0}]`
	if err := x.AddList([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"5"},"columnDefinitions":` + cols + `,"rows":[]}`)); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 12, 1, 0, 10, 0, 0, time.UTC)
	obj := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"w","namespace":"default","resourceVersion":"5001","creationTimestamp":"2026-12-01T00:00:00Z"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}`
	v := table.Version{Key: "default/w", RV: "5001"}
	if !x.AddObject(v, []byte(obj), now) {
		t.Fatal("AddObject = false")
	}
	b, ok := x.Get("", v)
	if !ok {
		t.Fatal("no row")
	}
	if want := `"cells":["w",3,"10m"]`; !strings.Contains(string(b), want) {
		t.Errorf("Get = %s, want cells %s", b, want)
	}
	x2 := new(table.Index)
	x2.AddList([]byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[{"name":"Holder","type":"string"}],"rows":[]}`))
	if x2.AddObject(v, []byte(obj), now) {
		t.Error("AddObject made a row for a column it cannot compute")
	}
}
