// Package report turns a cassette into one self-contained HTML page (`kwrec
// report`): a zoomable timeline with a lane per interaction, grouped by
// collection, each frame a mark coloured by its watch event type, each end
// with its reason, and the replay edits drawn where they sit; hover a mark
// for its object, click it for the object's JSON and the diff against its
// previous version, or pick an object for its whole history. A clicked
// mark offers the command that opens the recording at it, paused, on
// kwrec serve's world clock (`kwrec serve FILE --at rv=N --paused`).
//
//	r, err := report.Build("cm.kwrec.zst", report.Options{Edits: edits})
//	...
//	err = cassettes.WriteAtomic("cm.html", r.WriteHTML)
//
// [Build] is the model: it streams the cassette, reads each frame's
// metadata through internal/wire (JSON or protobuf; built-in protobuf types
// are converted to JSON through client-go's scheme, others shown as
// "protobuf (N bytes)"), stores each object version once (keyed by
// kind/namespace/name/resourceVersion) as a line delta of the version
// before it, and places edits with the same resolution `kwrec show` uses
// ([replay.Replayer.Edits]). [Report.WriteHTML] embeds the model in a
// hand-written page (report.html, no library, nothing loaded from the
// network): marks and lanes as JSON in columns, the object texts gzipped,
// which the browser inflates with its DecompressionStream. The page draws
// on a canvas and aggregates the marks of one pixel bucket into a bar, so
// a large cassette's report draws at once; BenchmarkLargeReport measures
// a 100k-event one in headless Chromium.
//
// # Memory
//
// The page embeds every object version, so a report grows with the
// versions it shows: each is held as a line delta of the one before,
// gzipped as it is stored, with its resourceVersion and its marks; the
// cassette itself is streamed. A report of 149,893 Pod versions peaks at
// 236 MB (BENCHMARKS.md); for a longer recording, report a window of it
// (kwrec cut).
//
// Cassettes are redacted when recorded; the report shows what the cassette
// holds and adds nothing.
package report
