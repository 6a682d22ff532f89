// Package overlay is the simulated API server's write side, and the world
// it writes to.
//
// A [World] is a replay's collections: for a collection's path, the
// timeline that answers for it (the recorded one, the all-namespaces one
// assembled from namespaces, or an empty one made for a collection never
// recorded), and the current JSON of its objects. Every read of a replay
// goes through it, in both write modes.
//
// A [Writer] applies the writes of the code under test to a World as
// kube-apiserver would, in replay's Overlay mode: create, update, patch
// (server-side apply included), delete and deletecollection, dry run, the
// status and scale subresources, a Pod's eviction and binding, a
// ServiceAccount's token, and kube-controller-manager's garbage collector
// after a delete. It answers each write with an [Answer], the server's
// JSON answer, which package replay encodes as the client asked and
// serves. The rules for one object are package write's; a Writer decides
// which object and timeline a write goes to, commits it (again, when a
// recorded event changed the object meanwhile) and keeps what was
// written.
package overlay
