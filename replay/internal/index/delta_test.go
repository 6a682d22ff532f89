package index_test

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// TestAnIndexReadsDeltaFramesFromAnywhere: a watch whose events are
// deltas against their Pods' previous versions (50 versions a Pod,
// chains up to cassettes.MaxDeltaChain), each Pod's first against its
// item in the list before the watch (JSON), reads back as recorded in
// order from any frame, and frame by frame in any order.
func TestAnIndexReadsDeltaFramesFromAnywhere(t *testing.T) {
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		s := benchmarks.Generate(f, 20, 1000)
		c := &cassettes.Cassette{Interactions: []*cassettes.Interaction{
			{ID: 1, Request: cassettes.Request{Method: "GET", URL: "/api/v1/pods"},
				Response: &cassettes.Response{Status: 200}, End: &cassettes.End{Reason: cassettes.EndEOF},
				Frames: []cassettes.Frame{{Data: s.List}}},
			{ID: 2, Request: cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"},
				Response: &cassettes.Response{Status: 200}, End: &cassettes.End{At: time.Hour, Reason: cassettes.EndEOF}}}}
		want := c.Interactions[1]
		for i, ev := range s.Events {
			want.Frames = append(want.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: ev})
		}
		for _, tc := range []struct {
			name string
			opts cassettes.WriterOptions
		}{
			{"segments of 16 KiB", cassettes.WriterOptions{Deltas: true, SegmentSize: 16 << 10}},
			{"one zstd frame", cassettes.WriterOptions{Deltas: true, SegmentSize: -1}},
			{"rotated parts", cassettes.WriterOptions{Deltas: true, SegmentSize: 16 << 10, MaxSize: 30_000}},
			// Every version against the list, read from its packed chunks.
			{"deltas against the list alone", cassettes.WriterOptions{ListDeltas: true, SegmentSize: 16 << 10}},
		} {
			if tc.opts.ListDeltas && f == benchmarks.Protobuf {
				continue // a protobuf list's items are not keyed: no delta
			}
			t.Run(string(f)+"/"+tc.name, func(t *testing.T) {
				dir := t.TempDir()
				p := filepath.Join(dir, "w.kwrec.zst")
				cassettetest.Write(t, p, c, tc.opts)
				if tc.opts.MaxSize > 0 {
					p = filepath.Join(dir, "w-*.kwrec.zst")
				} else {
					raw := cassettetest.RawText(t, p)
					// With deltas against the list alone, a Pod's 50th version
					// has drifted from its item more than its 2nd.
					least := 900
					if tc.opts.ListDeltas {
						least = 500
					}
					if n := bytes.Count(raw, []byte(`"delta":`)); n < least {
						t.Fatalf("%d delta frames of 1000, want at least %d", n, least)
					}
					// The list's items are the first versions' bases in JSON,
					// and every version's with deltas against lists alone.
					wantFrom := 20
					if f == benchmarks.Protobuf {
						wantFrom = 0
					}
					n := bytes.Count(raw, []byte(`,"from":1,"base":0,`))
					switch {
					case tc.opts.ListDeltas && n < least:
						t.Fatalf("%d deltas against the list of 1000 frames", n)
					case !tc.opts.ListDeltas && n != wantFrom:
						t.Fatalf("%d deltas against the list, want %d", n, wantFrom)
					}
				}
				visited := 0
				x, err := index.Open(p, index.Options{Visit: func(in *index.Interaction, i int, fr cassettes.Frame) error {
					if in.ID == 1 {
						return nil
					}
					if !bytes.Equal(fr.Data, want.Frames[i].Data) {
						t.Errorf("Visit: frame %d differs", i)
					}
					visited++
					return nil
				}})
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				if visited != len(want.Frames) {
					t.Errorf("Visit saw %d frames, want %d", visited, len(want.Frames))
				}
				in := x.Interactions[1]
				for _, from := range []int{0, 1, 5, 333, 500, 999} {
					got := readAll(t, x, in, from)
					for i, fr := range got {
						if !bytes.Equal(fr.Data, want.Frames[from+i].Data) {
							t.Fatalf("from %d: frame %d differs", from, from+i)
						}
					}
				}
				for _, from := range []int{0, 500} {
					err := x.Scan(in, from, in.Frames.Len(), func(i int, fr cassettes.Frame) error {
						if !bytes.Equal(fr.Data, want.Frames[i].Data) {
							t.Errorf("Scan from %d: frame %d differs", from, i)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				var refs []index.FrameRef
				for _, i := range rand.New(rand.NewPCG(5, 6)).Perm(in.Frames.Len())[:200] {
					refs = append(refs, index.FrameRef{In: in, I: i})
				}
				err = x.ReadFrames(refs, func(k int, fr cassettes.Frame) error {
					if !bytes.Equal(fr.Data, want.Frames[refs[k].I].Data) {
						t.Errorf("ReadFrames: frame %d differs", refs[k].I)
					}
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
			})
		}
	}
}

// TestACutDeltaCassetteIndexesWhatCameBefore: deltas only look back, so a
// compressed cassette cut at a segment boundary indexes and reads back
// every frame before the cut.
func TestACutDeltaCassetteIndexesWhatCameBefore(t *testing.T) {
	s := benchmarks.Generate(benchmarks.JSON, 20, 600)
	c := &cassettes.Cassette{Interactions: []*cassettes.Interaction{{ID: 1, Request: cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{At: time.Hour, Reason: cassettes.EndEOF}}}}
	want := c.Interactions[0]
	for i, ev := range s.Events {
		want.Frames = append(want.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: ev})
	}
	dir := t.TempDir()
	p := filepath.Join(dir, "w.kwrec.zst")
	cassettetest.Write(t, p, c, cassettes.WriterOptions{Deltas: true, SegmentSize: 16 << 10})
	m := regexp.MustCompile(`# kwrec:seek zstd=(\d+)`).FindAllSubmatch(cassettetest.RawText(t, p), -1)
	if len(m) < 4 {
		t.Fatalf("%d seek comments, want several", len(m))
	}
	n, _ := strconv.Atoi(string(m[len(m)/2][1]))
	full, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	cut := filepath.Join(dir, "cut.kwrec.zst")
	if err := os.WriteFile(cut, full[:n], 0o644); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(cut, index.Options{})
	if !errors.Is(err, cassettes.ErrTruncated) {
		t.Fatalf("Open of a cut cassette: %v, want ErrTruncated", err)
	}
	defer x.Close()
	in := x.Interactions[0]
	if in.Frames.Len() < 100 || in.Frames.Len() >= len(want.Frames) {
		t.Fatalf("%d frames before the cut", in.Frames.Len())
	}
	for _, from := range []int{0, in.Frames.Len() / 2} {
		for i, fr := range readAll(t, x, in, from) {
			if !bytes.Equal(fr.Data, want.Frames[from+i].Data) {
				t.Fatalf("from %d: frame %d differs", from, from+i)
			}
		}
	}
}
