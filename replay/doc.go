// Package replay serves recorded Kubernetes API traffic back to clients:
// typed, dynamic and informer-based client-go clients in-process through an
// [http.RoundTripper], any other client (kubectl, Python, a controller
// binary) through a loopback [Server].
//
// # Record, then replay
//
// Record a cassette with the kwrec recorder or CLI (see package cassettes for
// the format), check it into testdata/, then:
//
//	c, err := cassettes.Load("testdata/configmaps.kwrec")
//	...
//	r, err := replay.New(c, replay.Options{})
//	cs := kubernetes.NewForConfigOrDie(r.Config())
//	// every request cs sends is answered from the cassette
//	<-r.Done() // the whole cassette has been served
//
// Package replaytest does this in one call for tests.
//
// # Large cassettes
//
// [New] serves a cassette held in memory. [Open] serves a cassette file
// and holds only its structure (about 50 bytes a frame), reading each frame
// back from the file as it is served, so a recording of any size replays
// in memory proportional to its frame count:
//
//	r, err := replay.Open("testdata/pods-100k.kwrec.zst", replay.Options{})
//	...
//	defer r.Close()
//
// Both behave the same in every other way; the kwrec CLI uses Open.
//
// # Matching
//
// A request is answered by the first not yet served recorded interaction
// that the [Matcher] accepts; [DefaultMatcher] compares method, path and
// canonical query (ignoring client-go's random timeoutSeconds and the
// timeout parameter), the body, and the response's media type against Accept.
// Identical requests are thus served in recorded order. A request with no
// match fails with an error wrapping [ErrNoMatch] naming the nearest
// recorded candidates and what differs.
//
// # Time
//
// Waits (latency to headers, gaps between frames) run on [Options.Clock]
// and scale with [Options.Speed]; the default speed 0 skips them. Every wait
// ends when the request's context is cancelled or the body is closed. A
// recorded stream that the recording stopped (or that the server timed out)
// stays open and idle like a live watch until the client's timeoutSeconds
// passes on the warped clock, then ends cleanly; with
// [Options.ErrorWhenExhausted] it fails with [ErrExhausted] once the whole
// cassette has been served, so no test can hang. A recorded clean end
// replays as a clean end, a recorded reset as a connection reset
// ([syscall.ECONNRESET]).
//
// # Edits
//
// An [Edit] changes how a cassette replays: an HTTP error on a request, a
// watch ERROR event (410 Expired), a connection reset or a clean end after
// frame k, a time warp, a pause, a dropped or duplicated frame. See [Edit]
// for the syntax shared by the CLI flags and [cassettes.Header.Edits].
//
// # Kubernetes-aware fallback
//
// After an injected error a real client re-lists or re-watches from its
// last resourceVersion: requests the recording never saw. Unless
// [Options.Strict], such GET list, watch and get requests are answered from
// the object state rebuilt from the recorded JSON lists and watch events:
// list at a resourceVersion, watch from one (the remaining recorded events,
// paced like the recording), streaming lists (sendInitialEvents) with the
// k8s.io/initial-events-end bookmark, 410 Expired for a version older than
// the recording, bookmarks. "Now" is the point the replay has reached, so a
// client recovers to exactly the recorded final state with no event lost or
// repeated. The fallback answers in JSON; protobuf recordings replay
// exactly but do not feed it.
package replay
