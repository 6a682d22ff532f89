package cassettefile

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const pod = `{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":"web-7d9f8c6b5-x2k4q","namespace":"default","uid":"6f1c2d3e-aaaa-bbbb-cccc-1234567890ab","resourceVersion":"123456"},"spec":{"containers":[{"name":"web","image":"nginx:1.27"}]},"status":{"phase":"Running","podIP":"10.1.2.3"}}}` + "\n"

// deltaRoundTrip checks that a delta of target against base rebuilds
// target, and returns the delta.
func deltaRoundTrip(t *testing.T, base, target []byte) []byte {
	t.Helper()
	var e DeltaEncoder
	d := e.Append(nil, base, target)
	got, err := ApplyDelta(nil, base, d)
	if err != nil {
		t.Fatalf("ApplyDelta of what the encoder wrote: %v", err)
	}
	if !bytes.Equal(got, target) {
		t.Fatalf("the delta rebuilds %q, want %q", got, target)
	}
	if len(base) == 0 && DeltaCopies(d) {
		t.Fatalf("a delta against no base copies from it: %q", d)
	}
	return d
}

func TestADeltaRebuildsItsFrame(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	next := strings.NewReplacer(`"123456"`, `"123457"`, `10.1.2.3`, `10.1.2.44`, "Running", "Succeeded").Replace(pod)
	tests := []struct {
		name         string
		base, target []byte
		most         int // the delta's size at most; 0: any
	}{
		{"the next version of an object", []byte(pod), []byte(next), 40},
		{"the same frame again", []byte(pod), []byte(pod), 8},
		{"a field inserted at the start", []byte(pod), []byte(`{"x":1,` + pod[1:]), 24},
		{"nothing in common", []byte(pod), random(300), 0},
		{"an empty frame", []byte(pod), nil, 0},
		{"no base", nil, []byte(pod), 0},
		{"binary frames that share their middle", append(append(random(50), pod...), random(20)...), append(append(random(30), pod...), random(40)...), 120},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := deltaRoundTrip(t, tt.base, tt.target)
			if tt.most > 0 && len(d) > tt.most {
				t.Errorf("the delta is %d bytes, want at most %d", len(d), tt.most)
			}
		})
	}
}

func TestABadDeltaIsAnErrorNotAPanic(t *testing.T) {
	base := []byte("0123456789")
	tests := []struct {
		name, delta, want string
	}{
		{"an op cut in its varint", "\x80", "bad op at byte 0"},
		{"an insert past the end", "\x0aab", "runs past the delta's end"},
		{"a copy with no offset", "\x05", "has no offset"},
		{"a copy past the base's end", "\x17\x00", "outside the base's 10 bytes"},
		{"a copy before the base's start", "\x03\x01\x03\x7f", "from offset -1"},
		{"an op of length 0", "\x00", "has length 0"},
		{"an op longer than a line", "\x81\x80\x80\x80\x80\x01", "has length"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ApplyDelta(nil, base, []byte(tt.delta))
			if !errors.Is(err, ErrBadDelta) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("ApplyDelta(%q) = %v, want ErrBadDelta saying %q", tt.delta, err, tt.want)
			}
		})
	}
}

func TestCutFrameExtReadsTheDeltaKeys(t *testing.T) {
	ops := AppendBytesString(nil, []byte("\x05\x00"))
	tests := []struct {
		name, line, rest string
		want             FrameExt
		err              string
	}{
		{"a whole frame", `{"frame":1,"at":"1s","json":{}}`, `{"frame":1,"at":"1s","json":{}}`, FrameExt{}, ""},
		{"a kept whole frame", `{"frame":1,"at":"1s","keep":true,"json":{}}`, `{"frame":1,"at":"1s","json":{}}`, FrameExt{Keep: true}, ""},
		{"a kept delta", `{"frame":2,"at":"1s","keep":true,"base":12,"delta":` + string(ops) + `}`, "",
			FrameExt{Keep: true, Delta: true, Base: 12, Ops: []byte("\x05\x00"), ID: 2, At: time.Second}, ""},
		{"a delta", `{"frame":2,"at":"5ms","base":0,"delta":""}`, "", FrameExt{Delta: true, Ops: []byte{}, ID: 2, At: 5 * time.Millisecond}, ""},
		{"a base that is no number", `{"frame":2,"at":"5ms","base":x,"delta":""}`, "", FrameExt{}, `"base" is not a frame number`},
		{"a base with a leading zero", `{"frame":2,"at":"5ms","base":01,"delta":""}`, "", FrameExt{}, `"base" is not a frame number`},
		{"a base without a delta", `{"frame":2,"at":"5ms","base":1,"json":{}}`, "", FrameExt{}, `needs "delta"`},
		{"a delta that is not in the bytes form", `{"frame":2,"at":"5ms","base":1,"delta":"\u0041"}`, "", FrameExt{}, `not a string in the "bytes" form`},
		{"a bad offset", `{"frame":2,"at":"soon","base":1,"delta":""}`, "", FrameExt{}, `bad "frame" or "at"`},
		{"a request line", `{"request":1,"at":"0s"}`, `{"request":1,"at":"0s"}`, FrameExt{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rest, x, err := CutFrameExt([]byte(tt.line))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("CutFrameExt(%s) = %v, want an error saying %q", tt.line, err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, x); diff != "" {
				t.Errorf("CutFrameExt(%s) (-want +got):\n%s", tt.line, diff)
			}
			if !x.Delta && string(rest) != tt.rest {
				t.Errorf("CutFrameExt(%s) leaves %s, want %s", tt.line, rest, tt.rest)
			}
		})
	}
}

func TestAWrittenDeltaLineReadsBack(t *testing.T) {
	var e DeltaEncoder
	ops := e.Append(nil, []byte(pod), []byte(strings.Replace(pod, "123456", "123457", 1)))
	for _, keep := range []bool{false, true} {
		line := AppendDeltaLine(nil, 7, "1.5s", keep, 3, ops)
		_, x, err := CutFrameExt(bytes.TrimSuffix(line, []byte("\n")))
		want := FrameExt{Keep: keep, Delta: true, Base: 3, Ops: ops, ID: 7, At: 1500 * time.Millisecond}
		if err != nil || !cmp.Equal(x, want) {
			t.Errorf("%s reads back as %+v, %v", line, x, err)
		}
	}
}

func FuzzDelta(f *testing.F) {
	f.Add([]byte(pod), []byte(strings.Replace(pod, "123456", "123457", 1)))
	f.Add([]byte("0123456789"), []byte("\x15\x00"))
	f.Add([]byte{}, []byte("\x80"))
	f.Fuzz(func(t *testing.T, base, target []byte) {
		deltaRoundTrip(t, base, target)
		// Any bytes as a delta: an error or a frame, never a panic.
		if out, err := ApplyDelta(nil, base, target); err == nil && len(out) > MaxDeltaOutput {
			t.Fatalf("a %d-byte delta built %d bytes", len(target), len(out))
		}
		_, _, _ = CutFrameExt(append([]byte(`{"frame":1,"at":"1s","base":0,"delta":`), target...))
	})
}

// A kept frame's line has the keep key between its at and its body, where
// CutFrameExt looks for it.
func TestAKeptFrameLineHasTheKeepKeyAfterAt(t *testing.T) {
	got := AppendFrameLine(nil, 1, time.Second, []byte("{}\n"), true, true)
	if want := `{"frame":1,"at":"1s","keep":true,"json":{}}` + "\n"; string(got) != want {
		t.Errorf("AppendFrameLine wrote %s, want %s", got, want)
	}
	_, x, err := CutFrameExt(got[:len(got)-1])
	if err != nil || !x.Keep || x.Delta {
		t.Errorf("CutFrameExt read %+v, %v; want a kept whole frame", x, err)
	}
}
