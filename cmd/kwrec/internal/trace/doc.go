// Package trace turns a cassette into a Chrome trace: the JSON trace event
// format that Perfetto's UI (ui.perfetto.dev) and chrome://tracing open, so a
// recording's requests, watch events and edits can be looked at on a
// zoomable timeline.
//
// # Recipe
//
//	r, _ := cassettes.Open("cm.kwrec.zst")
//	defer r.Close()
//	t, _ := trace.Build(r, trace.Options{})
//	t.Write(f)
//
// # What the trace holds
//
// The file is the JSON object form of the format,
//
//	{"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}}
//
// with every ts and dur in microseconds from the cassette start, and these
// events:
//
//   - One process per collection: pid 1 holds requests outside any
//     collection (version, discovery, OpenAPI); each collection gets the next
//     pid in the order it is first requested, named by a process_name
//     metadata event ("M") with its all-namespaces path,
//     /api/v1/configmaps: requests on /api/v1/namespaces/X/configmaps
//     share it, as the API server's storage does.
//   - One thread (track) per interaction: tid is the interaction's ID,
//     named by a thread_name metadata event "#ID METHOD PATH?QUERY" and
//     sorted by ID (thread_sort_index).
//   - A complete slice ("X", ts and dur) per interaction from its request
//     to its end (to its last frame when the cassette was cut), with a child
//     slice "waiting for headers" from the request to the response head:
//     the two nest, they never partly overlap.
//   - An instant event ("i", scope "t") per frame at its arrival, named by
//     its watch event type (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR), or
//     "list" for a list body, else its kind or "frame"; args hold what
//     [describe.Frame] reads: object (namespace/name), resourceVersion,
//     kind, items, code and reason.
//   - A counter ("C") "events/s" per collection process: watch events
//     other than BOOKMARK in each whole second from the cassette start, one
//     sample wherever the rate changes and a last one at 0.
//   - An instant "edit: ..." per [Mark], on the track of the interaction it
//     is placed on, for the cassette's edits (kwrec export draws the header's
//     request-anchored edits this way).
//
// otherData carries the header: recordedAt, server, labels, edits.
package trace
