package report

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDiffLines(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       []lineOp
	}{
		{name: "equal texts are one keep", a: "a b c", b: "a b c", want: []lineOp{{keep: 3}}},
		{name: "a changed line is a skip and an insert between keeps", a: "a b c", b: "a x c", want: []lineOp{{keep: 1}, {skip: 1}, {insert: []string{"x"}}, {keep: 1}}},
		{name: "two changes far apart keep what is between", a: "a b c d e", b: "A b c d E", want: []lineOp{{skip: 1}, {insert: []string{"A"}}, {keep: 3}, {skip: 1}, {insert: []string{"E"}}}},
		{name: "an insertion in the middle", a: "a c", b: "a b1 b2 c", want: []lineOp{{keep: 1}, {insert: []string{"b1", "b2"}}, {keep: 1}}},
		{name: "from nothing everything is inserted", a: "", b: "a b", want: []lineOp{{insert: []string{"a", "b"}}}},
		{name: "to nothing everything is skipped", a: "a b", b: "", want: []lineOp{{skip: 2}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, b := strings.Fields(tt.a), strings.Fields(tt.b)
			got := diffLines(a, b)
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(lineOp{})); d != "" {
				t.Errorf("ops (-want +got):\n%s", d)
			}
			if d := cmp.Diff(b, applyOps(a, got)); len(b) > 0 && d != "" {
				t.Errorf("applying the ops does not give b (-want +got):\n%s", d)
			}
		})
	}
}

func FuzzDiffLines(f *testing.F) {
	f.Add("a b c", "a x c")
	f.Fuzz(func(t *testing.T, a, b string) {
		al, bl := strings.Split(a, ""), strings.Split(b, "")
		if got := applyOps(al, diffLines(al, bl)); strings.Join(got, "") != b {
			t.Fatalf("diff(%q, %q) applied gives %q", a, b, strings.Join(got, ""))
		}
	})
}

// TestDiffLinesIsAShortestEditScript: on random texts of a few letters
// (many equal lines, many ways to align them) the ops rebuild b and skip
// and insert exactly n+m-2·LCS lines, the fewest there are.
func TestDiffLinesIsAShortestEditScript(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	text := func() []string {
		l := make([]string, rnd.IntN(14))
		for i := range l {
			l[i] = string(rune('a' + rnd.IntN(3)))
		}
		return l
	}
	for range 2000 {
		a, b := text(), text()
		ops := diffLines(a, b)
		if d := cmp.Diff(b, applyOps(a, ops)); len(b) > 0 && d != "" {
			t.Fatalf("diff(%q, %q): applying the ops does not give b (-want +got):\n%s", a, b, d)
		}
		cost := 0
		for _, o := range ops {
			cost += o.skip + len(o.insert)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); cost != want {
			t.Fatalf("diff(%q, %q) skips and inserts %d lines, want %d", a, b, cost, want)
		}
	}
}

// lcs is the length of a and b's longest common subsequence.
func lcs(a, b []string) int {
	dp := make([][]int, len(a)+1)
	for i := range dp {
		dp[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				dp[i][j] = dp[i+1][j+1] + 1
			} else {
				dp[i][j] = max(dp[i+1][j], dp[i][j+1])
			}
		}
	}
	return dp[0][0]
}
