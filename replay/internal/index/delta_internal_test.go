package index

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

// TestAFrameReaderKeepsOneVersionOfEachObject: reading a watch of 20
// Pods in order, 50 versions each (chains cut at MaxDeltaChain by
// deltas that only insert), a FrameReader never keeps more than one
// frame per Pod.
func TestAFrameReaderKeepsOneVersionOfEachObject(t *testing.T) {
	s := benchmarks.Generate(benchmarks.JSON, 20, 1000)
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
	x, err := Open(p, Options{})
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
		most = max(most, len(fr.kept))
	}
	if most > 20 {
		t.Errorf("the reader kept up to %d frames of 20 Pods", most)
	}
}
