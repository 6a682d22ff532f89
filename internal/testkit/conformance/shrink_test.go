package conformance_test

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/testkit/conformance"
)

func TestShrinkKeepsOnlyWhatTheFailureNeeds(t *testing.T) {
	seq := func(n int) []int {
		xs := make([]int, n)
		for i := range xs {
			xs[i] = i
		}
		return xs
	}
	// containsAll fails when every one of need is in the sequence, as a
	// difference shows only after the requests that set it up.
	containsAll := func(need ...int) func([]int) bool {
		return func(xs []int) bool {
			for _, n := range need {
				if !slices.Contains(xs, n) {
					return false
				}
			}
			return true
		}
	}
	for _, tc := range []struct {
		name  string
		xs    []int
		fails func([]int) bool
		want  []int
	}{
		{"one culprit among many is all that is left", seq(200), containsAll(137), []int{137}},
		{"a culprit and the requests it needs keep their order", seq(200), containsAll(3, 90, 199), []int{3, 90, 199}},
		{"the first and the last element can both stay", seq(7), containsAll(0, 6), []int{0, 6}},
		{"a sequence of one stays when the failure needs it", []int{5}, containsAll(5), []int{5}},
		{"a failure that needs nothing shrinks to nothing", seq(10), func([]int) bool { return true }, []int{}},
		{"a failure that needs two equal elements keeps two",
			[]int{1, 2, 1, 3, 1}, func(xs []int) bool { return len(xs) >= 2 && xs[0] == 1 && xs[len(xs)-1] == 1 }, []int{1, 1}},
		{"an ordered pair is kept as a pair, not as one of it",
			seq(50), func(xs []int) bool { return slices.Index(xs, 40) > slices.Index(xs, 10) && slices.Contains(xs, 10) }, []int{10, 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := slices.Clone(tc.xs)
			got := conformance.Shrink(tc.xs, tc.fails)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Shrink (-want +got):\n%s", d)
			}
			if d := cmp.Diff(in, tc.xs); d != "" {
				t.Errorf("Shrink changed its input (-before +after):\n%s", d)
			}
		})
	}
}

func TestShrinkAsksLittleForOneCulprit(t *testing.T) {
	calls := 0
	got := conformance.Shrink(make([]int, 256), func(xs []int) bool {
		calls++
		return len(xs) > 0 && len(xs) < 256 // any one element fails; the whole sequence was given as failing
	})
	if len(got) != 1 {
		t.Errorf("Shrink kept %d elements, want 1", len(got))
	}
	// ddmin on one culprit: two tries a halving, eight halvings.
	if calls > 2*8+2 {
		t.Errorf("Shrink asked fails %d times for one culprit among 256, want at most 18", calls)
	}
}
