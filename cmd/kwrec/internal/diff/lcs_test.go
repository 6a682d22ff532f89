package diff

import (
	"math/rand/v2"
	"testing"
)

// lcsLength is the length of a longest common subsequence by the table.
func lcsLength(a, b []byte) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

// checkLCS fails t unless pairs is a common subsequence of a and b as
// long as the longest.
func checkLCS(t *testing.T, a, b []byte, pairs [][2]int) {
	t.Helper()
	for k, p := range pairs {
		if p[0] < 0 || p[0] >= len(a) || p[1] < 0 || p[1] >= len(b) || a[p[0]] != b[p[1]] {
			t.Fatalf("lcs(%q, %q): pair %v does not match", a, b, p)
		}
		if k > 0 && (p[0] <= pairs[k-1][0] || p[1] <= pairs[k-1][1]) {
			t.Fatalf("lcs(%q, %q): pairs %v then %v are out of order", a, b, pairs[k-1], p)
		}
	}
	if want := lcsLength(a, b); len(pairs) != want {
		t.Fatalf("lcs(%q, %q) = %d pairs %v, want %d", a, b, len(pairs), pairs, want)
	}
}

func TestLCSIsAsLongAsTheTableSays(t *testing.T) {
	tests := []struct {
		name string
		a, b string
	}{
		{"both empty", "", ""},
		{"one empty", "abc", ""},
		{"equal", "abcabc", "abcabc"},
		{"nothing in common", "aaaa", "bbb"},
		{"one insertion", "abcdef", "abcxdef"},
		{"one deletion at each end", "xabcy", "abc"},
		{"a swap", "ab", "ba"},
		{"repeats", "aabbaabb", "ababab"},
		{"the paper's example", "abcabba", "cbabac"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkLCS(t, []byte(tt.a), []byte(tt.b), lcs([]byte(tt.a), []byte(tt.b)))
		})
	}
}

func TestLCSOfRandomSequencesIsAsLongAsTheTableSays(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n, letters int) []byte {
		s := make([]byte, n)
		for i := range s {
			s[i] = byte('a' + rng.IntN(letters))
		}
		return s
	}
	for range 3000 {
		letters := 1 + rng.IntN(4)
		a, b := random(rng.IntN(30), letters), random(rng.IntN(30), letters)
		checkLCS(t, a, b, lcs(a, b))
	}
}

func TestLCSOfLongSimilarSequencesIsQuickAndSmall(t *testing.T) {
	// 100,000 versions each, ten apart: a table would be 10¹⁰ cells.
	const n = 100_000
	a, b := make([]int, n), make([]int, 0, n+5)
	for i := range a {
		a[i] = i
	}
	for i := range n {
		if i%20_000 == 0 {
			b = append(b, -i-1) // only in b
		}
		if i%20_000 != 7 {
			b = append(b, i) // i is only in a
		}
	}
	allocs := testing.AllocsPerRun(1, func() {
		if got := len(lcs(a, b)); got != n-5 {
			t.Errorf("lcs length = %d, want %d", got, n-5)
		}
	})
	if allocs > 10 {
		t.Errorf("lcs allocated %v times, want a few arrays", allocs)
	}
}
