package explore

import (
	"math/rand/v2"
	"slices"
)

// pairs draws max pairs (len(points) when max is 0) of points with
// seed, without repeats, each the earlier point first, and returns them
// as points of two faults named "first+second", in the order of their
// first point then their second.
func pairs(points []Point, max int, seed uint64) []Point {
	n := len(points)
	all := n * (n - 1) / 2
	if max <= 0 {
		max = n
	}
	max = min(max, all)
	rng := rand.New(rand.NewPCG(seed, seed^0x70616972))
	type pair struct{ i, j int }
	seen := map[pair]bool{}
	var picked []pair
	for len(picked) < max {
		i, j := rng.IntN(n), rng.IntN(n)
		if i == j {
			continue
		}
		if i > j {
			i, j = j, i
		}
		if p := (pair{i, j}); !seen[p] {
			seen[p] = true
			picked = append(picked, p)
		}
	}
	slices.SortFunc(picked, func(a, b pair) int {
		if a.i != b.i {
			return a.i - b.i
		}
		return a.j - b.j
	})
	out := make([]Point, 0, len(picked))
	for _, p := range picked {
		second := points[p.j].Edit
		out = append(out, Point{Name: points[p.i].Name + "+" + points[p.j].Name, Edit: points[p.i].Edit, Then: &second})
	}
	return out
}
