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
// [Open] serves a cassette file and holds only its structure (the place
// of each frame), reading each frame back from the file as it is served,
// so a recording of any size replays in memory proportional to its frame
// count: about 45 bytes a frame live (its place, 16; its event in the
// collection's timeline, 16; resourceVersions and keys), which the GC
// lets grow to about twice that (a 1,000,000-event recording opened and
// watched end to end: 129 MB resident, BENCHMARKS.md target 8):
//
//	r, err := replay.Open("testdata/pods-100k.kwrec.zst", replay.Options{})
//	...
//	defer r.Close()
//
// [New] serves a cassette in memory the same way, from its text form: the
// two answer alike; the kwrec CLI uses Open.
//
// # One history, many replays
//
// A test that replays one cassette many times (an exploration of faults,
// a load test) reads it once with [Load] and makes each replay from the
// [History]: what was recorded is shared, read-only, by every replay, and
// each [Replayer] holds only its own state (how far it has served each
// collection, the edits it fires, the writes it applies), so it costs a
// few kilobytes and microseconds, not a read of the cassette:
//
//	h, err := replay.Load("testdata/mirror.kwrec.zst")
//	...
//	defer h.Close()
//	r, err := h.Replayer(replay.Options{Writes: replay.WritesOverlay, Edits: edits})
//
// [Open] is Load and one Replayer, which closes the history with it.
//
// # One timeline per collection
//
// When a cassette is opened, every recorded 200 list and watch of a
// collection (group, version, resource, and a namespace or all namespaces),
// JSON and protobuf alike, is read into that collection's timeline: its
// objects and events with their resourceVersions and recorded times, as
// references to the recorded bytes, and marks where a recorded watch failed
// (an ERROR event, a connection reset). Every request for the collection is
// a view of it, from any client:
//
//   - a request equal to a recorded one (see [Matcher]), not served yet, is
//     answered byte for byte from the recording;
//   - any other GET list (at any resourceVersion and match, paged with
//     limit and continue, with label selectors and field selectors: the
//     metadata fields, and those kube-apiserver selects on for built-in
//     resources, such as a Pod's spec.nodeName), get, watch from
//     any resourceVersion, or streaming list (sendInitialEvents, then the
//     k8s.io/initial-events-end bookmark) is answered from the timeline with
//     the API server's semantics: 410 Expired before the recording, 504
//     with Retry-After past it, bookmarks when asked for;
//   - a namespaced request is answered from an all-namespaces recording of
//     the resource, filtered;
//   - a collection the cassette never recorded, of a resource the server
//     has, holds no objects (kubectl describe lists the events of what it
//     describes); a resource no discovery knows is the API server's 404
//     NotFound Status;
//   - kubectl's server-side printing (Accept ...;as=Table) is answered in
//     the Table form from the rows of the Table-form list and watch that
//     kwrec record records beside the JSON ones; an object without a
//     recorded row (a write, or a collection recorded without its Table
//     form) is printed as kube-apiserver v1.37.2 prints it, ages on the
//     replay's clock: a custom resource by its definition's printer
//     columns, a built-in kind by a port of the server's printer (Pods,
//     workloads, Services, Endpoints and EndpointSlices, Ingresses, Nodes,
//     Namespaces, storage, Events, RBAC, HPAs, PDBs, Leases, ConfigMaps,
//     Secrets, ServiceAccounts); other built-in kinds are answered in the
//     Table form only where every object has a recorded row;
//   - discovery (/version, /api, /apis, group versions, OpenAPI v3) is the
//     recorded server's, else kube-apiserver's own for the built-in
//     resources (short names, categories, verbs) plus the cassette's other
//     resources.
//
// "Now" is the highest resourceVersion served to any client, so a client
// that re-lists after a failure sees what it had seen and its watch replays
// the rest: it recovers to exactly the recorded final state with no event
// lost or repeated. Views answer in the encoding the client negotiates:
// protobuf to a client that prefers it (client-go's typed clients) with the
// recorded object bytes, JSON otherwise; built-in types recorded only in the
// other encoding are converted through client-go's scheme. Gets and watch
// events carry kind and apiVersion, list items do not, as the API server
// writes them. A watch from the timeline paces every event, the first
// included, by its recorded time, scaled like a recorded stream.
//
// # Matching
//
// A request is answered byte for byte by the first not yet served recorded
// interaction that the [Matcher] accepts; [DefaultMatcher] compares method, path and
// canonical query (ignoring client-go's random timeoutSeconds and the
// timeout parameter), the body, and the response's media type against Accept.
// Identical requests are thus served in recorded order. A request with no
// match and no timeline to answer it (a write, a path that is not a
// resource, or any request under [Options.Strict]) fails with an error
// wrapping [ErrNoMatch] naming the nearest recorded candidates and what
// differs.
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
// Above speed 0, a watch that cannot keep up with its schedule is ended
// as kube-apiserver ends a watcher that cannot keep up: once it is 200
// events behind for longer than the API server's dispatch budget (up to
// 100 ms), it gets the events it was behind by and a clean end of the
// stream, no ERROR event; client-go's reflector then watches again from
// the last resourceVersion it got. No other watch ever waits for it.
//
// # Two clocks
//
// By default a replay runs on the consumption clock: "now" is the highest
// resourceVersion any client has been served, each watch is paced from
// its own start, and a list is answered at that "now". A controller test
// wants this: the world waits for the controller ([Options.Hold],
// [Options.Settle]) and moves as it consumes the recording.
//
// With [Options.WorldClock] every client shares the world clock instead,
// as on a real cluster: the world is at [Options.At] plus Speed times the
// wall time since the replay began (Speed 0 and [Options.Paused] hold it),
// every get, list, watch start and write is answered as the recorded
// cluster was at that time, from the timelines (recorded lists are not
// replayed byte for byte, so a list recorded at another time never
// answers), and a watch sends each recorded change once the world reaches
// the time it was recorded at. [Replayer.WorldClock] plays, pauses, sets
// the speed and seeks: forward, every open watch sends the changes it
// passes at once, in order; back, every open watch ends with a 410
// Expired, a request for a resourceVersion newer than the world's now is
// answered 504 "Too large resource version" (client-go then lists again
// from now), and the overlay's writes made after the new time are
// dropped. kwrec serve runs on the world clock by default and serves its
// control at [ClockPath].
//
// # Edits
//
// An [Edit] changes how a cassette replays: an HTTP error on a request, a
// watch ERROR event (410 Expired), a connection reset or a clean end at a
// point, a time warp, a pause, a dropped or duplicated frame. See [Edit]
// for the syntax shared by the CLI flags and [cassettes.Header.Edits].
//
// A watch-error, reset or truncate is a point on a timeline: named by a
// recorded interaction and frame (request=2,after=1), or by the collection
// and a resourceVersion or recorded time (resource=configmaps,rv=201). It
// fires once, on the first watch of that collection to cross the point,
// whatever its request: the recorded one, kubectl's, a WatchList
// informer's streaming list. A recorded ERROR event is a mark that every
// crossing watch receives, and like the API server the stream ends after
// it. An error anchored by resource fires on the Nth request of that
// resource and verb whatever its query. An expire-continue makes the Nth
// continued page of a paged list the server's 410 for a compacted token;
// without it a continue token (the API server's own format) stays
// valid for the whole replay. [Replayer.Edits] reports where each
// edit sits and whether it fired, so an edit no client reached is not
// silent; kwrec serve and kwrec replay warn about those when they stop.
//
// # Writes
//
// By default ([WritesStrict]) a write (POST, PUT, PATCH, DELETE) must match
// a recorded one and gets the recorded answer; any other fails with
// [ErrNoMatch], which [Server] answers 500 InternalError with the same
// text: never 404, which a client would read as an answer about the object
// (kubectl delete --ignore-not-found would succeed).
//
// With [Options.Writes] set to [WritesOverlay], a write that matches no
// recorded one is applied to its collection's timeline at the current
// point of the replay, with the API server's rules (replay/internal/write, checked
// against kube-apiserver v1.37.2): create with generateName and 409
// AlreadyExists; update with 409 Conflict on a stale resourceVersion;
// JSON merge, strategic merge (built-in types), JSON patch and server-side
// apply with field managers and conflicts; delete with finalizers
// (deletionTimestamp, removal with the last finalizer) and the graceful
// deletion of Pods (a Pod no node runs, or deleted with
// gracePeriodSeconds 0, is marked and then removed; a bound Pod stays
// marked, as no kubelet stops it); deletecollection with label and field
// selectors; the status subresource; the scale
// subresource of Deployments, ReplicaSets, StatefulSets and
// ReplicationControllers (GET, PUT, merge, JSON and strategic merge
// patches, server-side apply, with the scale handler's managedFields); a
// Pod's eviction (its DisruptionTarget condition, then the delete;
// allowed: PodDisruptionBudgets are not weighed) and binding; a ServiceAccount's token (a fake, non-JWT token;
// the default audience is https://kubernetes.default.svc.cluster.local,
// since a recording does not hold the server's issuer); a CSR's approval;
// dryRun=All; the server's defaults for Pods and workloads (Deployments,
// ReplicaSets, StatefulSets, DaemonSets, ReplicationControllers, Jobs,
// CronJobs) and what its admission sets on a Pod (priority, the
// not-ready and unreachable tolerations, phase Pending, QoS class); uid,
// creationTimestamp, generation, managedFields and resourceVersion set by
// the server. Request bodies are read in JSON and in protobuf, as typed
// clients send them (DeleteOptions, Scale, Eviction, Binding,
// TokenRequest). Every watch of the collection sends the write (the
// writer's own informer included), in the encoding it negotiated, and
// later lists and gets hold it, in full or metadata-only
// (as=PartialObjectMetadata) form. A resource the cassette never recorded
// (Events, Leases, a controller's CRD objects) starts empty and takes
// writes, in one timeline of all namespaces, so what is written in one
// namespace is listed and watched across all of them. Validation answers
// 422 Invalid with the server's field errors for what kwrec models:
// every object's metadata (names by the resource's rule: a DNS subdomain
// where the server asks one, else only a path segment, as for RBAC's
// kinds; labels, annotations), ConfigMap and Secret keys, a Secret's type
// and an immutable ConfigMap's or Secret's data (immutable on update), Pod
// containers (in Pods and templates), workloads' replicas and
// selectors (immutable on update), RBAC's rules, role references
// (immutable on update) and subjects; dryRun is read from the query and, for
// a delete, from the DeleteOptions body, where client-go sends it;
// fieldValidation warns of unknown and duplicate fields of built-in kinds
// (Warning headers, the default) or refuses them (Strict). A custom
// resource whose CustomResourceDefinition the world holds (recorded, or
// written by the code) is read by its schema with the server's own code
// (k8s.io/apiextensions-apiserver): unknown fields pruned (warned of, or
// refused under Strict), defaults filled, and the schema's, the CEL rules'
// and the metadata's 422s as its strategy answers them. Not simulated: the
// rest of the server's validation of built-in kinds (such an invalid
// object is stored), server-side apply by a custom resource's schema (its
// merges treat every field as atomic), RBAC's escalation check,
// Services' cluster IP allocation, and other subresources (exec, log,
// proxy), which answer 405.
//
// Garbage collection is kwrec's addition (a bare API server and envtest
// have none): what a write deletes takes its dependents with it, as
// kube-controller-manager's garbage collector does on a cluster, by their
// ownerReferences. Background propagation deletes them after the owner,
// foreground first (the owner keeps the foregroundDeletion finalizer until
// no dependent with blockOwnerDeletion is left), orphan removes their
// references; a dependent with another owner only loses its reference.
// Every watch sends the events these writes make. Only what the code
// under test deleted is collected (a recorded deletion brought its
// recorded consequences), and the collector's writes are not in
// [Replayer.Writes]. [Options.DisableGarbageCollection] turns it off. internal/testkit/conformance compares each of these answers with
// kube-apiserver's. Reads of recorded collections are then
// always views of their timelines, never recorded bytes, since the world
// now holds the writes; kubectl's Table form is left to kubectl.
//
// Recorded changes keep coming on their recorded schedule. One that touches
// an object the code also changed wins, and a later update carrying the
// old resourceVersion gets 409, as on a live cluster.
//
// resourceVersions only grow along a collection, recorded and written
// alike: in Overlay mode every recorded resourceVersion R is served as
// R×1000, and the writes made after the replay reached R get R×1000+1,
// R×1000+2, and so on (999 at most before the next recorded change; a
// 1,000th is refused with 500). A write gets the next one after the
// highest served, so every watch sends it after what it has sent.
//
// [Replayer.Writes] returns the writes applied, with their requests and
// answers, and [Options.WritesOut] appends them to a cassette as they
// happen (kwrec serve --writes-out). Generated names and uids come from a
// seeded sequence, so a replay writes the same every time and
// replaytest.CheckWrites can compare it with a golden file.
//
// # Waiting for the end
//
// [Replayer.Done] closes once every recorded change has been delivered;
// [Replayer.Consumed] once it is done and the clients have been idle for
// [Options.Linger]. With [Options.ErrorWhenExhausted] every idle watch then
// ends with [ErrExhausted] ("the cassette is consumed"), so a loop over a
// watch's events ends. [Options.Hold] keeps recorded changes back until
// [Replayer.Play], so that a controller whose handlers register after its
// informers start still sees each change: replaytest.Controller sets it,
// and the test calls Play once the manager's caches have synced.
//
// # Servers
//
// [Server] serves the same engine on 127.0.0.1 over HTTPS with HTTP/2 (and
// HTTP/1.1), so client-go multiplexes its watches on one connection as it
// does with the API server. It holds against slow and hostile clients:
// header and idle timeouts, no write timeout (watches last), 1 MiB of
// headers and 3 MiB of body at most (the API server's limit, a 413
// Status beyond), a bearer token compared in constant time and a bare 401
// Unauthorized without it, and nothing in plain HTTP unless
// [Server.PlainHTTP].
//
// # Many watchers
//
// One recording can be served to a thousand watchers at once, to load-test
// a client library or a fleet of controllers. The watches of a collection
// share the work as the API server's watch cache shares it: each recorded
// event is read and encoded once per encoding in use, and every watch
// writes those same bytes, filtered by its own selectors, after its own
// starting point, with its own edits and writes. A watch is written as the
// API server writes one: not compressed (only a streaming list is, for a
// client that accepts gzip), and the events that are ready together
// flushed together. At a speed above 0 each watch keeps the recorded
// order and timing, and one that cannot keep up is ended the API server's
// way (see [Options.Speed]); no watch ever waits for another.
package replay
