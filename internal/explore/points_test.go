package explore_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/explore"
	"github.com/kwrec/kwrec/replay"
)

// The points of a reference run that watched, listed and got ConfigMaps,
// updated one twice, and saw two recorded changes.
var (
	changes  = []replay.Change{{Resource: "configmaps", Namespace: "default", RV: 201}, {Resource: "configmaps", Namespace: "default", RV: 202}}
	requests = []replay.RequestCount{{Verb: "list", Resource: "configmaps", N: 1}, {Verb: "get", Resource: "configmaps", N: 1}, {Verb: "watch", Resource: "configmaps", N: 2, Streaming: 1}, {Verb: "update", Resource: "configmaps", N: 2}}
)

func names(ps []explore.Point) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

func TestPointsAreNamedByKindAndPlace(t *testing.T) {
	for _, tc := range []struct {
		name string
		sel  explore.Select
		want []string
	}{
		{"a 410 follows each change of a watched collection", explore.Select{Kinds: []explore.FaultKind{explore.FaultExpired}},
			[]string{"410@configmaps/default:rv=201", "410@configmaps/default:rv=202"}},
		{"a 409 answers each write in turn", explore.Select{Kinds: []explore.FaultKind{explore.FaultConflict}},
			[]string{"409@update:configmaps:nth=1", "409@update:configmaps:nth=2"}},
		{"the list and watch-open faults take each list and watch", explore.Select{Kinds: []explore.FaultKind{explore.FaultList503, explore.FaultWatchReset}},
			[]string{"503@list:configmaps:nth=1", "reset@watch-open:configmaps:nth=1", "reset@watch-open:configmaps:nth=2"}},
		{"a reset before the bookmark takes each streaming list, counted among themselves", explore.Select{Kinds: []explore.FaultKind{explore.FaultBookmarkReset}},
			[]string{"reset@watch-list:configmaps:nth=1,before=bookmark"}},
		{"a sample keeps Max points in their order", explore.Select{Kinds: []explore.FaultKind{explore.FaultExpired, explore.FaultConflict}, Max: 3, Seed: 1},
			[]string{"410@configmaps/default:rv=201", "410@configmaps/default:rv=202", "409@update:configmaps:nth=1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, names(explore.Points(changes, requests, tc.sel))); d != "" {
				t.Errorf("points (-want +got):\n%s", d)
			}
		})
	}
}

func TestEveryKindMakesPoints(t *testing.T) {
	all := explore.Points(changes, requests, explore.Select{})
	for _, k := range explore.AllFaults {
		if len(explore.Points(changes, requests, explore.Select{Kinds: []explore.FaultKind{k}})) == 0 {
			t.Errorf("kind %s made no point", k)
		}
	}
	// 4 watch kinds × 2 changes, 2 list kinds, 2 get kinds, (5 watch-open
	// kinds and 2 watch cuts) × 2 watches, 1 bookmark reset for the one
	// streaming list, 3 write kinds × 2 updates.
	if len(all) != 4*2+2+2+(5+2)*2+1+3*2 {
		t.Errorf("%d points of every kind: %v", len(all), names(all))
	}
}

func TestShardAndKindsRefuseBadInput(t *testing.T) {
	ps := explore.Points(changes, requests, explore.Select{Kinds: []explore.FaultKind{explore.FaultExpired, explore.FaultConflict}})
	got, err := explore.Shard(ps, "2/2")
	if err != nil || cmp.Diff([]string{"410@configmaps/default:rv=202", "409@update:configmaps:nth=2"}, names(got)) != "" {
		t.Errorf("shard 2/2: %v, %v", names(got), err)
	}
	for _, spec := range []string{"0/2", "3/2", "1", "a/b", "1/0"} {
		if _, err := explore.Shard(ps, spec); err == nil || err.Error() != "want i/n with 1 <= i <= n, such as 2/4" {
			t.Errorf("shard %q: %v", spec, err)
		}
	}
	for _, tc := range []struct {
		name, in string
		want     []explore.FaultKind
		err      string
	}{
		{"an empty list is every kind", "", nil, ""},
		{"kinds are kept once, in order", "410, list500,410", []explore.FaultKind{explore.FaultExpired, explore.FaultList500}, ""},
		{"an unknown kind is named", "410,list404", nil, `unknown fault kind "list404": want a comma-separated list of 410, 410behind, reset, timeout, list500, list503, get500, get503, watch410, watch429, watch500, watch503, watchreset, watchcut410, watchcutreset, bookmarkreset, 409, 500 or 429`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := explore.ParseKinds(tc.in)
			if (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("kinds (-want +got):\n%s", d)
			}
		})
	}
}
