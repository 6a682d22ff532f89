// Package cut makes a recording start later: it writes the window of a
// recording between two points as a cassette that starts with the state
// of every recorded collection at the first point, as each collection's
// list, then holds every line of the window with its recorded timing.
// kwrec cut is [Cut]; [Rebase] is the same window from the start of a
// part to its end, the part rewritten to start with the state, and
// kwrec record --keep is [Base], that state alone, written over the part
// before the oldest kept so that the recording replays from it once the
// parts before are deleted.
//
// # Recipe
//
//	rec, err := cut.Read("rec-*.kwrec.zst")          // one cassette or a rotated recording's parts
//	from, err := timepoint.Parse("55m")               // or "2026-12-01T07:55:00Z", "rv=12345", "end"
//	to, err := timepoint.Parse("rv=13000")
//	res, err := cut.Cut(rec, from, to)                // res.Dropped: the header edits outside the window
//	err = res.Save("window.kwrec.zst")
//
// # What a cut holds
//
// A point is a duration from the recording's start, an RFC 3339 time, or
// the resourceVersion of a recorded list or watch event (the point just
// after the first watch event that recorded it, or after the end of the
// first list that did). Lines are cut by their place in
// the recording, not by their time alone: the lines before the first
// point make the state, the lines after it up to the second point are
// the window.
//
// The state is computed with [timeline]: for every collection listed or
// watched before the first point, the list at rv1, the highest
// resourceVersion recorded before it (every etcd-backed collection shares
// one revision sequence), answered as a list request the recording made
// of that collection: its path, its query (selectors, limit; a paged
// list comes whole, in one page without a continue token, as a server
// says a list is complete), its Accept and its encoding (JSON or
// protobuf, as the collection's objects were recorded). Each list takes
// the place, interaction number and request time of an interaction
// before the point that the cut drops (its collection's last list when
// it had one), so numbers and times still increase line by line.
//
// A watch open at the first point goes on in the window: its request as
// recorded but from rv1 (resourceVersion=rv1, a streaming list's
// sendInitialEvents and resourceVersionMatch removed: its initial events
// are in the lists), its frames from the point on. Discovery and other
// answers that are not a collection's or an object's (/api, /apis,
// /version, OpenAPI) are carried over, the last of each request, so that
// kubectl finds its resources in a replay of the cut. Everything else
// before the point is dropped: gets, writes and lists are in the state.
//
// [Cut] moves the start to the first point (the header's recordedAt
// with it; everything carried starts at 0, the window's gaps as
// recorded) and ends the interactions still open at the second point as
// "stopped" there. [Rebase] keeps the recording's clock and numbers and
// leaves open what the next part goes on with, and marks the part
// rebased (see the cassettes package doc): the later parts read on from
// it unchanged.
//
// Header edits (package replay's syntax) are carried when the point they
// name falls in the window, their interaction and frame numbers and
// times moved with it; the others are returned as dropped, for a
// warning. Edits that name no point (a global warp, an error on the
// nth request of a resource) are always carried.
//
// # Memory
//
// A cut holds the recording's structure, not its bytes. [Read] reads
// every line once and keeps, per line, what it is and when (16 bytes),
// per frame its time (8 bytes), each in arrays that grow a chunk at a
// time and are never copied whole, per interaction its request, response
// head and end, and per collection its timeline: per watch event about
// 20 bytes, per list the key, labels and place of each of its objects
// (about 100 bytes each), and the bodies of lists split across frames.
// A cut then reads back, in one pass over the lines before its point,
// only the bytes it writes first: the objects of the state, the frames
// of what it carries (the last discovery answers, what is open at the
// point but a watch that goes on from the state) and the rows of
// kubectl's Table form. [Result.Write], [Result.Save] and
// [Result.Entries] read the window's lines again from the files and
// stream them out, holding none: the files must stay until the cut is
// written. The bound is so about 45 bytes a line of the recording, plus
// the state's objects and what is carried, whatever the frames' size:
// for a 1,000,000-event recording of 6.6 KB Pods (6.8 GB of text) 48 MB
// live and about 215 MB of peak RSS, of which the kwrec binary's own
// pages are 75 MB, where holding the lines took 8.5 GB.
// [Recording.Script] holds the objects of the window's changes too, as
// the [Script] it returns does.
package cut
