package replay

import (
	"fmt"

	"github.com/kwrec/kwrec/cassettes"
)

// Open returns a Replayer over the cassette file path that keeps only the
// cassette's structure in memory (about 50 bytes a frame, see
// [cassettes.Index]) and reads frames back from the file as it serves them,
// so a cassette of any size replays in memory proportional to its frame
// count, not its size. The timelines that answer unrecorded requests are
// built in the same single pass over the file, as references into it.
//
// Close the Replayer when done. Options and edits are as for [New]. A
// cassette cut mid-write fails with an error wrapping
// [cassettes.ErrTruncated], naming the file: run `kwrec lint --fix` first.
func Open(path string, opts Options) (*Replayer, error) {
	r, err := newReplayer(opts, nil)
	if err != nil {
		return nil, err
	}
	byID := map[int]*ivState{}
	x, err := cassettes.OpenIndex(path, cassettes.IndexOptions{Visit: func(in *cassettes.Interaction, i int, f cassettes.Frame) error {
		iv := byID[in.ID]
		if iv == nil {
			iv = r.add(in)
			byID[in.ID] = iv
		}
		iv.observe(i, f)
		return nil
	}})
	if err != nil {
		if x != nil {
			x.Close()
		}
		return nil, err
	}
	r.src = indexSource{x}
	r.header = x.Header
	for _, in := range x.Interactions {
		iv := byID[in.ID]
		if iv == nil { // no frames: not visited
			iv = r.add(in)
		}
		r.ivs = append(r.ivs, iv)
	}
	if err := r.ready(opts); err != nil {
		x.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return r, nil
}

// indexSource reads frames back from an indexed cassette file.
type indexSource struct{ x *cassettes.Index }

func (s indexSource) frames(in *cassettes.Interaction, from int) (frameIter, error) {
	fr, err := s.x.Frames(in, from)
	if err != nil {
		return nil, err
	}
	return indexIter{fr}, nil
}

func (s indexSource) readMany(refs []cassettes.FrameRef, fn func(int, []byte) error) error {
	if len(refs) == 0 {
		return nil
	}
	return s.x.ReadFrames(refs, func(k int, f cassettes.Frame) error { return fn(k, f.Data) })
}

func (s indexSource) close() error { return s.x.Close() }

type indexIter struct{ fr *cassettes.FrameReader }

func (it indexIter) next() ([]byte, error) {
	f, err := it.fr.Next()
	return f.Data, err
}

func (it indexIter) close() { it.fr.Close() }
