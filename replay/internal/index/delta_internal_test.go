package index

import (
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

// TestAFrameReaderKeepsOneVersionOfEachObject: reading a watch of 20
// Pods in order, 50 versions each (chains cut at MaxDeltaChain by
// deltas that only insert), a FrameReader never keeps more than one
// frame per Pod, and holds them packed, in under a third of their bytes.
func TestAFrameReaderKeepsOneVersionOfEachObject(t *testing.T) {
	x, err := Open(writeDeltaWatch(t, benchmarks.JSON), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	fr, err := x.Frames(x.Interactions[0], 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	most := 0
	for {
		if _, err := fr.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		if fr.kept == nil {
			continue
		}
		most = max(most, len(fr.kept.m))
		held, n := 0, 0
		for _, pf := range fr.kept.m {
			held += pf.Held()
			n += pf.Len()
		}
		if held*3 > n {
			t.Fatalf("the reader holds %d bytes of kept frames in %d, want at most a third", n, held)
		}
	}
	if most > 20 {
		t.Errorf("the reader kept up to %d frames of 20 Pods", most)
	}
}

// TestReadingInOrderRebuildsNoChain: Scan, a FrameReader and ReadFrames
// of every frame take each delta's base from their own pass, so none
// rebuilds a chain from the file (each would decode its segment again
// from its seek point: what made replay.Open of a protobuf watch with
// deltas fifty times slower than the bare client); from the middle,
// only the first delta of each Pod rebuilds.
func TestReadingInOrderRebuildsNoChain(t *testing.T) {
	x, err := Open(writeDeltaWatch(t, benchmarks.Protobuf), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	in := x.Interactions[0]
	all := make([]FrameRef, in.Frames.Len())
	for i := range all {
		all[i] = FrameRef{In: in, I: i}
	}
	for _, tc := range []struct {
		name string
		read func() error
		most int64
	}{
		{"Scan from the first frame", func() error {
			return x.Scan(in, 0, in.Frames.Len(), func(int, cassettes.Frame) error { return nil })
		}, 0},
		{"a FrameReader from the first frame", func() error {
			fr, err := x.Frames(in, 0)
			if err != nil {
				return err
			}
			defer fr.Close()
			for {
				if _, err := fr.Next(); err == io.EOF {
					return nil
				} else if err != nil {
					return err
				}
			}
		}, 0},
		{"ReadFrames of every frame", func() error {
			return x.ReadFrames(all, func(int, cassettes.Frame) error { return nil })
		}, 0},
		{"ReadFrames of every frame in reverse", func() error {
			rev := slices.Clone(all)
			slices.Reverse(rev)
			return x.ReadFrames(rev, func(int, cassettes.Frame) error { return nil })
		}, 0},
		{"Scan from the middle", func() error {
			return x.Scan(in, 500, in.Frames.Len(), func(int, cassettes.Frame) error { return nil })
		}, 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := x.rebuilt.Load()
			if err := tc.read(); err != nil {
				t.Fatal(err)
			}
			if n := x.rebuilt.Load() - before; n > tc.most {
				t.Errorf("%d chains rebuilt, want at most %d", n, tc.most)
			}
		})
	}
}

// writeDeltaWatch writes a watch of 20 Pods, 50 versions each, in
// format f with object deltas in 16 KiB segments, and returns its path.
func writeDeltaWatch(t *testing.T, f benchmarks.Format) string {
	t.Helper()
	s := benchmarks.Generate(f, 20, 1000)
	p := filepath.Join(t.TempDir(), "w.kwrec.zst")
	w, err := cassettes.Create(p, cassettes.Header{}, cassettes.WriterOptions{Deltas: true, SegmentSize: 16 << 10})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i, ev := range s.Events {
		w.Frame(id, cassettes.Frame{At: time.Duration(i), Data: ev})
	}
	w.End(id, cassettes.End{At: time.Hour, Reason: cassettes.EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return p
}
