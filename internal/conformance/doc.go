// Package conformance holds kwrec's own conformance check of overlay
// writes: one table of HTTP requests (verbs × kinds × subresources ×
// options × encodings), each sent in order to a real kube-apiserver and to
// a replay in Overlay mode of a cassette recorded from that server just
// before, with the answers compared: status codes, reasons, messages,
// Warning headers and objects, the fields only the server's clock, etcd or
// random source decide masked.
//
// The package has no code; the table is conformance_live_test.go, where a
// new case is one line. It needs the test control plane (see
// internal/controlplanetest) and skips without it unless
// KWREC_REQUIRE_CONTROLPLANE=1.
//
// The overlay runs without its garbage collector here, as the test
// control plane has no kube-controller-manager: replay's own tests check
// the collector.
package conformance
