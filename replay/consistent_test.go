package replay_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/testkit/readyourwrites"
	"github.com/kwrec/kwrec/replay"
)

// TestAControllerRuntimeClientReadsItsOwnWrites runs controller-runtime's
// read-your-writes client against a recording of one namespace's
// ConfigMaps: its cache lists and watches across all namespaces, and must
// see every write.
func TestAControllerRuntimeClientReadsItsOwnWrites(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay})
		readyourwrites.Check(t, r.Config(), "default")
	})
}
