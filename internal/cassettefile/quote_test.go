package cassettefile

import (
	"bytes"
	"encoding/json"
	"testing"
)

var quoteSeeds = []string{
	``, `plain`, `a\"b\\c\/d`, `\b\f\n\r\t`, `\u003cb\u003e \u0026 \u00e9 \u4e16`, `é世界`,
	`\ud83d\ude00`, `\ud83d`, `a"b`, "a\x01b", `\x`, `\u12`, `\u12G4`, "\xff", `trailing\`,
}

// TestUnquoteDecodesWhatEncodingJSONDecodes: wherever unquote answers, it
// answers what encoding/json does; it answers the plain and escaped strings
// a recorder writes.
func TestUnquoteDecodesWhatEncodingJSONDecodes(t *testing.T) {
	for _, s := range quoteSeeds {
		sameString(t, []byte(s))
	}
	for _, s := range []string{`plain`, `a\"b\\c\/d`, `\u003cb\u003e \u0026 \u00e9 \u4e16`, `é世界`} {
		if _, ok := unquote([]byte(s)); !ok {
			t.Errorf("unquote(%q) left it to the decoder", s)
		}
	}
}

// TestATextFrameIsReadWithoutTheDecoder: a canonical text frame line
// parses on the fast path, and a line that only looks like one does not.
func TestATextFrameIsReadWithoutTheDecoder(t *testing.T) {
	for _, tc := range []struct {
		name, line string
		want       string
		ok         bool
	}{
		{"a text frame", `{"frame":6,"at":"11.7ms","text":"{\"openapi\":\"3.0.0\",\"x\":\"\u003c\"}"}`, `{"openapi":"3.0.0","x":"<"}`, true},
		{"two keys after the text", `{"frame":6,"at":"1ms","text":"a","json":{}}`, "", false},
		{"a text frame cut", `{"frame":6,"at":"1ms","text":"a}`, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, data, ok := ParseCanonical([]byte(tc.line), CheckBounds)
			if ok != tc.ok || string(data) != tc.want {
				t.Errorf("ParseCanonical(%s) = %q, %v; want %q, %v", tc.line, data, ok, tc.want, tc.ok)
			}
		})
	}
}

func FuzzUnquote(f *testing.F) {
	for _, s := range quoteSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, s []byte) { sameString(t, s) })
}

func sameString(t *testing.T, s []byte) {
	t.Helper()
	fast, ok := unquote(s)
	if !ok {
		return
	}
	var slow string
	if err := json.Unmarshal(append(append([]byte{'"'}, s...), '"'), &slow); err != nil {
		t.Errorf("unquote(%q) = %q, but encoding/json refuses it: %v", s, fast, err)
		return
	}
	if !bytes.Equal(fast, []byte(slow)) {
		t.Errorf("unquote(%q) = %q, encoding/json %q", s, fast, slow)
	}
}
