package examplecontroller_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/testkit/examplecontroller"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// TestMirrorSurvivesEveryFault explores the controller over its
// recording: every fault replaytest.Explore knows, at every point the
// reference run reached. The controller must end each run in the
// reference's world and in the script's final one. Behind a 410 that
// skips a change, the Lease's count of reconciles that wrote is left out
// of the comparison: it is history, not world, and a skipped change is a
// reconcile fewer.
func TestMirrorSurvivesEveryFault(t *testing.T) {
	var all []replaytest.FaultKind
	for _, k := range replaytest.AllFaults {
		if k != replaytest.FaultBehind {
			all = append(all, k)
		}
	}
	body := func(t *testing.T, r *replay.Replayer) {
		final := runController(t, r)
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
	}
	points := replaytest.Explore(t, cassette, replaytest.Faults{Kinds: all}, body)
	behind := replaytest.Explore(t, cassette, replaytest.Faults{Kinds: []replaytest.FaultKind{replaytest.FaultBehind},
		Ignore: [][]string{{"metadata", "annotations", examplecontroller.Writes}}}, body)
	if len(points) == 0 || len(behind) == 0 {
		t.Fatalf("%d and %d fault points: the reference run watched, listed and wrote nothing", len(points), len(behind))
	}
}
