package wire_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/wire"
)

func TestAWatchLineSplitsIntoTypeAndObject(t *testing.T) {
	for _, tc := range []struct {
		name, line, typ, obj string
	}{
		{"as the API server writes it", `{"type":"ADDED","object":{"a":{"b":1}}}` + "\n", "ADDED", `{"a":{"b":1}}`},
		{"without the newline", `{"type":"MODIFIED","object":{}}`, "MODIFIED", `{}`},
		{"with the keys the other way round", `{"object":{"x":"}"},"type":"DELETED"}`, "DELETED", `{"x":"}"}`},
		{"with spaces", `{ "type": "BOOKMARK", "object": {"k": 1} }`, "BOOKMARK", `{"k": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, start, end, err := wire.SplitWatchEventJSON([]byte(tc.line))
			if err != nil {
				t.Fatal(err)
			}
			if typ != tc.typ || tc.line[start:end] != tc.obj {
				t.Errorf("got %q %q, want %q %q", typ, tc.line[start:end], tc.typ, tc.obj)
			}
		})
	}
}
