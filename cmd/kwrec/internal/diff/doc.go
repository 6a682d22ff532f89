// Package diff compares two cassettes by what they recorded, object by
// object, not line by line: two recordings of one scenario differ in
// timing, resourceVersions, uids and timestamps, and in encoding (JSON or
// protobuf), yet hold the same objects going through the same changes.
//
// # Recipe
//
//	r, err := diff.Files("before.kwrec.zst", "after.kwrec.zst", diff.Options{Ignore: []string{".metadata.annotations"}})
//	if !r.Equal {
//		r.WriteText(os.Stdout)
//	}
//
// # What is compared
//
// Every GET of a collection or object answered 200 contributes its objects:
// a list's items, a get's object, a watch's ADDED, MODIFIED and DELETED
// objects (BOOKMARK and ERROR events carry none; kubectl's Tables and
// metadata-only lists are views, skipped). Objects are grouped by collection
// the way the API server stores them: the request path without its query
// and with the namespace taken out, so /api/v1/namespaces/X/configmaps and
// /api/v1/configmaps both fill /api/v1/configmaps, keyed namespace/name.
//
// Each object's history is every version seen, in recording order (the
// order of the cassette's lines), deduplicated by resourceVersion: a list
// and the watch that follows it, or two watches, repeat versions. A
// protobuf object is decoded to JSON through client-go's scheme, so a JSON
// and a protobuf recording of one scenario compare equal. Ignored fields
// ([DefaultIgnore], [Options]) are dropped, and so are fields that are
// null, {} or [], which protobuf cannot tell from absent ones; consecutive
// versions that became equal then collapse into one: a write that changed
// only ignored fields is no change.
//
// Two histories are aligned by their longest common subsequence of equal
// versions, and the unequal versions between two matches are paired by
// position. An LCS, unlike pairing version i with version i, keeps one
// extra write in one recording from shifting every later version out of
// step; the pairing in the gaps then shows an object that changed
// differently as field differences (.data.k: "2" → "3") rather than as one
// version only A has and one only B has.
//
// # Memory
//
// Neither cassette is held in memory, nor is any version's JSON but the
// ones that differ. [Compare] reads each cassette twice, both at once:
//
//  1. The first reading keeps, for each version, its resourceVersion, its
//     deleted mark, its place in the cassette and a 64-bit sum (SHA-256)
//     of its canonical form, the JSON json.Marshal writes of it after the
//     ignored and empty fields are dropped, so two versions have one sum
//     exactly when they are equal (but for odds of 2⁻⁶⁴ a pair). The
//     histories are aligned by their sums.
//  2. Only when versions were paired unequal is each cassette read again,
//     for those versions' canonical JSON alone, up to the last of them;
//     each is checked against its sum ([ErrChanged] when it reads
//     differently), and the pairs' fields are compared.
//
// The bound: 24 bytes a version (its record, resourceVersion included;
// up to twice that while its history grows, before it is deduplicated),
// plus a history's and its key's few dozen bytes an
// object, plus the canonical JSON of the versions paired unequal and the
// report itself, plus the body of a list or get response while it is
// read (a watch is read event by event). Aligning two histories of
// n and m versions takes two arrays of n+m+3 ints and O((n+m)·d) time for
// d versions only one side has (Myers' algorithm), so a long history with
// one extra write aligns as quickly as a short one.
//
// # Paths
//
// Field paths are jq-like: .data.k, .spec.containers[0].image,
// .metadata.labels["app.kubernetes.io/name"]. An ignore path also covers
// everything under it, [] (or [*]) matches any index and * and ? glob
// within a key: .status.conditions[].last*Time.
package diff
