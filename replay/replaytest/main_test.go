package replaytest_test

import (
	"errors"
	"os"
	"testing"
	"testing/synctest"
	"time"

	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/kwrec/kwrec/replay/replaytest"
)

func TestMain(m *testing.M) { os.Exit(replaytest.Main(m)) }

// An informer reports a failed watch through utilruntime.HandleError.
// With apimachinery's own handlers the first report in a bubble sleeps
// for the years between the bubble's clock (2000) and the time the
// handler read at start-up; with Main's it takes no time at all.
func TestAnErrorReportedInABubbleTakesNoBubbleTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		utilruntime.HandleError(errors.New("replaytest: a watch failed"))
		utilruntime.HandleError(errors.New("replaytest: a watch failed again"))
		if d := time.Since(start); d != 0 {
			t.Errorf("reporting two errors took %v of bubble time, want 0", d)
		}
	})
}
