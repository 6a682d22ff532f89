package cassettes_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

// podWatch is a cassette of one watch of events over pods, with a list
// before it, as a recorder writes it.
func podWatch(f benchmarks.Format, pods, events int) *cassettes.Cassette {
	s := benchmarks.Generate(f, pods, events)
	c := &cassettes.Cassette{Header: cassettes.Header{Server: "v1.37.2"}}
	list := &cassettes.Interaction{ID: 1, Request: cassettes.Request{Method: "GET", URL: "/api/v1/pods"},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndEOF},
		Frames: []cassettes.Frame{{Data: s.List}}}
	watch := &cassettes.Interaction{ID: 2, At: time.Millisecond, Request: cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{At: time.Hour, Reason: cassettes.EndStopped}}
	for i, ev := range s.Events {
		watch.Frames = append(watch.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: ev})
	}
	c.Interactions = []*cassettes.Interaction{list, watch}
	return c
}

var deltaLine = regexp.MustCompile(`(?m)^\{"frame":\d+,"at":"[^"]*"(,"keep":true)?,"base":(\d+),"delta":`)

func TestDeltaFramesReadBackAsRecorded(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		c := podWatch(f, 40, 2000) // 50 versions a Pod: chains reach MaxDeltaChain
		tests := []struct {
			name   string
			opts   cassettes.WriterOptions
			deltas int // at least this many delta frames, -1: none
		}{
			{"deltas", cassettes.WriterOptions{Deltas: true}, 1900},
			{"a budget of a few frames", cassettes.WriterOptions{Deltas: true, DeltaBudget: 20_000}, 100},
			{"small segments", cassettes.WriterOptions{Deltas: true, SegmentSize: 64 << 10}, 1900},
			{"rotated into parts", cassettes.WriterOptions{Deltas: true, SegmentSize: 64 << 10, MaxSize: 40_000}, 1900},
			{"the default, no deltas", cassettes.WriterOptions{}, -1},
		}
		for _, tt := range tests {
			t.Run(string(f)+"/"+tt.name, func(t *testing.T) {
				p := filepath.Join(dir, fmt.Sprintf("%s-%s.kwrec.zst", f, strings.ReplaceAll(tt.name, " ", "-")))
				cassettetest.Write(t, p, c, tt.opts)
				var raw []byte
				if tt.opts.MaxSize > 0 {
					parts, _ := filepath.Glob(strings.TrimSuffix(p, ".kwrec.zst") + "-*.kwrec.zst")
					if len(parts) < 3 {
						t.Fatalf("%d parts, want several", len(parts))
					}
					for _, part := range parts {
						raw = append(raw, cassettetest.RawText(t, part)...)
					}
					p = parts[0]
				} else {
					raw = cassettetest.RawText(t, p)
				}
				n := len(deltaLine.FindAll(raw, -1))
				if n < tt.deltas || tt.deltas < 0 && n > 0 {
					t.Errorf("%d delta frames of 2000, want %d", n, tt.deltas)
				}
				got, err := cassettes.Load(p)
				if err != nil {
					t.Fatal(err)
				}
				got.Header.Part = 0
				sameCassette(t, c, got)
			})
		}
	}
}

func TestTheKeptFramesStayWithinTheBudget(t *testing.T) {
	c := podWatch(benchmarks.JSON, 40, 400)
	p := filepath.Join(t.TempDir(), "c.kwrec.zst")
	const budget = 30_000
	cassettetest.Write(t, p, c, cassettes.WriterOptions{Deltas: true, DeltaBudget: budget})
	// Replay what a reader keeps: each kept frame until the delta that
	// names it.
	data := map[int]int{}
	for i, f := range c.Interactions[1].Frames {
		data[i] = len(f.Data)
	}
	kept, most, i := map[int]int{}, 0, 0
	for _, line := range bytes.Split(cassettetest.RawText(t, p), []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`{"frame":2,`)) {
			continue
		}
		if m := deltaLine.FindSubmatch(line); m != nil {
			var b int
			fmt.Sscan(string(m[2]), &b)
			if _, ok := kept[b]; !ok {
				t.Fatalf("frame %d is a delta against frame %d, which is not kept", i, b)
			}
			delete(kept, b)
		}
		if bytes.Contains(line[:min(len(line), 60)], []byte(`"keep":true`)) {
			kept[i] = data[i]
		}
		sum := 0
		for _, n := range kept {
			sum += n
		}
		most = max(most, sum)
		i++
	}
	if most > budget || most < budget/2 {
		t.Errorf("a reader keeps up to %d bytes; want at most the budget, %d, and most of it", most, budget)
	}
}

// deltaText is a plain cassette whose watch frames are the lines given.
func deltaText(frames ...string) string {
	s := `{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","redactions":[]}
{"request":1,"at":"0s","method":"GET","url":"/api/v1/pods?watch=true"}
{"response":1,"latency":"1ms","status":200}
`
	for _, f := range frames {
		s += f + "\n"
	}
	return s + `{"end":1,"at":"1s","reason":"eof"}` + "\n"
}

func TestABadDeltaNamesItsLine(t *testing.T) {
	whole := `{"frame":1,"at":"0s","keep":true,"text":"0123456789"}`
	tests := []struct {
		name, text, want string
	}{
		{"a delta against a frame that is not kept", deltaText(`{"frame":1,"at":"0s","text":"0123456789"}`, `{"frame":1,"at":"0s","base":0,"delta":"ąĀ"}`),
			"d:5: frame 1 of interaction 1 is a delta against frame 0, which is not kept"},
		{"a delta against a frame consumed by another", deltaText(whole, `{"frame":1,"at":"0s","base":0,"delta":"ąĀ"}`, `{"frame":1,"at":"0s","base":0,"delta":"ąĀ"}`),
			"d:6: frame 2 of interaction 1 is a delta against frame 0, which is not kept"},
		{"a delta against itself", deltaText(`{"frame":1,"at":"0s","base":0,"delta":"ąĀ"}`),
			"d:4: frame 0 of interaction 1 is a delta against frame 0, which is not before it"},
		{"a copy out of its base", deltaText(whole, `{"frame":1,"at":"0s","base":0,"delta":"ėĀ"}`),
			"d:5: frame 1 of interaction 1 against frame 0: bad delta: copy at byte 0 of 11 bytes from offset 0 is outside the base's 10 bytes"},
		{"a malformed op", deltaText(whole, `{"frame":1,"at":"0s","base":0,"delta":"Ɓ"}`),
			"d:5: frame 1 of interaction 1 against frame 0: bad delta: bad op at byte 0"},
		{"a delta not in the bytes form", deltaText(whole, `{"frame":1,"at":"0s","base":0,"delta":"\u0005"}`),
			`d:5: bad delta frame line: "delta" is not a string in the "bytes" form`},
		{"a base without a delta", deltaText(whole, `{"frame":1,"at":"0s","base":0,"text":"x"}`),
			`d:5: bad delta frame line: a "base" frame line needs "delta" after it`},
		{"a delta against a frame not shared", deltaText(`{"frame":1,"at":"0s","keep":true,"text":"0123456789"}`, `{"frame":1,"at":"0s","from":1,"base":0,"delta":"ąĀ"}`),
			`d:5: frame 1 of interaction 1 is a delta against frame 0 of interaction 1, which is not a "shared" frame before it`},
		{"a copy out of a shared base", deltaText(`{"frame":1,"at":"0s","shared":true,"text":"0123456789"}`, `{"frame":1,"at":"0s","from":1,"base":0,"delta":"ėĀ"}`),
			"d:5: frame 1 of interaction 1 against frame 0 of interaction 1: bad delta: copy at byte 0 of 11 bytes from offset 0 is outside the base's 10 bytes"},
		{"a from without a base", deltaText(whole, `{"frame":1,"at":"0s","from":1,"text":"x"}`),
			`d:5: bad delta frame line: a "from" frame line needs "base" after it`},
		{"a from of interaction 0", deltaText(whole, `{"frame":1,"at":"0s","from":0,"base":0,"delta":"ąĀ"}`),
			`d:5: bad delta frame line: "from" is not an interaction number`},
		{"a shared delta", deltaText(whole, `{"frame":1,"at":"0s","shared":true,"base":0,"delta":"ąĀ"}`),
			`d:5: bad delta frame line: a delta line cannot be "shared"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := cassettes.Read(strings.NewReader(tt.text), "d")
			if !errors.Is(err, cassettes.ErrSyntax) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Read = %v, want ErrSyntax saying %q", err, tt.want)
			}
		})
	}
}

// sameCassette fails t where got differs from want, frame bytes compared
// without a diff of their whole.
func sameCassette(t *testing.T, want, got *cassettes.Cassette) {
	t.Helper()
	if len(want.Interactions) != len(got.Interactions) {
		t.Fatalf("%d interactions, want %d", len(got.Interactions), len(want.Interactions))
	}
	for k, w := range want.Interactions {
		g := got.Interactions[k]
		if len(w.Frames) != len(g.Frames) {
			t.Fatalf("interaction %d: %d frames, want %d", w.ID, len(g.Frames), len(w.Frames))
		}
		for i, f := range w.Frames {
			if f.At != g.Frames[i].At || !bytes.Equal(f.Data, g.Frames[i].Data) {
				t.Fatalf("interaction %d frame %d differs:\n%q\nwant\n%q", w.ID, i, g.Frames[i].Data, f.Data)
			}
		}
		wf, gf := w.Frames, g.Frames
		w.Frames, g.Frames = nil, nil
		diff := cmp.Diff(w, g)
		w.Frames, g.Frames = wf, gf
		if diff != "" {
			t.Errorf("interaction %d differs (-want +got):\n%s", w.ID, diff)
		}
	}
}

// BenchmarkWriterDeltas is the Writer's cost per frame of a compressed
// 2,000-event watch of 400 Pods, with and without deltas.
func BenchmarkWriterDeltas(b *testing.B) {
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		evs := benchmarks.Generate(f, 400, 2000).Events
		for _, deltas := range []bool{false, true} {
			b.Run(fmt.Sprintf("%s/deltas=%v", f, deltas), func(b *testing.B) {
				var n int64
				for _, ev := range evs {
					n += int64(len(ev))
				}
				b.SetBytes(n)
				b.ReportAllocs()
				for b.Loop() {
					w, _ := cassettes.NewWriter(io.Discard, cassettes.Header{}, cassettes.WriterOptions{Compress: true, Deltas: deltas, FlushInterval: time.Hour})
					id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
					w.Response(id, cassettes.Response{Status: 200})
					for i, ev := range evs {
						w.Frame(id, cassettes.Frame{At: time.Duration(i), Data: ev})
					}
					w.Close()
				}
			})
		}
	}
}

func TestACassetteIsWrittenBackInTheFormItWasFound(t *testing.T) {
	c := podWatch(benchmarks.JSON, 20, 200)
	dir := t.TempDir()
	tests := []struct {
		name string
		opts cassettes.WriterOptions
		want cassettes.Form
	}{
		{"the text form", cassettes.WriterOptions{}, cassettes.Form{}},
		{"compressed", cassettes.WriterOptions{Compress: true}, cassettes.Form{Compressed: true}},
		{"compressed with deltas", cassettes.WriterOptions{Compress: true, Deltas: true}, cassettes.Form{Compressed: true, Deltas: true}},
		{"compacted", cassettes.WriterOptions{Compress: true, Compact: true}, cassettes.Form{Compressed: true, Deltas: true}},
		{"compressed with deltas against lists", cassettes.WriterOptions{Compress: true, ListDeltas: true}, cassettes.Form{Compressed: true, ListDeltas: true}},
		{"compressed with both deltas", cassettes.WriterOptions{Compress: true, Deltas: true, ListDeltas: true}, cassettes.Form{Compressed: true, Deltas: true}},
		{"the text form asked for deltas against lists", cassettes.WriterOptions{ListDeltas: true}, cassettes.Form{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".kwrec")
			cassettetest.Write(t, p, c, tt.opts)
			f, err := cassettes.FormOf(p)
			if err != nil {
				t.Fatal(err)
			}
			if f != tt.want {
				t.Fatalf("FormOf = %+v, want %+v", f, tt.want)
			}
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			text, f, err := cassettes.ReadText(bytes.NewReader(b))
			if err != nil || f != tt.want {
				t.Fatalf("ReadText: form %+v, %v; want %+v", f, err, tt.want)
			}

			// Compress compresses the text form it read: deltas if it
			// had them, and the same text again.
			if !f.Compressed {
				return
			}
			var z bytes.Buffer
			if err := cassettes.Compress(&z, bytes.NewReader(text), f); err != nil {
				t.Fatal(err)
			}
			text2, f2, err := cassettes.ReadText(bytes.NewReader(z.Bytes()))
			if err != nil || f2 != tt.want || !bytes.Equal(text2, text) {
				t.Errorf("compressed again: form %+v, %v, same text %v; want %+v", f2, err, bytes.Equal(text2, text), tt.want)
			}
			raw := cassettetest.RawText(t, p)
			if n := len(deltaLine.FindAll(raw, -1)); (n > 0) != tt.want.Deltas {
				t.Errorf("%d delta lines as written, want deltas %v", n, tt.want.Deltas)
			}
			if n := bytes.Count(raw, []byte(`,"from":1,`)); (n > 0) != (tt.want.Deltas || tt.want.ListDeltas) {
				t.Errorf("%d deltas against the list as written, want some: %v", n, tt.want.Deltas || tt.want.ListDeltas)
			}
		})
	}
}

// tableWatch is a cassette of one Table-form watch (kubectl get -w, one
// row an event) over n ConfigMaps, each changed versions times.
func tableWatch(n, versions int) *cassettes.Cassette {
	w := &cassettes.Interaction{ID: 1, Request: cassettes.Request{Method: "GET", URL: "/api/v1/configmaps?watch=true",
		Header: map[string][]string{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{At: time.Hour, Reason: cassettes.EndStopped}}
	rv := 100
	for v := range versions {
		for i := range n {
			rv++
			cols := "null"
			if rv == 101 {
				cols = `[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace.","priority":0}]`
			}
			ev := fmt.Sprintf(`{"type":"MODIFIED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"%d"},"columnDefinitions":%s,"rows":[{"cells":["cm-%d",%d,"%dm"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cm-%d","namespace":"default","uid":"0c1f%04d-7a3e-4c55-9d1e-5b7f3a2c%04d","resourceVersion":"%d","creationTimestamp":"2026-12-01T07:00:00Z","labels":{"app":"web","tier":"frontend"},"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-12-01T07:%02d:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k%d":{}}}}]}}}]}}`,
				rv, cols, i, v+1, v, i, i, i, rv, v, v)
			w.Frames = append(w.Frames, cassettes.Frame{At: time.Duration(rv) * time.Millisecond, Data: []byte(ev + "\n")})
		}
	}
	return &cassettes.Cassette{Header: cassettes.Header{Server: "v1.37.2"}, Interactions: []*cassettes.Interaction{w}}
}

func TestTableFormEventsAreDeltasAgainstTheirObjectsLastRow(t *testing.T) {
	c := tableWatch(10, 6)
	p := filepath.Join(t.TempDir(), "table.kwrec.zst")
	cassettetest.Write(t, p, c, cassettes.WriterOptions{Deltas: true})
	if n := len(deltaLine.FindAll(cassettetest.RawText(t, p), -1)); n != 50 {
		t.Errorf("%d delta frames of 60, want 50: every row after its object's first", n)
	}
	got, err := cassettes.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	sameCassette(t, c, got)
}

// tableList is the Table-form list of tableWatch's n ConfigMaps before
// their first change.
func tableList(n int) []byte {
	var rows []string
	for i := range n {
		rows = append(rows, fmt.Sprintf(`{"cells":["cm-%d",0,"0m"],"object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"cm-%d","namespace":"default","uid":"0c1f%04d-7a3e-4c55-9d1e-5b7f3a2c%04d","resourceVersion":"%d","creationTimestamp":"2026-12-01T07:00:00Z","labels":{"app":"web","tier":"frontend"},"managedFields":[{"manager":"kubectl","operation":"Update","apiVersion":"v1","time":"2026-12-01T06:59:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:k0":{}}}}]}}}`, i, i, i, i, 50+i))
	}
	return []byte(`{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"100"},"columnDefinitions":[{"name":"Name","type":"string","format":"name","description":"Name must be unique within a namespace.","priority":0}],"rows":[` + strings.Join(rows, ",") + "]}\n")
}

// withList returns c with a list interaction before its others, whose one
// frame is list.
func withList(c *cassettes.Cassette, list []byte) *cassettes.Cassette {
	in := &cassettes.Interaction{ID: 1, Request: cassettes.Request{Method: "GET", URL: "/api/v1/configmaps",
		Header: map[string][]string{"Accept": {"application/json;as=Table;v=v1;g=meta.k8s.io"}}},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndEOF},
		Frames: []cassettes.Frame{{Data: list}}}
	for _, w := range c.Interactions {
		w.ID++
		w.At += time.Millisecond
	}
	c.Interactions = append([]*cassettes.Interaction{in}, c.Interactions...)
	return c
}

func TestAWatchsFirstVersionsAreDeltasAgainstTheListBeforeIt(t *testing.T) {
	listSize := len(podWatch(benchmarks.JSON, 40, 0).Interactions[0].Frames[0].Data)
	tests := []struct {
		name         string
		c            *cassettes.Cassette
		lists        bool // ListDeltas, not Deltas
		budget       int64
		shared, from int // lines
	}{
		{"a JSON list's items", podWatch(benchmarks.JSON, 40, 200), false, 0, 1, 40},
		{"a Table list's rows", withList(tableWatch(10, 3), tableList(10)), false, 0, 1, 10},
		{"a list over half the budget: not shared", podWatch(benchmarks.JSON, 40, 200), false, int64(2*listSize - 2), 0, 0},
		{"a list within half the budget", podWatch(benchmarks.JSON, 40, 200), false, int64(2 * listSize), 1, 40},
		{"a protobuf list: not shared", podWatch(benchmarks.Protobuf, 40, 200), false, 0, 0, 0},
		{"deltas against lists only: most events of an object in the list", podWatch(benchmarks.JSON, 40, 200), true, 0, 1, 150},
		{"deltas against lists only, a Table list's rows", withList(tableWatch(10, 3), tableList(10)), true, 0, 1, 10},
		{"deltas against lists only, a list over half the budget: not shared", podWatch(benchmarks.JSON, 40, 200), true, int64(2*listSize - 2), 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "c.kwrec.zst")
			opts := cassettes.WriterOptions{Deltas: !tt.lists, ListDeltas: tt.lists, DeltaBudget: tt.budget}
			cassettetest.Write(t, p, tt.c, opts)
			raw := cassettetest.RawText(t, p)
			if tt.lists && (bytes.Contains(raw, []byte(`"keep":true`)) || len(deltaLine.FindAll(raw, -1)) > 0) {
				t.Errorf("deltas against lists only kept a frame or wrote an object delta")
			}
			if n := bytes.Count(raw, []byte(`{"frame":1,"at":"0s","shared":true,`)); n != tt.shared {
				t.Errorf("%d shared list frames, want %d", n, tt.shared)
			}
			// Once the budget is spent, an object's later version too
			// may be a delta against its item.
			if n := bytes.Count(raw, []byte(`,"from":1,"base":0,"delta":`)); n < tt.from || tt.from == 0 && n > 0 {
				t.Errorf("%d deltas against the list, want %d", n, tt.from)
			}
			got, err := cassettes.Load(p)
			if err != nil {
				t.Fatal(err)
			}
			sameCassette(t, tt.c, got)
			// kwrec cat's text is that of the cassette written without
			// deltas.
			whole := filepath.Join(dir, "whole.kwrec.zst")
			cassettetest.Write(t, whole, tt.c, cassettes.WriterOptions{})
			if got, want := readText(t, p), readText(t, whole); !bytes.Equal(got, want) {
				t.Errorf("the text form differs from the Writer's without deltas")
			}
		})
	}
}
