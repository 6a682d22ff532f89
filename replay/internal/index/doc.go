// Package index keeps a cassette file's structure in memory and reads its
// frame bytes back from the file on demand: what replay.Open stands on, so
// a cassette of any size replays in memory proportional to its frame
// count, not its size. It is internal because replay is its only user;
// package cassettes keeps the model, the Reader and Writer public.
//
// An [Index] holds, per [Interaction], the request, the response head,
// the end and, per [Frame], only its offset and where its line is: about
// 24 bytes a frame. [Interaction] is its own type, not a
// cassettes.Interaction with empty frames: its frames have no bytes.
//
// # Recipe
//
//	x, err := index.Open("watch.kwrec.zst", index.Options{
//		// Once per frame, in file order, during the single pass: what a
//		// caller needs from every frame (resourceVersions) without a
//		// second one. f.Data is valid only during the call.
//		Visit: func(in *index.Interaction, i int, f cassettes.Frame) error { return nil },
//	})
//	defer x.Close()
//	in := x.Interactions[0]
//	fr, _ := x.Frames(in, 10) // frames 10, 11, ... of in, in order
//	f, err := fr.Next()      // io.EOF after the last
//	fr.Close()
//	// Scattered frames (list items a get or a re-list needs), each
//	// read once, in file order:
//	x.ReadFrames([]index.FrameRef{{In: in, I: 3}, {In: in, I: 1}}, func(k int, f cassettes.Frame) error { return nil })
//
// Open checks the cassette as cassettes.Load does (same errors, the
// index of everything before a cut with [cassettes.ErrTruncated]), except
// that it checks a JSON frame only for being one whole value, and in the
// compressed form (whose zstd checksums prove its bytes) not at all. It
// reads with a cassettes.Reader over a cassettefile.Scanner of its own
// (handed to cassettes.NewReader as a cassettefile.Scanned), which lends
// it each line uncopied (hence
// Visit's f.Data, valid only during the call) and tells it where each
// line is and the compressed form's seek comments; frames are read back
// with the cassettefile.Lines it places there. A frame read back is
// checked against the index and fails with [ErrModified] if the file
// changed.
//
// The index is its own package, not part of cassettefile, because it
// speaks cassettes' model (Header, Request, Frame, ParseError), and
// cassettes imports cassettefile.
//
// A frame written as an object delta (see the cassettes package doc) is
// rebuilt from its base: the pass notes which frame each delta copies
// from (4 bytes a frame, for interactions that have deltas), a
// [FrameReader] keeps the frames later deltas copy from until they do
// (at most the Writer's cassettes.WriterOptions.DeltaBudget), and a read
// whose base is not at hand (from the middle, [Index.ReadFrames])
// rebuilds the base's chain, at most cassettes.MaxDeltaChain frames. A
// chain may start with a delta against a list frame the Writer marked
// shared: the Index reads each such list once and keeps it, packed
// (cassettefile.PackedFrame), for every reader (at most half the delta
// budget of list text).
//
// A rotated recording (cassettes.Parts) indexes as one cassette: frame
// offsets run through its parts' texts end to end, and a frame is read
// from the part its offset falls in, decoding from that part's seek
// comments.
package index
