package cassettes

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// The fast path for canonical JSON frame lines must agree with the general
// decoder on every line it accepts, and leave every other line to it.
func TestTheFastFrameParserAgreesWithTheDecoder(t *testing.T) {
	tests := []struct {
		name   string
		line   string
		accept bool
	}{
		{"a canonical watch event", `{"frame":12,"at":"1.5ms","json":{"type":"ADDED","object":{"a":"}"}}}`, true},
		{"an array body", `{"frame":1,"at":"0s","json":[1,2]}`, true},
		{"hand-edited spacing", `{"frame": 1, "at": "0s", "json": {"a":1}}`, false},
		{"a text frame", `{"frame":1,"at":"0s","text":"x"}`, true},
		{"a text frame with escapes", `{"frame":1,"at":"0s","text":"{\"a\":\"\u003c\\n\"}\n"}`, true},
		{"a text frame with a surrogate pair", `{"frame":1,"at":"0s","text":"\ud83d\ude00"}`, false},
		{"a text frame with an extra key", `{"frame":1,"at":"0s","text":"x","json":{}}`, false},
		{"invalid JSON", `{"frame":1,"at":"0s","json":{"a":}}`, false},
		{"a bad duration", `{"frame":1,"at":"soon","json":{}}`, false},
		{"a negative duration", `{"frame":1,"at":"-1s","json":{}}`, false},
		{"interaction zero", `{"frame":0,"at":"0s","json":{}}`, false},
		{"an extra key after the value", `{"frame":1,"at":"0s","json":{},"text":"x"}`, false},
		{"trailing space inside", `{"frame":1,"at":"0s","json":{} }`, false},
		{"a binary frame", `{"frame":7,"at":"2s","base64":"AAAABGs4cwA="}`, true},
		{"an empty binary frame", `{"frame":7,"at":"2s","base64":""}`, true},
		{"a binary frame with an extra key", `{"frame":7,"at":"2s","base64":"QQ==","text":"x"}`, false},
		{"bad base64", `{"frame":7,"at":"2s","base64":"QQ=*"}`, false},
		{"base64 with an escaped slash", `{"frame":7,"at":"2s","base64":"\/w=="}`, false},
		{"unpadded base64", `{"frame":7,"at":"2s","base64":"QQ"}`, false},
		{"a bytes frame", `{"frame":7,"at":"2s","bytes":"ĀĀĀĄk8sĀƊ"}`, true},
		{"an empty bytes frame", `{"frame":7,"at":"2s","bytes":""}`, true},
		{"bytes with an escaped quote and backslash", `{"frame":7,"at":"2s","bytes":"a\"b\\c"}`, true},
		{"bytes ending in an escaped quote", `{"frame":7,"at":"2s","bytes":"\""}`, true},
		{"bytes with another JSON escape", `{"frame":7,"at":"2s","bytes":"\u0001"}`, false},
		{"bytes with a character that stands for no byte", `{"frame":7,"at":"2s","bytes":"é"}`, false},
		{"bytes whose string is not closed", `{"frame":7,"at":"2s","bytes":"a\"}`, false},
		{"bytes with an extra key", `{"frame":7,"at":"2s","bytes":"a","text":"x"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok := fastJSONFrame(3, []byte(tt.line), cassettefile.CheckValid)
			if ok != tt.accept {
				t.Fatalf("fast path accepted = %v, want %v", ok, tt.accept)
			}
			if !ok {
				return
			}
			slow, perr := decodeEntry(3, []byte(tt.line+" "), cassettefile.CheckValid) // the space defeats the fast path
			if perr != nil {
				t.Fatalf("the decoder rejects a line the fast path accepted: %v", perr)
			}
			if diff := cmp.Diff(slow, fast); diff != "" {
				t.Errorf("fast and slow parse differ (-slow +fast):\n%s", diff)
			}
		})
	}
}
