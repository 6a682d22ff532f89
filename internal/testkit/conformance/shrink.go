// Package conformance compares kwrec's overlay with kube-apiserver: its
// tests (which need the test control plane, see
// internal/testkit/controlplanetest) send the same requests to both and
// compare the answers. The package itself holds what those tests share
// that needs no server: [Shrink], which cuts a differential fuzzer's
// failing sequence of requests down to a few.
package conformance

// Shrink returns a subsequence of xs, in xs's order, for which fails
// still holds, shortened by delta debugging (Zeller's ddmin, complements
// only): it drops a chunk of the sequence while fails holds without it,
// halving the chunks when no chunk can go, down to single elements. The
// result is 1-minimal: dropping any one of its elements makes fails
// false. fails(xs) is assumed true and not asked; fails is called with
// fresh slices it may keep. Shrink asks fails O(n²) times at worst,
// O(log n) times for one culprit; a caller with a budget makes fails
// answer false once it is spent.
func Shrink[T any](xs []T, fails func([]T) bool) []T {
	cur := xs
	chunks := 2
	for len(cur) >= 2 {
		chunks = min(chunks, len(cur))
		size := (len(cur) + chunks - 1) / chunks
		reduced := false
		for start := 0; start < len(cur); start += size {
			cand := make([]T, 0, len(cur))
			cand = append(cand, cur[:start]...)
			cand = append(cand, cur[min(start+size, len(cur)):]...)
			if fails(cand) {
				cur, chunks, reduced = cand, max(chunks-1, 2), true
				break
			}
		}
		if !reduced {
			if chunks == len(cur) {
				break
			}
			chunks *= 2
		}
	}
	if len(cur) == 1 && fails([]T{}) {
		return []T{}
	}
	return cur
}
