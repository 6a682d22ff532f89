package cassettefile

import (
	"bytes"
	"errors"
	"fmt"
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
		{"a shared whole frame", `{"frame":1,"at":"1s","shared":true,"json":{}}`, `{"frame":1,"at":"1s","json":{}}`, FrameExt{Shared: true}, ""},
		{"a kept delta against another interaction's frame", `{"frame":9,"at":"1s","keep":true,"from":3,"base":0,"delta":` + string(ops) + `}`, "",
			FrameExt{Keep: true, Delta: true, From: 3, Ops: []byte("\x05\x00"), ID: 9, At: time.Second}, ""},
		{"a from that is no number", `{"frame":2,"at":"5ms","from":x,"base":0,"delta":""}`, "", FrameExt{}, `"from" is not an interaction number`},
		{"a from of 0", `{"frame":2,"at":"5ms","from":0,"base":0,"delta":""}`, "", FrameExt{}, `"from" is not an interaction number`},
		{"a from without a base", `{"frame":2,"at":"5ms","from":1,"json":{}}`, "", FrameExt{}, `a "from" frame line needs "base"`},
		{"a shared delta", `{"frame":2,"at":"5ms","shared":true,"base":0,"delta":""}`, "", FrameExt{}, `a delta line cannot be "shared"`},
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
		for _, from := range []int{0, 2} {
			line := AppendDeltaLine(nil, 7, "1.5s", keep, from, 3, ops)
			_, x, err := CutFrameExt(bytes.TrimSuffix(line, []byte("\n")))
			want := FrameExt{Keep: keep, Delta: true, From: from, Base: 3, Ops: ops, ID: 7, At: 1500 * time.Millisecond}
			if err != nil || !cmp.Equal(x, want) {
				t.Errorf("%s reads back as %+v, %v", line, x, err)
			}
		}
	}
}

// A list's item is the base of a delta against the whole list that
// copies from the item alone.
func TestADeltaAgainstAnItemCopiesFromItAlone(t *testing.T) {
	item := []byte(strings.TrimSuffix(pod, "\n"))
	list := []byte(`{"kind":"PodList","items":[` + string(item) + `,` + string(item) + `]}`)
	lo := bytes.Index(list, item)
	lo = bytes.Index(list[lo+1:], item) + lo + 1 // the second
	hi := lo + len(item)
	target := []byte(strings.Replace(pod, "123456", "123457", 1))
	var e DeltaEncoder
	d := e.AppendRange(nil, list, lo, hi, target)
	if len(d) > 40 {
		t.Errorf("the delta is %d bytes, want at most 40", len(d))
	}
	// Every byte outside the item changed: the same frame comes back.
	other := bytes.Repeat([]byte{'#'}, len(list))
	copy(other[lo:hi], list[lo:hi])
	got, err := ApplyDelta(nil, other, d)
	if err != nil || !bytes.Equal(got, target) {
		t.Errorf("ApplyDelta = %q, %v; want %q", got, err, target)
	}
}

// A shared frame's line has the shared key between its at and its body,
// and a DeltaTable keeps it for deltas of any later interaction, after its
// own ended.
func TestASharedFrameIsABaseForLaterInteractions(t *testing.T) {
	line := appendSharedFrameLine(nil, 1, time.Second, []byte(pod))
	if want := `{"frame":1,"at":"1s","shared":true,"json":` + strings.TrimSuffix(pod, "\n") + "}\n"; string(line) != want {
		t.Fatalf("appendSharedFrameLine wrote %s, want %s", line, want)
	}
	_, x, err := CutFrameExt(line[:len(line)-1])
	if err != nil || !x.Shared || x.Keep || x.Delta {
		t.Fatalf("CutFrameExt read %+v, %v; want a shared whole frame", x, err)
	}
	var tab DeltaTable
	if _, _, err := tab.Frame(1, x, []byte(pod)); err != nil {
		t.Fatal(err)
	}
	tab.End(1)
	next := []byte(strings.Replace(pod, "Running", "Failed", 1))
	var e DeltaEncoder
	d := FrameExt{Delta: true, From: 1, Base: 0, Ops: e.Append(nil, []byte(pod), next)}
	for _, id := range []int{2, 3} { // any number of deltas
		got, base, err := tab.Frame(id, d, nil)
		if err != nil || !bytes.Equal(got, next) || base != 0 {
			t.Errorf("interaction %d: Frame = %q, %d, %v; want the next version, base 0", id, got, base, err)
		}
	}
	d.From = 2
	if _, _, err := tab.Frame(4, d, nil); err == nil || !strings.Contains(err.Error(), `frame 0 of interaction 4 is a delta against frame 0 of interaction 2, which is not a "shared" frame before it`) {
		t.Errorf("a delta against a frame not shared: %v", err)
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

// A DeltaWriter keeps the last version of each object packed, as readers
// do: 40 Pods, each written once and kept, are held in under a third of
// their bytes, and the budget still counts their text.
func TestADeltaWriterHoldsItsKeptFramesPacked(t *testing.T) {
	d := NewDeltaWriter(1 << 20)
	raw := 0
	for i := range 40 {
		ev := strings.NewReplacer("x2k4q", fmt.Sprintf("p%05d", i), "1234567890ab", fmt.Sprintf("%012x", i*7919)).Replace(pod)
		d.Frame(nil, 1, time.Duration(i), []byte(ev))
		raw += len(ev)
	}
	held := 0
	for _, o := range d.ivs[1].objs {
		held += o.frame.Held()
	}
	if len(d.ivs[1].objs) != 40 || d.kept != int64(raw) {
		t.Fatalf("%d objects kept, %d bytes counted; want 40 and %d", len(d.ivs[1].objs), d.kept, raw)
	}
	if held*3 > raw {
		t.Errorf("%d bytes of kept frames held in %d, want at most a third", raw, held)
	}
}
