// Package recorder records live Kubernetes API traffic, list and watch
// streams included, into cassettes (package cassettes) frame by frame.
//
// # Recording a test
//
//	opts := recorder.Options{} // redaction on, real clock
//	w, err := cassettes.Create("testdata/informer.kwrec.zst", recorder.Header("v1.37.2", opts), cassettes.WriterOptions{})
//	...
//	rec, err := recorder.New(w, opts)
//	...
//	cfg := rest.CopyConfig(kubeconfig)
//	rec.WrapConfig(cfg) // every client built from cfg is recorded
//	cs := kubernetes.NewForConfigOrDie(cfg)
//	... run informers, controllers, kubectl through a Proxy ...
//	// Stop the clients, then:
//	err = errors.Join(rec.Close(), w.Close())
//
// Close the [Recorder] first: it ends every stream still open as
// "stopped" and flushes, but leaves the Writer to its creator.
//
// For programs you cannot change (kubectl, a controller binary, a Python
// client), start a [Proxy] and hand them its kubeconfig.
//
// # What is recorded
//
// Every request (method, URL, headers after redaction, body), its response
// head (status, headers, latency to the headers) and the body as frames,
// each stamped with its arrival offset from the response head:
//
//   - a JSON watch (watch=true, or the legacy /watch/ path): one frame per
//     event, whatever chunks the server sent (it splits backlogs at 2048
//     bytes and packs small events together);
//   - a protobuf watch (application/vnd.kubernetes.protobuf;stream=watch):
//     one frame per length-prefixed event, prefix included, bytes exact;
//   - any other JSON, YAML or protobuf document (get, list pages, Status
//     errors): one frame, stamped at the arrival of its last byte;
//   - anything else (logs, text): the chunks as read.
//
// Then how the body ended: eof; timeout (a clean end of a watch at its
// timeoutSeconds, or the request's deadline); reset (a transport error,
// before the head or mid-body, with its text); stopped (the client closed
// the body or cancelled the request, or [Recorder.Close]).
//
// Volatile headers (Audit-Id, the priority-and-fairness headers) are kept:
// they help debugging and replay does not match on them.
//
// # Timing
//
// One goroutine per response pumps the server's body: it reads each chunk,
// stamps it with [Options.Clock], hands it to the client at once and frames
// it for the cassette. The client never waits for the recorder, and a
// client that reads late does not make the events look late. The pump
// stops reading when more than [Options.MaxBuffered] bytes wait for the
// client.
//
// # Compression
//
// When Go's transport asked for gzip itself and decoded it
// ([http.Response.Uncompressed]), the decoded bytes are recorded. When the
// caller asked for gzip (a proxy's client did), the caller gets the gzip
// bytes unchanged and the cassette a decoded copy. Either way the cassette
// records Encoding "gzip" and drops Content-Encoding and Content-Length
// from the recorded headers.
//
// # Redaction
//
// On by default, see [DefaultRedactions]; the rules applied are listed in
// the cassette header by [Header]. Add rules with [Options.Redactions];
// turning the defaults off takes [Options.DisableRedaction].
//
// # go-vcr's modes
//
// A Recorder records every request: go-vcr's RecordOnly. Its Passthrough
// is no Recorder at all: build the clients from a config not given to
// [Recorder.WrapConfig]. go-vcr's modes that replay are package replay's:
// ReplayOnly is replay.Open, or replaytest.Config in a test, and
// RecordOnce (record the cassette if it is missing, else replay it) is
// replaytest.Config with KWREC_RECORD=once. go-vcr's
// ReplayWithNewEpisodes (replay what is recorded, record and append the
// rest) has no kwrec counterpart: a replay answers unrecorded lists and
// watches from the recorded state instead.
package recorder
