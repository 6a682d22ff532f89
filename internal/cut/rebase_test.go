package cut_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cut"
)

// parts copies testdata/rec-000N.kwrec (rec.kwrec split in three parts)
// to a temporary directory and returns their paths there.
func parts(t *testing.T) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, n := range []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"} {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, n)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		out = append(out, p)
	}
	return out
}

// frames loads a recording and returns its watch events, interaction
// by interaction.
func frames(t *testing.T, names ...string) []string {
	t.Helper()
	c, err := cassettes.Load(names...)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, in := range c.Interactions {
		for _, f := range in.Frames {
			if strings.HasPrefix(string(f.Data), `{"type":`) {
				out = append(out, string(f.Data))
			}
		}
	}
	return out
}

func TestRebase(t *testing.T) {
	for _, tc := range []struct {
		name   string
		part   int   // the part rebased
		read   []int // the parts read
		delete bool  // the parts before the rebased one deleted
		golden string
	}{{
		name:   "a rebased part starts with the state at its start and replays with the parts after it",
		part:   3,
		read:   []int{1, 2, 3},
		delete: true,
		golden: "rebased-0003.kwrec",
	}, {
		name:   "a part rebased while the next is being written leaves its watches open",
		part:   2,
		read:   []int{1, 2},
		delete: true,
		golden: "rebased-0002.kwrec",
	}, {
		name:   "parts left before a rebased one (a recorder stopped while it deleted them) are superseded",
		part:   3,
		read:   []int{1, 2, 3},
		golden: "rebased-0003.kwrec",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ps := parts(t)
			var names []string
			for _, k := range tc.read {
				names = append(names, ps[k-1])
			}
			whole := frames(t, ps[0])
			rec, err := cut.Read(names...)
			if err != nil {
				t.Fatal(err)
			}
			res, err := cut.Rebase(rec, ps[tc.part-1])
			if err != nil {
				t.Fatal(err)
			}
			if err := res.Save(ps[tc.part-1]); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(ps[tc.part-1])
			if err != nil {
				t.Fatal(err)
			}
			golden(t, tc.golden, b)
			if tc.delete {
				for _, p := range ps[:tc.part-1] {
					os.Remove(p)
				}
			}
			got, err := cassettes.Parts(filepath.Join(filepath.Dir(ps[0]), "rec-*.kwrec"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ps[tc.part-1:], got); d != "" {
				t.Errorf("parts (-want +got):\n%s", d)
			}
			// The frames of the last part read on from the rebased one.
			kept := frames(t, got...)
			if d := cmp.Diff(whole[len(whole)-2:], kept[len(kept)-2:]); d != "" {
				t.Errorf("the last part's frames (-whole +kept):\n%s", d)
			}
		})
	}
}
