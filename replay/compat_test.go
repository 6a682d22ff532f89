package replay_test

import (
	"errors"
	"io"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// compatDir holds cassettes written by earlier kwrec versions (see its
// README.md).
const compatDir = "../cassettes/testdata/compat"

// TestOpenReadsCassettesWrittenByEarlierVersions: replay.Open takes every
// recording in cassettes/testdata/compat as the recording it was written
// from, and its index reads every frame back as recorded: in order, in
// one pass, and at random (last first, each delta's base rebuilt from a
// seek point).
func TestOpenReadsCassettesWrittenByEarlierVersions(t *testing.T) {
	for _, file := range cassettetest.Compat {
		t.Run(file.Name, func(t *testing.T) {
			path := filepath.Join(compatDir, file.Name)
			want := cassettetest.Load(t, path) // a kept recording: as cassettes' test checks it
			if file.Source != "" {
				want = cassettetest.Load(t, filepath.Join(compatDir, "..", file.Source))
			}
			r, err := replay.Open(path, replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			if d := cmp.Diff(want.Header, r.Header()); d != "" {
				t.Errorf("header (-recorded +Open):\n%s", d)
			}
			if d := cmp.Diff(want.Interactions, r.Interactions(), cmpopts.IgnoreFields(cassettes.Frame{}, "Data")); d != "" {
				t.Errorf("interactions (-recorded +Open):\n%s", d)
			}
			x, err := index.Open(path, index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if len(x.Interactions) != len(want.Interactions) {
				t.Fatalf("%d interactions indexed, want %d", len(x.Interactions), len(want.Interactions))
			}
			for k, in := range x.Interactions {
				wantFrames := want.Interactions[k].Frames
				if d := cmp.Diff(wantFrames, readAll(t, x, in)); d != "" {
					t.Errorf("interaction %d's frames read in order (-recorded +index):\n%s", in.ID, d)
				}
				if d := cmp.Diff(wantFrames, scanAll(t, x, in)); d != "" {
					t.Errorf("interaction %d's frames scanned (-recorded +index):\n%s", in.ID, d)
				}
				if d := cmp.Diff(wantFrames, readBackwards(t, x, in)); d != "" {
					t.Errorf("interaction %d's frames read last first (-recorded +index):\n%s", in.ID, d)
				}
			}
		})
	}
}

func TestOpenRefusesAFutureVersionByItsVersion(t *testing.T) {
	path := filepath.Join(compatDir, "future-version.kwrec.zst")
	want := path + ":1: cassette format version 2 is not supported (this kwrec reads version 1); re-record the cassette or use a kwrec that reads version 2"
	r, err := replay.Open(path, replay.Options{})
	if err == nil {
		r.Close()
	}
	if err == nil || err.Error() != want || !errors.Is(err, cassettes.ErrUnsupportedVersion) {
		t.Errorf("Open: %v\nwant %s (wrapping %v)", err, want, cassettes.ErrUnsupportedVersion)
	}
}

// readAll reads in's frames with a FrameReader.
func readAll(t *testing.T, x *index.Index, in *index.Interaction) []cassettes.Frame {
	t.Helper()
	fr, err := x.Frames(in, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var frames []cassettes.Frame
	for {
		f, err := fr.Next()
		if err == io.EOF {
			return frames
		}
		if err != nil {
			t.Fatal(err)
		}
		frames = append(frames, f)
	}
}

// scanAll reads in's frames with Index.Scan.
func scanAll(t *testing.T, x *index.Index, in *index.Interaction) []cassettes.Frame {
	t.Helper()
	var frames []cassettes.Frame
	err := x.Scan(in, 0, in.Frames.Len(), func(_ int, f cassettes.Frame) error {
		frames = append(frames, cassettes.Frame{At: f.At, Data: slices.Clone(f.Data)})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return frames
}

// readBackwards reads in's frames one ReadFrames call each, the last
// first, so that none finds its delta's base read before it.
func readBackwards(t *testing.T, x *index.Index, in *index.Interaction) []cassettes.Frame {
	t.Helper()
	n := in.Frames.Len()
	var frames []cassettes.Frame
	if n > 0 {
		frames = make([]cassettes.Frame, n)
	}
	for i := n - 1; i >= 0; i-- {
		err := x.ReadFrames([]index.FrameRef{{In: in, I: i}}, func(_ int, f cassettes.Frame) error {
			frames[i] = cassettes.Frame{At: f.At, Data: slices.Clone(f.Data)}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return frames
}
