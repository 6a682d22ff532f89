// Package cassettefile is the cassette format's one home below package
// cassettes' model: the file's lines, read and written, for cassettes'
// Reader and Writer and for kwrec's index of a cassette file
// (replay/internal/index, which replay.Open and replay.History stand on), so
// that neither copies the other and cassettes exports only what users
// call. Each thing it knows is described for users in the cassettes
// package doc.
//
// It holds:
//
//   - the one line scanner, [Scanner]: the lines of a cassette's files,
//     compressed (zstd frames, told by their magic, decoded by
//     [NewDecoder]) or plain, a rotated recording's parts as one text; it
//     copies each line or lends it from its buffer
//     ([ScanOptions.Borrow]), decodes ahead on a second goroutine for a
//     whole-file pass ([ScanOptions.Ahead]), and tells, by its methods,
//     where each line is ([Scanner.Line]), where each file's text starts
//     ([Scanner.Files]), the seek comments ([Scanner.Seeks]) and the base
//     each delta frame copies from ([Scanner.Base]);
//   - [Lines]: those lines read back at the offsets the Scanner told, in
//     the compressed form from the nearest seek comment whose claim
//     checks out;
//   - frame lines, the bulk of a cassette: [AppendFrameLine] writes them
//     as a Writer does; [ParseCanonical] reads that shape back without a
//     general JSON decoder, checking the
//     value as much as a [Check] says; [ParseFrame] reads any frame line
//     again once it has been checked; [FrameValue] is a frame line's
//     value, "json", "text" or "base64"; the "bytes" form
//     ([AppendBytesString]), JSON strings and durations are read here
//     without encoding/json or time.ParseDuration;
//   - the compressed form's seek comments ([SeekPoint],
//     [AppendSeekComment], [ParseSeekComment]);
//   - object deltas, a frame written as the changes from an earlier frame
//     of its interaction or from its object's item in a list before it:
//     the codec ([DeltaEncoder], [ApplyDelta]), the list items' keys
//     (wire.ListItemKeys), the frame line's keep, shared, from and delta
//     keys ([CutFrameExt], [AppendDeltaLine],
//     [ParseFrameLine]), a writer's choice of which frames become deltas
//     ([DeltaWriter], [MaxDeltaChain]), a reader's table of the frames
//     kept for later deltas ([DeltaTable]) and the shared lists they hold
//     packed ([PackedFrame], [Pack]); kwrec's index rebuilds a
//     frame read back at random from its chain of bases with the same
//     codec.
//
// A cassettes.Reader reads through a Scanner. cassettes.NewReader makes
// one that checks every frame and copies every line; an index makes its
// Scanner with the options it needs, hands it to cassettes.NewReader as a
// [Scanned], then asks the Scanner where the Reader's last line was.
package cassettefile
