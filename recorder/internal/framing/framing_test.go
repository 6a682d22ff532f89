package framing

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// feed writes body to w in chunks of the given sizes (cycled), then flushes.
func feed(w Framer, body []byte, sizes []int) {
	i := 0
	for len(body) > 0 {
		n := 1
		if len(sizes) > 0 {
			n = sizes[i%len(sizes)]
			i++
		}
		if n <= 0 || n > len(body) {
			n = len(body)
		}
		w.Write(body[:n])
		body = body[n:]
	}
	w.Flush()
}

func strs(frames [][]byte) []string {
	out := make([]string, len(frames))
	for i, f := range frames {
		out[i] = string(f)
	}
	return out
}

func jsonFrames(body string, sizes []int) []string {
	var got [][]byte
	feed(&JSON{Emit: func(b []byte) { got = append(got, b) }}, []byte(body), sizes)
	return strs(got)
}

func TestJSONFrames(t *testing.T) {
	ev1 := `{"type":"ADDED","object":{"kind":"ConfigMap","data":{"a":"x}y\"\n{"}}}` + "\n"
	ev2 := `{"type":"MODIFIED","object":{"metadata":{"name":"b\\"}}}` + "\n"
	bm := `{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"218"}}}` + "\n"
	tests := []struct {
		name  string
		body  string
		sizes []int
		want  []string
	}{
		{"one event in one chunk is one frame", ev1, nil, []string{ev1}},
		{"events split byte by byte are reassembled", ev1 + ev2 + bm, []int{1}, []string{ev1, ev2, bm}},
		{"several events in one chunk are separate frames", ev1 + ev2 + bm, []int{1 << 20}, []string{ev1, ev2, bm}},
		{"a 2048-byte server chunking splits nothing", strings.Repeat(ev1, 40), []int{2048}, repeat(ev1, 40)},
		{"braces and newlines inside strings do not end an event", `{"a":"}\n}"}` + "\n", []int{3}, []string{`{"a":"}\n}"}` + "\n"}},
		{"an escaped backslash before a quote ends the string", `{"a":"\\"}` + "\n" + `{}` + "\n", []int{2}, []string{`{"a":"\\"}` + "\n", "{}\n"}},
		{"values without newlines between them are separate frames", `{"a":1}{"b":2}[3]`, []int{5}, []string{`{"a":1}`, `{"b":2}`, `[3]`}},
		{"whitespace before a value belongs to its frame", "  \n{}\r\n \t{}\n", []int{1}, []string{"  \n{}\r\n", " \t{}\n"}},
		{"a value cut by the end of the stream is a last frame", ev1 + `{"type":"ADD`, []int{7}, []string{ev1, `{"type":"ADD`}},
		{"top-level scalars end at whitespace", "12 true\n\"s\"\n", []int{1}, []string{"12 ", "true\n", "\"s\"\n"}},
		{"a stray closing brace ends a frame rather than nesting below zero", "}}\n{}\n", []int{1}, []string{"}", "}\n", "{}\n"}},
		{"an empty body has no frames", "", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := jsonFrames(tt.body, tt.sizes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, strs(splitJSON([]byte(tt.body)))); diff != "" {
				t.Errorf("splitJSON (-want +got):\n%s", diff)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestJSONMaxSplitsARunawayFrame(t *testing.T) {
	var got [][]byte
	f := &JSON{Emit: func(b []byte) { got = append(got, b) }, Max: 10}
	body := `{"a":"` + strings.Repeat("x", 25) + `"}` + "\n{}\n"
	feed(f, []byte(body), []int{3})
	if string(bytes.Join(got, nil)) != body {
		t.Fatalf("frames do not concatenate to the body: %q", got)
	}
	for _, fr := range got[:len(got)-1] {
		if len(fr) > 10 {
			t.Errorf("frame of %d bytes exceeds Max 10: %q", len(fr), fr)
		}
	}
	if last := string(got[len(got)-1]); last != "{}\n" {
		t.Errorf("after the split value, framing resumed wrong: last frame %q, want %q", last, "{}\n")
	}
}

func protoFrame(msg string) []byte {
	b := make([]byte, 4, 4+len(msg))
	binary.BigEndian.PutUint32(b, uint32(len(msg)))
	return append(b, msg...)
}

func TestProtoFrames(t *testing.T) {
	a, b, empty := protoFrame("hello\n{"), protoFrame(strings.Repeat("\x00\xff", 3000)), protoFrame("")
	body := bytes.Join([][]byte{a, b, empty, a}, nil)
	tests := []struct {
		name  string
		body  []byte
		sizes []int
		want  [][]byte
	}{
		{"whole stream in one chunk", body, nil, [][]byte{a, b, empty, a}},
		{"byte by byte, prefixes split", body, []int{1}, [][]byte{a, b, empty, a}},
		{"2048-byte chunks", body, []int{2048}, [][]byte{a, b, empty, a}},
		{"a cut last message is a last frame", append(append([]byte{}, a...), b[:100]...), []int{7}, [][]byte{a, b[:100]}},
		{"a cut prefix is a last frame", append(append([]byte{}, a...), 0, 0), []int{3}, [][]byte{a, {0, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got [][]byte
			feed(&Proto{Emit: func(b []byte) { got = append(got, b) }}, tt.body, tt.sizes)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, splitProto(tt.body)); diff != "" {
				t.Errorf("splitProto (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProtoOversizedLengthFallsBackToChunks(t *testing.T) {
	var got [][]byte
	f := &Proto{Emit: func(b []byte) { got = append(got, b) }, Max: 100}
	a := protoFrame("ok")
	bad := []byte{0xff, 0xff, 0xff, 0xff, 1, 2, 3}
	f.Write(a)
	f.Write(bad[:2])
	f.Write(bad[2:])
	f.Write([]byte("more"))
	f.Flush()
	want := [][]byte{a, bad, []byte("more")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

func TestWholeAndChunks(t *testing.T) {
	var got [][]byte
	w := &Whole{Emit: func(b []byte) { got = append(got, b) }}
	feed(w, []byte(`{"kind":"List"}`+"\n"), []int{2})
	if diff := cmp.Diff([][]byte{[]byte(`{"kind":"List"}` + "\n")}, got); diff != "" {
		t.Errorf("Whole (-want +got):\n%s", diff)
	}
	got = nil
	feed(&Chunks{Emit: func(b []byte) { got = append(got, b) }}, []byte("abcdefg"), []int{3})
	if diff := cmp.Diff([][]byte{[]byte("abc"), []byte("def"), []byte("g")}, got); diff != "" {
		t.Errorf("Chunks (-want +got):\n%s", diff)
	}
}

// sizesFrom turns fuzz bytes into chunk sizes (1..256).
func sizesFrom(b []byte) []int {
	s := make([]int, len(b))
	for i, c := range b {
		s[i] = int(c) + 1
	}
	return s
}

func FuzzJSONFramer(f *testing.F) {
	f.Add([]byte(`{"type":"ADDED","object":{"a":"}\"\\"}}`+"\n"+`{"b":[1,2]}`), []byte{3, 1, 200}, "x")
	f.Add([]byte("\"\\\n{}\n"), []byte{0}, "{\n\"}")
	f.Add([]byte(strings.Repeat(`{"k":"v"}`+"\n", 300)), []byte{255, 255, 255, 255, 255, 255, 255, 255}, "")
	f.Fuzz(func(t *testing.T, body, cuts []byte, s string) {
		// Any bytes: chunking never changes the frames, and the frames
		// always concatenate to the input.
		var got [][]byte
		feed(&JSON{Emit: func(b []byte) { got = append(got, b) }}, body, sizesFrom(cuts))
		want := splitJSON(body)
		if diff := cmp.Diff(strs(want), strs(got)); diff != "" {
			t.Fatalf("chunked framing differs from SplitJSON (-want +got):\n%s", diff)
		}
		if !bytes.Equal(bytes.Join(got, nil), body) {
			t.Fatalf("frames do not concatenate to the input")
		}
		// A real watch stream, events holding arbitrary strings, packed in
		// arbitrary chunks: exactly one frame per event.
		var events []string
		var stream []byte
		for i := range 3 {
			ev, err := json.Marshal(map[string]any{"type": "ADDED", "object": map[string]any{"n": i, "s": s + fmt.Sprint(i), "k": []any{s, map[string]string{s: s}}}})
			if err != nil {
				t.Fatal(err)
			}
			events = append(events, string(ev)+"\n")
			stream = append(append(stream, ev...), '\n')
		}
		got = nil
		feed(&JSON{Emit: func(b []byte) { got = append(got, b) }}, stream, sizesFrom(cuts))
		if diff := cmp.Diff(events, strs(got)); diff != "" {
			t.Fatalf("watch events (-want +got):\n%s", diff)
		}
	})
}

func FuzzProtoFramer(f *testing.F) {
	f.Add(bytes.Join([][]byte{protoFrame("abc"), protoFrame(""), protoFrame("\x00\x00\x00\x09")}, nil), []byte{1, 2, 3}, []byte("msg"))
	f.Add([]byte{0, 0, 0}, []byte{0}, []byte{})
	f.Fuzz(func(t *testing.T, body, cuts, msg []byte) {
		var got [][]byte
		feed(&Proto{Emit: func(b []byte) { got = append(got, b) }}, body, sizesFrom(cuts))
		want := splitProto(body)
		if n := len(want); n > 0 && len(want[n-1]) >= 4 && binary.BigEndian.Uint32(want[n-1]) > DefaultMax {
			// Past an impossible length the framer emits the chunks as
			// written: only the frames before it are chunk-independent.
			want = want[:n-1]
			if len(got) < len(want) {
				t.Fatalf("%d frames, want at least %d", len(got), len(want))
			}
			got = got[:len(want)]
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("chunked framing differs from SplitProto (-want +got):\n%s", diff)
		}
		var all [][]byte
		feed(&Proto{Emit: func(b []byte) { all = append(all, b) }}, body, sizesFrom(cuts))
		if !bytes.Equal(bytes.Join(all, nil), body) {
			t.Fatalf("frames do not concatenate to the input")
		}
		want = nil
		for i := range 3 {
			want = append(want, protoFrame(string(msg[:len(msg)*i/2])))
		}
		got = nil
		feed(&Proto{Emit: func(b []byte) { got = append(got, b) }}, bytes.Join(want, nil), sizesFrom(cuts))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("well-formed stream (-want +got):\n%s", diff)
		}
	})
}

// splitJSON splits a whole body the way [JSON] does.
func splitJSON(body []byte) [][]byte {
	var out [][]byte
	var s jsonScan
	start := 0
	for i, c := range body {
		if cut := s.step(c); cut >= 0 {
			end := i + cut
			if end > start {
				out = append(out, body[start:end])
			}
			start = end
		}
	}
	if start < len(body) {
		out = append(out, body[start:])
	}
	return out
}

// splitProto splits a whole body the way [Proto] does (with the default
// Max), except past a length larger than [DefaultMax]: splitProto returns
// the rest as one frame where [Proto] emits the chunks as written.
func splitProto(body []byte) [][]byte {
	var out [][]byte
	for len(body) > 0 {
		n, ok := protoLen(body, DefaultMax)
		if !ok || n < 0 || n > len(body) {
			return append(out, body)
		}
		out = append(out, body[:n])
		body = body[n:]
	}
	return out
}
