package mirror_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// TestMirrorSurvivesEveryFault explores the controller over its
// recording: every fault replaytest.Explore knows, at every point the
// reference run reached. The controller must end each run in the
// reference's world and in the script's final one.
func TestMirrorSurvivesEveryFault(t *testing.T) {
	points := replaytest.Explore(t, cassette, replaytest.Faults{}, func(t *testing.T, r *replay.Replayer) {
		final := runController(t, r)
		if diff := cmp.Diff(wantFinal(), final); diff != "" {
			t.Errorf("final ConfigMaps (-want +got):\n%s", diff)
		}
	})
	if len(points) == 0 {
		t.Fatal("no fault point: the reference run watched, listed and wrote nothing")
	}
}
