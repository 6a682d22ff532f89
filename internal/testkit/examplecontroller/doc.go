// Package examplecontroller is kwrec's example controller, the code its replay tests
// exercise: for every ConfigMap labelled mirror=true it keeps a ConfigMap
// NAME-mirror in the same namespace with the same data.
//
// Each reconcile of a source makes the writes a real controller makes:
//
//   - a server-side apply of the mirror (field owner "kwrec-mirror",
//     forced), labelled kwrec.dev/mirror-of=NAME;
//   - an Update of the source setting the annotation kwrec.dev/mirrored to
//     a hash of the data mirrored, so a conflict (409) fails the reconcile
//     and the workqueue retries it. A hash, not a resourceVersion: it is the
//     same live and in a replay, whose resourceVersions differ;
//   - an Update (or the first Create) of the Lease kwrec-mirror in the
//     namespace, as leader election renews its lease, whose annotation
//     kwrec.dev/writes counts the reconciles that changed something. A
//     count whose Lease write failed is owed and added by the next
//     reconcile, so a retried reconcile that finds nothing left to write
//     still counts (replaytest.Explore found it lost otherwise).
//
// When a source loses its label or is deleted, its mirror is deleted (no
// owner reference: the test control plane runs no garbage collector) and
// the annotation removed.
//
// The tests replay internal/testkit/examplecontroller/testdata/mirror.kwrec.zst, recorded
// from the real control plane by TestLiveRecordMirrorCassette with
// KWREC_UPDATE=1, and compare the writes with testdata/mirror.writes.
package examplecontroller
