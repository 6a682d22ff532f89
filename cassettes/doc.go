// Package cassettes reads and writes kwrec cassettes: recordings of
// Kubernetes API HTTP traffic, watch streams frame by frame with their
// timing, in a text form a person can edit and a zstd-compressed form for
// storage.
//
// The recorder only writes cassettes ([Writer]), replay only reads them
// ([Load], or for cassettes too large to hold replay.Open, which keeps the
// structure in memory and reads frame bytes back from the file), the kwrec
// CLI reads, edits and writes them. A [Reader] streams a cassette of any
// size entry by entry.
//
// # Recipe
//
//	w, _ := cassettes.Create("watch.kwrec.zst", cassettes.Header{RecordedAt: time.Now()}, cassettes.WriterOptions{})
//	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: u})
//	w.Response(id, cassettes.Response{Status: 200, Latency: 3 * time.Millisecond})
//	w.Frame(id, cassettes.Frame{At: 10 * time.Millisecond, Data: eventLine})
//	w.End(id, cassettes.End{At: time.Second, Reason: cassettes.EndEOF})
//	w.Close()
//
//	c, err := cassettes.Load("watch.kwrec.zst") // compressed or plain, detected
//
// # The text form, version 1
//
// A cassette is UTF-8 text, one JSON object per line (JSON Lines). Blank
// lines and lines whose first non-blank character is '#' are comments and
// are ignored (and not kept when a cassette is rewritten).
//
// Line 1 is the header:
//
//	{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","server":"v1.37.2","redactions":["header:Authorization"],"labels":{"scenario":"demo"},"edits":["watch-error:request=2,after=1,code=410"]}
//
//	kwrec       format version, required; only 1 is read (else ErrUnsupportedVersion,
//	            whatever other keys the header holds)
//	recordedAt  RFC 3339 time the recording started
//	server      the server's gitVersion, optional
//	redactions  what the recorder removed (empty list: redaction was off)
//	labels      free string notes, optional
//	edits       replay edits applied on every replay, optional (syntax: package replay)
//	part        the file's number in a rotated recording, from 1, optional
//	skipped     what a recording of every resource left out, the server
//	            having refused it: ["secrets: forbidden (list)"], optional
//	            (added to version 1 later: a kwrec from before refuses it)
//	rebased     true for a part that starts with the state at its start, optional
//
// Every other line belongs to one interaction (an HTTP exchange), named by
// its number, and is one of four kinds, told apart by which key holds the
// number. Interactions are numbered from 1 in the order their requests
// started; the lines of concurrent interactions interleave in the order
// things happened, so a recorder can append as they happen.
//
//	{"request":N,"at":D,"method":M,"url":U,"header":H,"body":S}
//	    starts interaction N. at: offset from the cassette start; never
//	    less than the previous request's. header: {"Name":["value",...]}.
//	    body (text) or bodyBase64 (binary), optional.
//	{"response":N,"latency":D,"status":C,"header":H,"encoding":E}
//	    the response head: latency from the request to the headers,
//	    HTTP status 100-999, headers, and the wire Content-Encoding the
//	    recorder decoded ("gzip"), optional. At most one per interaction;
//	    none when the request failed before a response.
//	{"frame":N,"at":D,"json":V} | {"frame":N,"at":D,"text":S} | {"frame":N,"at":D,"base64":B} | {"frame":N,"at":D,"bytes":S}
//	    one body frame after the response line. at: offset from the
//	    response headers; never less than the previous frame's. The
//	    frame's bytes are, exactly: for "json", the JSON value V as
//	    written on the line followed by one newline (a JSON watch event
//	    line, or a whole JSON response); for "text", the string S; for
//	    "base64", the decoded B; for "bytes", one byte per character of
//	    S: U+0000-U+007F stand for themselves, U+0100-U+01FF for the
//	    bytes 0x00-0xFF. base64 and bytes hold binary data such as
//	    protobuf watch frames, 4-byte length prefix included.
//	{"end":N,"at":D,"reason":R,"error":S}
//	    how the body ended: reason "eof" (clean end), "timeout" (the
//	    watch's timeout), "reset" (transport error; error says which),
//	    "stopped" (the client closed it or the recording stopped). at:
//	    offset from the response headers (from the request when there is
//	    no response); not before the last frame. Nothing of N may follow.
//
// In "bytes" a Writer writes the bytes 0x20-0x7E as themselves (" and \
// escaped as JSON requires) and every other byte b as U+0100+b, so the
// strings inside a protobuf object stay readable and compress as they do
// in JSON, where base64 scatters them over three alignments. "bytes" was
// added to version 1 after its first release, and a kwrec from before
// refuses such a line (unknown field "bytes"): the Writer uses it in the
// compressed form, where size counts; plain text, the form kept in
// testdata and edited by hand, keeps base64.
//
// Durations D are Go durations: "0s", "250ms", "1.5s", "2m3s". Unknown keys,
// a line of two kinds, a frame before its response, decreasing offsets and
// lines of an interaction after its end are errors naming the line.
//
// A cassette whose last line is cut, or that ends with interactions that
// have no end line, is truncated (ErrTruncated): a recorder was killed.
// Everything complete before the cut is still returned.
//
// # A complete example
//
// A list of two ConfigMaps, then a watch from the list's resourceVersion
// with one update and a bookmark, ended by the recorder; a hand edit
// inserted a 410 ERROR event (the line marked by the comment):
//
//	{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","server":"v1.37.2","redactions":["header:Authorization"]}
//	{"request":1,"at":"0s","method":"GET","url":"https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?limit=500","header":{"Accept":["application/json"]}}
//	{"response":1,"latency":"2.1ms","status":200,"header":{"Content-Type":["application/json"]}}
//	{"frame":1,"at":"0s","json":{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"200"},"items":[{"metadata":{"name":"a","namespace":"default","resourceVersion":"198"}},{"metadata":{"name":"b","namespace":"default","resourceVersion":"199"}}]}}
//	{"end":1,"at":"0s","reason":"eof"}
//	{"request":2,"at":"5ms","method":"GET","url":"https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true&resourceVersion=200&timeoutSeconds=412&watch=true","header":{"Accept":["application/json"]}}
//	{"response":2,"latency":"1ms","status":200,"header":{"Content-Type":["application/json"]}}
//	{"frame":2,"at":"1.2s","json":{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"201"},"data":{"k":"v2"}}}}
//	# hand edit: the server expires the watch here
//	{"frame":2,"at":"1.3s","json":{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 200 (201)","reason":"Expired","code":410}}}
//	{"frame":2,"at":"1m0s","json":{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"201"}}}}
//	{"end":2,"at":"1m30s","reason":"stopped"}
//
// # The compressed form
//
// The compressed form is the text form compressed with zstd (RFC 8878),
// binary frames in the "bytes" form when a [Writer] writes it, and with
// [WriterOptions.Deltas] (kwrec compact) or [WriterOptions.ListDeltas]
// (kwrec record) watch events as deltas (see below). Readers
// tell the two apart by zstd's magic bytes, so every API and kwrec
// command takes either. A [Writer] flushes at least every
// [DefaultFlushInterval]: the flush ends a zstd block, which makes
// everything written so far decodable while keeping the encoder's history.
// A process killed mid-way leaves a file that reads up to its last flush
// and then reports ErrTruncated with the compressed byte offset of the cut.
//
// The text is cut into segments, each its own zstd frame, so a reader can
// start decoding near any line instead of at the start (replay.Open does):
// once a frame holds [DefaultSegmentSize] bytes of text
// ([WriterOptions.SegmentSize]), the Writer ends it at the next line end,
// and the next frame's first line is a seek comment
//
//	# kwrec:seek zstd=C text=T
//
// where C is the byte offset in the file where that zstd frame starts and T
// the offset in the text form where the comment line itself starts (both
// decimal). The frames concatenate into one zstd stream, so any zstd
// decoder, and a kwrec from before seek comments, reads the whole text; to
// them a seek comment is a comment. A reader trusts a seek comment only at
// text offset T and only once the bytes at C are a zstd frame that decodes
// to that very comment: a cassette recompressed by another tool, or a
// forged comment, is read correctly, from an earlier point. Seek comments
// describe compressed bytes only: [Plain] drops them and [Compress] writes
// fresh ones, so text → compressed → text gives back text without seek
// comments byte for byte. A [Writer] compresses at klauspost's better level
// (about zstd's level 7) with a 4 MiB window in 16 MiB segments, so a
// decoder needs about 4 MiB and a read from the middle decodes at most
// 16 MiB of text; segments make the file a little larger than one zstd
// frame would. [WriterOptions.Compact] (kwrec compact) uses the best
// level and a window as large as a segment, so its decoders need up to
// 16 MiB.
//
// # Object deltas
//
// A watch sends every version of an object whole, and an object's next
// version is mostly its previous one; but with thousands of objects that
// version is tens of megabytes back, far beyond any zstd window a reader
// can afford. So in the compressed form a [Writer] with
// [WriterOptions.Deltas] (kwrec compact) writes a watch event whose
// object (kind, namespace and name, read by the same scanner as replay's)
// the same interaction sent before as a delta against that earlier
// frame, and an object's version the watch has no earlier one of (most
// often its first) as a delta against the object's item in a JSON list
// or row in a Table-form list written before, if that delta is less than
// half the frame. More frame line shapes, read in either form but written
// only in the compressed one:
//
//	{"frame":N,"at":D,"keep":true,"json":V}   (or "text", "bytes", "base64")
//	    a whole frame that a later frame of N may be a delta against.
//	{"frame":N,"at":D,"shared":true,"json":V}
//	    a whole frame (a list) that later frames of any interaction may
//	    be deltas against, any number of them.
//	{"frame":N,"at":D,"keep":true,"base":K,"delta":S}   ("keep" optional)
//	    the frame is the delta S applied to frame K of interaction N
//	    (0-based: the interaction's first frame line is frame 0). S is in
//	    the "bytes" form.
//	{"frame":N,"at":D,"keep":true,"from":M,"base":K,"delta":S}   ("keep" optional)
//	    the frame is the delta S applied to frame K of interaction M,
//	    which is marked "shared": its copies stay within the list's item.
//
// A delta is a sequence of ops, each a uvarint tag t: if t is even, the
// t/2 bytes that follow are inserted as they are (so the JSON of what
// changed stays readable, and compresses as JSON); if t is odd, t/2 bytes
// are copied from the base, from offset p+d, where the zigzag varint d
// follows and p is where the previous copy ended (0 at first). Offsets
// are relative so that two versions of an object, which differ in a few
// places, cost a few bytes of ops between changes.
//
// Keys are written exactly in this order, with no spaces: a delta line is
// read only as a Writer writes it, and the frame it stands for is the
// line a Writer writes for those bytes ("json" for a JSON value and
// newline, else "text" for UTF-8, else "bytes"). Edit such a cassette
// through kwrec cat or kwrec edit, which show every frame whole, not its
// raw decompressed text: a changed base changes the frames built on it.
//
// A frame marked "keep" is the base of at most one later delta, which
// consumes it; a reader keeps each kept frame until its delta or the
// interaction's end line, and nothing else. A frame marked "shared" a
// reader keeps to the end. The Writer marks a frame "keep" or "shared"
// only while the kept and shared frames' bytes stay within
// [WriterOptions.DeltaBudget] ([DefaultDeltaBudget], 64 MiB), the shared
// ones within half of it, so no reader ever holds more; an object's frame
// not kept (the budget spent, or a DELETED event) makes its next version
// whole, or a delta against its list item. A delta that copies
// makes a chain; after [MaxDeltaChain] deltas in a row on one object the
// Writer writes a delta that only inserts (it consumes its base but needs
// none), so reading one frame at random rebuilds at most that many.
// Deltas only look back, within an interaction or to a shared list
// before it: a prefix of a cassette (a cut recording) reads as far as it
// goes, and a rotated recording's delta may name a frame in an earlier
// part. A delta against a list starts a chain as a whole frame does.
//
// The text form stays whole: [Plain] (kwrec cat) rebuilds every delta
// and drops every "keep" and "shared", so a compressed cassette with deltas reads as
// the text its frames were recorded in; text → compressed → text gives
// back the text byte for byte, with deltas or without. [ReadText] and
// [FormOf] tell a file's [Form]; [Compress] writes text back in it
// (kwrec edit), and [Repair] rewrites a cut file in it (kwrec lint
// --fix), deltas kept. A kwrec from before deltas refuses a cassette
// with them (unknown field "keep"), and one from before deltas against
// lists (December 2026) one with those (unknown field "shared"); rewrite
// it for one without [WriterOptions.Deltas].
//
// Deltas against lists alone ([WriterOptions.ListDeltas], kwrec record's
// default) cost a reader only the lists they name, at most half the
// budget, kept to the end (a replay's Index reads each once for all its
// readers) and held packed: in chunks of 8 KiB, each compressed with S2
// against a dictionary of the list's first 32 KiB, a tenth of their
// bytes or less on lists of objects of a kind (a delta decodes the
// chunks its copies cover, about a microsecond for 8 KiB). A random
// read walks no chain: a watch's first version of an
// object, megabytes after its list item, is the bytes zstd's window no
// longer reaches. A recording with them is [Form.ListDeltas], and kwrec
// edit writes it back so.
//
// Object deltas are off by default because of what they cost a reader: it
// keeps up to one version of every object a later delta copies from (a
// replay's index pass and its frame reader each keep one), up to
// [WriterOptions.DeltaBudget] of frame text, and a recorder holds as much
// as a reader. Readers hold them packed as they hold lists, compressed
// with S2 against a dictionary of the interaction's first kept frame
// (a quarter of their bytes on Pods), which costs time: a replay of
// target 4's 100k Pods compacted serves 0.6x as many events a second as
// with the frames held whole, still many times what a client decodes.
// They cost the Writer less CPU, not more: zstd gets less text. What they
// save and cost on the benchmark suite's watches is in BENCHMARKS.md.
//
// # Rotated recordings
//
// A recording of hours need not be one file. [Create] with
// [WriterOptions.MaxSize] or [WriterOptions.Rotate] splits it into
// numbered parts, rec.kwrec.zst into rec-0001.kwrec.zst,
// rec-0002.kwrec.zst, ... ([PartName]), starting the next part at the
// first line written once the current file holds MaxSize bytes (as
// flushed: a part ends up to a flush interval's worth of lines past it)
// or is Rotate old. Each part is a whole cassette file of either form,
// its own header line first, its own zstd frames and seek comments, so a
// recorder killed mid-way loses at most the last flush of the last part.
//
// The parts split one stream of lines at line boundaries: the header of
// part k is part 1's with "part":k, the same recordedAt included;
// interactions are numbered across the parts, and the lines of an
// interaction started in one part go on in the next ones (a watch spans
// them). Request and frame offsets stay relative to the recording's start
// and the response. A part after the first cannot be read alone (its
// first lines belong to interactions of earlier parts): named alone,
// [Open], [Load] and [NewReader] refuse it with [ErrPart]. [Open] and
// [Load] (and [Parts], which lists the files) take the parts, a glob
// pattern ('rec-*.kwrec.zst', quoted so that the shell leaves it to
// kwrec) or the first part, check that the files are the parts 1 to n of
// one recording, and read them as one; so do replay.Open and the kwrec
// commands that read a cassette (kwrec serve, replay, show, lint). The
// first part read without the others ([NewReader], or the others gone)
// reads as a recording cut where it ends.
//
// kwrec record --keep deletes the oldest parts while it records. A
// rebased part k makes the parts before it unnecessary: its header says
// "rebased":true, and it starts with the state (a list of every recorded
// collection) and the interactions still open then, their lines before
// it dropped where the state holds them (a watch's earlier frames) —
// interaction numbers and offsets as in the recording, so the parts
// after it read on from it unchanged, and numbers need not start at 1.
// kwrec record --keep writes the state where the oldest part it keeps
// starts, alone, over the part before it (an earlier kwrec rewrote the
// oldest kept part itself, the state then its lines: both read alike).
// A rebased part reads alone, and [Parts] reads a recording from its
// newest rebased part on: the parts k to n, checked consecutive; parts
// before a rebased one (left by a recorder stopped while it deleted
// them) are superseded and skipped. Without a rebased part, parts that
// do not start at 1 are refused ([ErrPart]).
//
// # go-vcr
//
// [ImportVCR] reads go-vcr v3 cassettes (YAML, format version 2);
// [ExportVCR] writes them, losing frame boundaries, timing and the header,
// and refusing watch streams unless told to skip them.
package cassettes
