package wire

import (
	"slices"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

func TestEventKeyNamesAnEventsObject(t *testing.T) {
	pod := []byte(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p","namespace":"ns","labels":{"a":"b"},"annotations":{"x":"y"}},"spec":{}}`)
	meta := protowire.AppendTag(nil, 1, protowire.BytesType)
	meta = protowire.AppendString(meta, "p")
	meta = protowire.AppendTag(meta, 3, protowire.BytesType)
	meta = protowire.AppendString(meta, "ns")
	obj := protowire.AppendTag(nil, 1, protowire.BytesType)
	obj = protowire.AppendBytes(obj, meta)
	tests := []struct {
		name, typ, key string
		frame          []byte
		ok             bool
	}{
		{"a JSON event", "MODIFIED", "Pod/ns/p", WatchEventJSON("MODIFIED", pod), true},
		{"a JSON event redacted, its keys sorted", "MODIFIED", "Secret/ns/s", []byte(`{"object":{"apiVersion":"v1","data":{"k":"UkVEQUNURUQ="},"kind":"Secret","metadata":{"name":"s","namespace":"ns"}},"type":"MODIFIED"}` + "\n"), true},
		{"a JSON event with escapes", "ADDED", "Pod/ns/p\"", WatchEventJSON("ADDED", []byte(`{"kind":"Pod","metadata":{"name":"p\"","namespace":"ns"}}`)), true},
		{"a protobuf event", "DELETED", "Pod/ns/p", WatchEventProto("DELETED", Envelope("v1", "Pod", obj)), true},
		{"a JSON bookmark", "BOOKMARK", "", WatchEventJSON("BOOKMARK", BookmarkObjectJSON("Pod", "v1", 5, false)), true},
		{"a JSON error", "ERROR", "", WatchEventJSON("ERROR", []byte(`{"kind":"Status","code":410}`)), true},
		{"a Table-form event, keyed on its row's object", "MODIFIED", "Table/ns/p", WatchEventJSON("MODIFIED", []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"7"},"columnDefinitions":null,"rows":[{"cells":["p","1/1"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"p","namespace":"ns","resourceVersion":"7"}}}]}`)), true},
		{"a Table-form event of two rows", "MODIFIED", "", WatchEventJSON("MODIFIED", []byte(`{"kind":"Table","metadata":{},"rows":[{"cells":[],"object":{"metadata":{"name":"p"}}},{"cells":[],"object":{"metadata":{"name":"q"}}}]}`)), true},
		{"a Table-form bookmark", "BOOKMARK", "", WatchEventJSON("BOOKMARK", []byte(`{"kind":"Table","metadata":{"resourceVersion":"7"},"rows":[{"cells":["",0],"object":{"kind":"PartialObjectMetadata","metadata":{"resourceVersion":"7"}}}]}`)), true},
		{"a list", "", "", []byte(`{"kind":"PodList","items":[]}`), false},
		{"random bytes", "", "", []byte{0, 0, 0, 9, 1, 2}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, key, ok := EventKey(tt.frame)
			if typ != tt.typ || key != tt.key || ok != tt.ok {
				t.Errorf("EventKey = %q, %q, %v; want %q, %q, %v", typ, key, ok, tt.typ, tt.key, tt.ok)
			}
		})
	}
}

func TestListItemKeysKeyEachItemAsItsWatchEventIsKeyed(t *testing.T) {
	row := func(name, uid string) string {
		return `{"cells":["` + name + `"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"` + name + `","namespace":"ns","uid":"` + uid + `"}}}`
	}
	tests := []struct {
		name  string
		body  string
		keys  []string
		items []string // the bytes of each item
	}{
		{"a JSON list", `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a","namespace":"ns"}},{"metadata":{"name":"b"}}]}`,
			[]string{"Pod/ns/a", "Pod//b"}, []string{`{"metadata":{"name":"a","namespace":"ns"}}`, `{"metadata":{"name":"b"}}`}},
		{"a custom resource's list, keys sorted", `{"apiVersion":"x.dev/v1","items":[{"apiVersion":"x.dev/v1","kind":"Gear","metadata":{"name":"g","namespace":"ns"}}],"kind":"GearList","metadata":{"resourceVersion":"9"}}`,
			[]string{"Gear/ns/g"}, []string{`{"apiVersion":"x.dev/v1","kind":"Gear","metadata":{"name":"g","namespace":"ns"}}`}},
		{"a Table's rows, by uid", `{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{},"columnDefinitions":[],"rows":[` + row("a", "u-1") + `,` + row("b", "u-2") + `]}`,
			[]string{"Table@u-1", "Table@u-2"}, []string{row("a", "u-1"), row("b", "u-2")}},
		{"an item without a name is left out", `{"kind":"PodList","items":[{"metadata":{}},{"metadata":{"name":"b"}}]}`,
			[]string{"Pod//b"}, []string{`{"metadata":{"name":"b"}}`}},
		{"an empty list", `{"kind":"PodList","items":[]}`, nil, nil},
		{"an object", `{"kind":"Pod","metadata":{"name":"a"},"spec":{"items":[1]}}`, nil, nil},
		{"a watch event", string(WatchEventJSON("ADDED", []byte(`{"kind":"Pod","metadata":{"name":"a"}}`))), nil, nil},
		{"not JSON", "\x0a\x04k8s", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			keys, items := ListItemKeys([]byte(tt.body))
			var got []string
			for _, it := range items {
				got = append(got, tt.body[it[0]:it[1]])
			}
			if !slices.Equal(keys, tt.keys) || !slices.Equal(got, tt.items) {
				t.Errorf("ListItemKeys = %q, %q; want %q, %q", keys, got, tt.keys, tt.items)
			}
		})
	}
	ev := WatchEventJSON("MODIFIED", []byte(`{"kind":"Table","metadata":{},"rows":[`+row("a", "u-1")+`]}`))
	if got := TableItemKey(ev); got != "Table@u-1" {
		t.Errorf("TableItemKey of a Table-form event = %q, want the key of its row in a list, Table@u-1", got)
	}
}
