package cassettefile

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// ParseFrame reads back every frame line a Reader accepts: the canonical
// shape through ParseCanonical, any other through the general decoder, to
// the same bytes.
func TestParseFrameReadsEveryFrameLineBack(t *testing.T) {
	type frame struct {
		ID   int
		At   time.Duration
		Data string
	}
	tests := []struct {
		name string
		line string
		want *frame // nil: not a frame
	}{
		{"a canonical watch event", `{"frame":12,"at":"1.5ms","json":{"type":"ADDED"}}`, &frame{12, 1500 * time.Microsecond, `{"type":"ADDED"}` + "\n"}},
		{"hand-edited spacing", `{"frame": 12, "at": "1.5ms", "json": {"type":"ADDED"}}`, &frame{12, 1500 * time.Microsecond, `{"type":"ADDED"}` + "\n"}},
		{"a text frame", `{"frame":1,"at":"0s","text":"x\ny"}`, &frame{1, 0, "x\ny"}},
		{"a binary frame", `{"frame":7,"at":"2s","base64":"AAAABGs4cwA="}`, &frame{7, 2 * time.Second, "\x00\x00\x00\x04k8s\x00"}},
		{"base64 with an escaped slash", `{"frame":7,"at":"2s","base64":"\/w=="}`, &frame{7, 2 * time.Second, "\xff"}},
		{"a request line", `{"request":1,"at":"0s","method":"GET","url":"/"}`, nil},
		{"a frame with a key of another kind", `{"frame":1,"at":"0s","text":"x","method":"GET"}`, nil},
		{"two values", `{"frame":1,"at":"0s","text":"x","json":{}}`, nil},
		{"no value", `{"frame":1,"at":"0s"}`, nil},
		{"interaction zero", `{"frame":0,"at":"0s","text":"x"}`, nil},
		{"a negative offset", `{"frame":1,"at":"-1s","text":"x"}`, nil},
		{"not JSON", `{"frame":1,`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id, at, data, ok := ParseFrame([]byte(tt.line))
			var got *frame
			if ok {
				got = &frame{id, at, string(data)}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseFrame(%s) (-want +got):\n%s", tt.line, diff)
			}
		})
	}
}

func TestBalancedTellsAWholeValueFromACutOne(t *testing.T) {
	tests := []struct {
		name, v string
		want    bool
	}{
		{"an object", `{"a":{"b":[1,2,{"c":"d"}]}}`, true},
		{"braces inside strings", `{"a":"}{]["}`, true},
		{"an escaped quote inside a string", `{"a":"x\"}"}`, true},
		{"an escaped backslash before the closing quote", `{"a":"x\\"}`, true},
		{"cut inside a string", `{"a":"x}`, false},
		{"cut inside an object", `{"a":{"b":1}`, false},
		{"two values spliced", `{"a":1}{"b":2}`, false},
		{"a closer too many", `{"a":1}}`, false},
		{"an escaped quote that leaves the string open", `{"a":"x\"}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := balanced([]byte(tt.v)); got != tt.want {
				t.Errorf("balanced(%s) = %v, want %v", tt.v, got, tt.want)
			}
		})
	}
}

func BenchmarkBalancedAgainstValid(b *testing.B) {
	v := []byte(`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-7d9f8c6b5-x2k4q","namespace":"default","uid":"6f1c2d3e-aaaa-bbbb-cccc-1234567890ab","resourceVersion":"123456","labels":{"app":"web","pod-template-hash":"7d9f8c6b5"},"annotations":{"note":"a \"quoted\" value"}},"spec":{"containers":[{"name":"web","image":"nginx:1.27","ports":[{"containerPort":80,"protocol":"TCP"}],"resources":{"limits":{"cpu":"500m","memory":"128Mi"}}}]},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True"}]}}}`)
	b.Run("balanced", func(b *testing.B) {
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			balanced(v)
		}
	})
	b.Run("json.Valid", func(b *testing.B) {
		b.SetBytes(int64(len(v)))
		for b.Loop() {
			json.Valid(v)
		}
	})
}
