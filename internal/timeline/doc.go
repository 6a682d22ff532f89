// Package timeline is replay's model of the recorded cluster: one
// [Timeline] per collection (group, version, resource, and a namespace or
// all namespaces), built once from every recorded list and watch of it,
// JSON and protobuf alike, and every request for the collection answered
// as a view of it:
//
//   - [Timeline.List]: the objects at a resourceVersion (any match, paged
//     with limit and continue, filtered by label and field selectors);
//   - [Timeline.Get]: one object as of now;
//   - [Timeline.Watch]: the events after a resourceVersion, or a streaming
//     list's initial events and its k8s.io/initial-events-end bookmark
//     first, with the marks the watch crosses.
//
// A timeline holds references to recorded bytes, never the bytes: an
// [Object] names the frame and the byte range its encoding is in, and the
// caller reads frames (from memory or the cassette file) outside any lock
// and turns them into wire bytes with a [Codec], in the encoding the client
// negotiated, converting between JSON and protobuf through client-go's
// scheme when only the other one was recorded.
//
// # Time and "now"
//
// Every event carries the time it was recorded at, so a view paces its
// events like the recording. "Now" is the highest resourceVersion any
// client has been served ([Timeline.Advance]): a re-list after an injected
// error sees what the client had seen, and the watch that follows replays
// the rest, so a client recovers to exactly the recorded final state with
// no event lost or repeated.
//
// # Marks
//
// A [Mark] is a point on a timeline, after the event at its
// resourceVersion, where a watch fails: a recorded ERROR event (a 410
// Expired the server sent), a recorded connection reset, or an edit. A
// watch crosses a mark when it starts before the mark and has delivered
// every event up to it. A recorded mark reaches every watch that crosses
// it; an edit's mark fires once, on the first watch to reach it, recorded
// or synthesized, from any client (one that starts exactly at its point
// counts as reaching it).
//
// resourceVersions are opaque to clients, but every etcd-backed API server
// hands out etcd revisions, decimal integers that only grow; a timeline
// relies on that and refuses to answer for a collection with any other
// value ([Timeline.Broken]).
package timeline
