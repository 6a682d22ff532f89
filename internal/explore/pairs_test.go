package explore

import (
	"testing"

	"github.com/kwrec/kwrec/replay"
)

func TestPairsDrawDistinctOrderedPairsTheSameForASeed(t *testing.T) {
	var points []Point
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		points = append(points, Point{Name: n, Edit: replay.Edit{Kind: replay.EditError, Resource: n, Status: 500, Nth: 1}})
	}
	got := pairs(points, 6, 7)
	again := pairs(points, 6, 7)
	var names []string
	seen := map[string]bool{}
	for i, p := range got {
		names = append(names, p.Name)
		if p.Name != again[i].Name {
			t.Errorf("seed 7 drew %s, then %s", p.Name, again[i].Name)
		}
		if seen[p.Name] {
			t.Errorf("%s drawn twice", p.Name)
		}
		seen[p.Name] = true
		if p.Then == nil || p.Name[0] >= p.Name[2] || len(p.Edits()) != 2 || p.Edits()[1].Resource != p.Name[2:] {
			t.Errorf("%s: want two edits, the earlier point's first: %v", p.Name, p.Edits())
		}
	}
	if len(got) != 6 {
		t.Errorf("%d pairs %v, want 6", len(got), names)
	}
	if all := pairs(points, 0, 1); len(all) != 5 {
		t.Errorf("Max 0 drew %d pairs, want as many as the points, 5", len(all))
	}
	if all := pairs(points, 100, 1); len(all) != 10 {
		t.Errorf("Max 100 drew %d pairs, want all 10", len(all))
	}
}
