// Package e2e holds kwrec's end-to-end acceptance tests: real clients
// replaying cassettes recorded from the real control plane.
//
// Each test binary run starts kube-apiserver and etcd once (package
// controlplanetest), records one scenario twice and stops them again:
//
//   - in JSON, by the kwrec CLI (`kwrec record configmaps`), while the
//     test creates, updates and deletes ConfigMaps;
//   - in protobuf, in process through the recorder, under a typed
//     client-go SharedInformer that lists then watches.
//
// The live final state (name -> resourceVersion) is read back from the
// control plane. Every test then replays a cassette, untouched or with a
// failure (a 410 Expired watch ERROR injected by an edit, the same 410
// hand-written into the cassette text, a 503 on the first list), to a real
// client: client-go informers with WatchList on and off (in process and
// through `kwrec serve`), kubectl get -w and python3-kubernetes. They prove
// that
//
//   - every client, not only the one whose requests equal the recorded
//     ones, meets the failure exactly once, whatever it asks and in JSON or
//     protobuf;
//   - it recovers to exactly the recorded final objects, no event lost or
//     repeated where the client exposes events;
//   - kwrec serve speaks HTTP/2 and carries many watches on one
//     connection, and warns about an edit no client reached.
//
// The tests are named TestLive... so `make e2e` runs them; they skip
// without the control plane binaries unless KWREC_REQUIRE_CONTROLPLANE=1.
// The package has no non-test code.
package e2e
