package examplecontroller_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

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
	points := replaytest.Explore(t, cassette, replaytest.Faults{Kinds: all, Check: everySourceMirrored}, body)
	behind := replaytest.Explore(t, cassette, replaytest.Faults{Kinds: []replaytest.FaultKind{replaytest.FaultBehind},
		Ignore: [][]string{{"metadata", "annotations", examplecontroller.Writes}}}, body)
	// Two faults at once, sampled: recovery failing in its turn.
	pairs := replaytest.Explore(t, cassette, replaytest.Faults{Kinds: all, Depth: 2, Max: 40, Seed: 1, Check: everySourceMirrored}, body)
	if len(pairs) != 40 {
		t.Errorf("%d pairs of faults, want the 40 asked for", len(pairs))
	}
	if len(points) == 0 || len(behind) == 0 {
		t.Fatalf("%d and %d fault points: the reference run watched, listed and wrote nothing", len(points), len(behind))
	}
}

// everySourceMirrored is the mirror's invariant at every quiescent moment:
// each ConfigMap labelled mirror=true has its mirror, with its data.
func everySourceMirrored(world []replay.Object) error {
	cms := map[string]corev1.ConfigMap{}
	for _, o := range world {
		if o.Resource != "configmaps" || o.Namespace != namespace {
			continue
		}
		var cm corev1.ConfigMap
		if err := json.Unmarshal(o.JSON, &cm); err != nil {
			return err
		}
		cms[cm.Name] = cm
	}
	var missing []string
	for name, cm := range cms {
		if cm.Labels[examplecontroller.Label] != "true" {
			continue
		}
		if m, ok := cms[name+examplecontroller.MirrorSuffix]; !ok || !maps(m.Data, cm.Data) {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("sources without their mirror, or with another's data: %v", missing)
	}
	return nil
}
