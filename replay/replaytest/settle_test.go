package replaytest_test

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// envSettleChild names the misbehaving body TestExploreAChildThatNeverSettles
// runs, set by TestARunThatNeverSettlesFailsWithoutHanging.
const envSettleChild = "KWREC_TEST_SETTLE_CHILD"

// TestExploreAChildThatNeverSettles explores configmaps.kwrec with a body
// whose code under test either exits at once (nothing watches the
// recording) or polls forever (it is never idle). Run alone it skips.
func TestExploreAChildThatNeverSettles(t *testing.T) {
	mode := os.Getenv(envSettleChild)
	if mode == "" {
		t.Skipf("run by TestARunThatNeverSettlesFailsWithoutHanging with %s set", envSettleChild)
	}
	faults := replaytest.Faults{Kinds: []replaytest.FaultKind{replaytest.FaultList500}, SettleWithin: 2 * time.Minute}
	replaytest.Explore(t, "configmaps.kwrec", faults, func(t *testing.T, r *replay.Replayer) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
		done := make(chan struct{})
		go func() {
			defer close(done)
			if mode == "exits" {
				return // the controller exits at once
			}
			for ctx.Err() == nil { // polls forever, never idle
				_, _ = cms.Get(ctx, "a", metav1.GetOptions{})
				select {
				case <-ctx.Done():
				case <-time.After(10 * time.Second):
				}
			}
		}()
		r.Play()
		<-r.Consumed()
		cancel()
		<-done
	})
}

// TestARunThatNeverSettlesFailsWithoutHanging runs the child exploration of
// each misbehaving body in a child process: the reference run fails with
// the message that says why, no point runs after it, and it all takes
// seconds of wall time, never a hang.
func TestARunThatNeverSettlesFailsWithoutHanging(t *testing.T) {
	if testing.Short() {
		t.Skip("runs explorations in child processes")
	}
	for _, tc := range []struct{ mode, want string }{
		{"exits", "replaytest: the run did not settle: the code under test made no request for 2m0s before the recording had played: it stopped watching (or exited), and nothing consumes the recording"},
		{"polls", "replaytest: the run did not settle: the recording had not played after "},
	} {
		t.Run(tc.mode, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run", "^TestExploreAChildThatNeverSettles$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envSettleChild+"="+tc.mode)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("the child hung for 2 minutes of wall time:\n%s", out)
			}
			if err == nil {
				t.Fatalf("the child passed:\n%s", out)
			}
			if !strings.Contains(string(out), tc.want) {
				t.Errorf("the child's output lacks %q:\n%s", tc.want, out)
			}
			if strings.Contains(string(out), "TestExploreAChildThatNeverSettles/") {
				t.Errorf("the exploration went on past its failed reference run:\n%s", out)
			}
		})
	}
}
