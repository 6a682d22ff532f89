package cut_test

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
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

func TestCheckWhole(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(string) string // of the rebased part's text
		want string
	}{{
		name: "a rebased part and the part after it are whole",
		edit: func(s string) string { return s },
	}, {
		name: "a collection watched with no list of it before is named with the part",
		edit: func(s string) string {
			var out []string
			for _, l := range strings.SplitAfter(s, "\n") {
				if !strings.Contains(l, `"request":2,`) && !strings.Contains(l, `"response":2,`) && !strings.Contains(l, `"frame":2,`) && !strings.Contains(l, `"end":2,`) {
					out = append(out, l)
				}
			}
			return strings.Join(out, "")
		},
		want: "recording not whole: rec-0003.kwrec holds no list of /api/v1/namespaces/default/configmaps before rec-0003.kwrec watches it (interaction 3): the oldest part kept must start with a list of every collection; keep that part's rebased start, or re-record",
	}, {
		name: "a watch that starts past the state before it is a gap",
		edit: func(s string) string {
			return strings.Replace(s, "configmaps?allowWatchBookmarks=true&resourceVersion=103", "configmaps?allowWatchBookmarks=true&resourceVersion=150", 1)
		},
		want: "recording not whole: rec-0003.kwrec: the watch of /api/v1/namespaces/default/configmaps (interaction 3) starts from resourceVersion 150, but the lines before it hold that collection only up to 103: the changes between are lost",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ps := parts(t)
			b, err := os.ReadFile(filepath.Join("testdata", "rebased-0003.kwrec"))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(ps[2], []byte(tc.edit(string(b))), 0o644); err != nil {
				t.Fatal(err)
			}
			os.Remove(ps[0])
			os.Remove(ps[1])
			rec, err := cut.Read(ps[2])
			if err != nil {
				t.Fatal(err)
			}
			err = rec.CheckWhole()
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, cut.ErrNotWhole) {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

func TestBase(t *testing.T) {
	for _, tc := range []struct {
		name string
		part int   // the part whose start the state is at
		read []int // the parts read
		want string
	}{{
		name: "the state before part 3, written over part 2, reads with part 3 as the rebased part 3",
		part: 3,
		read: []int{1, 2, 3},
	}, {
		name: "the state before part 2, written over part 1, reads with part 2 as the rebased part 2",
		part: 2,
		read: []int{1, 2},
	}, {
		name: "part 1 has no part before it to hold the state",
		part: 1,
		read: []int{1},
		want: "rec-0001.kwrec: part 1: no part before it to hold the state at its start",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			ps := parts(t)
			var names []string
			for _, k := range tc.read {
				names = append(names, ps[k-1])
			}
			rec, err := cut.Read(names...)
			if err != nil {
				t.Fatal(err)
			}
			rebased, err := cut.Rebase(rec, ps[tc.part-1])
			if err != nil {
				t.Fatal(err)
			}
			res, err := cut.Base(rec, ps[tc.part-1])
			if tc.want != "" {
				if err == nil || strings.ReplaceAll(err.Error(), filepath.Dir(ps[0])+string(filepath.Separator), "") != tc.want {
					t.Fatalf("got %v\nwant %s", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if res.Header.Part != tc.part-1 || !res.Header.Rebased || res.RV != rebased.RV {
				t.Errorf("header part %d rebased %v at resourceVersion %d; want part %d rebased at %d", res.Header.Part, res.Header.Rebased, res.RV, tc.part-1, rebased.RV)
			}
			// The rebased part as the state and the part unchanged.
			want := filepath.Join(t.TempDir(), "want.kwrec")
			if err := rebased.Save(want); err != nil {
				t.Fatal(err)
			}
			if err := res.Save(ps[tc.part-2]); err != nil {
				t.Fatal(err)
			}
			for _, p := range ps[:tc.part-2] {
				os.Remove(p)
			}
			got, err := cassettes.Parts(filepath.Join(filepath.Dir(ps[0]), "rec-*.kwrec"))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(ps[tc.part-2:], got); d != "" {
				t.Errorf("parts (-want +got):\n%s", d)
			}
			wh, w := entries(t, want)
			gh, g := entries(t, got[:2]...)
			if d := cmp.Diff(w, g, cmpopts.IgnoreFields(cassettes.Entry{}, "Line")); d != "" {
				t.Errorf("lines (-rebased +state and part):\n%s", d)
			}
			if d := cmp.Diff(wh.Edits, gh.Edits); d != "" {
				t.Errorf("header edits (-rebased +state and part):\n%s", d)
			}
			rd, err := cut.Read(got...)
			if err != nil {
				t.Fatal(err)
			}
			if err := rd.CheckWhole(); err != nil {
				t.Error(err)
			}
		})
	}
}

// entries reads the recording names names to its end, interactions open
// there allowed, and returns its header and lines.
func entries(t *testing.T, names ...string) (cassettes.Header, []cassettes.Entry) {
	t.Helper()
	rd, err := cassettes.Open(names...)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	var out []cassettes.Entry
	for {
		e, err := rd.Next()
		if err == io.EOF || errors.Is(err, cassettes.ErrOpenAtEnd) {
			return rd.Header(), out
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
}
