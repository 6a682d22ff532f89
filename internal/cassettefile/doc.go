// Package cassetteline is the line level of the cassette format, below
// package cassettes' model, shared by cassettes and kwrec's index of a
// cassette file (internal/index), so that neither copies the other and
// cassettes exports only what users call.
//
// It knows four things, each described for users in the cassettes
// package doc:
//
//   - frame lines, the bulk of a cassette: [ParseCanonical] reads the
//     shape a Writer writes without a general JSON decoder, checking the
//     value as much as a [Check] says; [ParseFrame] reads any frame line
//     again once it has been checked; [FrameValue] is a frame line's
//     value, "json", "text" or "base64";
//   - the compressed form's seek comments ([SeekPoint],
//     [AppendSeekComment], [ParseSeekComment]) and the zstd decoder every
//     reader uses ([NewDecoder]);
//   - object deltas, a frame written as the changes from an earlier frame
//     of its interaction: the codec ([DeltaEncoder], [ApplyDelta]) and
//     the frame line's keep and delta keys ([CutFrameExt],
//     [AppendDeltaLine]);
//   - a [Source]: a cassette read for an index. cassettes.NewReader,
//     given a *Source as its io.Reader, checks frames only as the Source
//     says and records in it where each line is in the text form and the
//     seek comments, which the index needs to read a frame back later and
//     a public Reader has no reason to tell; with Borrow it lends each
//     line from its buffer instead of copying it.
package cassettefile
