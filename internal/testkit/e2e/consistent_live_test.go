package e2e_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/testkit/readyourwrites"
)

// TestLiveControllerRuntimeReadsItsWritesThroughServe runs
// controller-runtime's read-your-writes client against `kwrec serve
// --writes overlay` of a recording of one namespace's ConfigMaps.
func TestLiveControllerRuntimeReadsItsWritesThroughServe(t *testing.T) {
	fx := fixture(t)
	s := serve(t, fx, fx.json.Cassette, "--writes", "overlay")
	readyourwrites.Check(t, s.Config(t), fx.json.Namespace)
}
