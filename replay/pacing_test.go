package replay_test

import (
	"bufio"
	"fmt"
	"net/http"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	testclock "k8s.io/utils/clock/testing"
)

// gapCassette is a list at resourceVersion 100 and a watch, both recorded
// at the cassette start, whose events came 4 s and 5 s later.
func gapCassette() *cassettes.Cassette {
	h := http.Header{"Content-Type": {"application/json"}}
	list := &cassettes.Interaction{ID: 1,
		Request:  cassettes.Request{Method: "GET", URL: "https://h" + cmPath + "?limit=500"},
		Response: &cassettes.Response{Status: 200, Header: h},
		Frames:   []cassettes.Frame{{Data: []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[]}` + "\n")}},
		End:      &cassettes.End{Reason: cassettes.EndEOF}}
	w := &cassettes.Interaction{ID: 2,
		Request:  cassettes.Request{Method: "GET", URL: "https://h" + cmPath + "?allowWatchBookmarks=true&resourceVersion=100&watch=true"},
		Response: &cassettes.Response{Status: 200, Header: h},
		Frames: []cassettes.Frame{
			eventFrame(4*time.Second, "ADDED", cmJSON("a", 101, "1")),
			eventFrame(5*time.Second, "ADDED", cmJSON("b", 102, "2")),
		},
		End: &cassettes.End{At: 6 * time.Second, Reason: cassettes.EndStopped}}
	return &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{list, w}}
}

func TestASynthesizedWatchKeepsTheRecordedGaps(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			speed float64
			gaps  []time.Duration
		}{
			{1, []time.Duration{4 * time.Second, time.Second}},
			{10, []time.Duration{400 * time.Millisecond, 100 * time.Millisecond}},
		} {
			t.Run(fmt.Sprintf("at speed %v the first event comes %v after the watch starts", tc.speed, tc.gaps[0]), func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fc := testclock.NewFakeClock(time.Unix(0, 0))
					r := src.replayer(t, gapCassette(), replay.Options{Speed: tc.speed, Clock: fc})
					// kubectl's watch, not the recorded one: served from the timeline.
					resp := rawGet(t, r, ctxT(t), cmPath+"?resourceVersion=100&watch=true")
					lines := make(chan string)
					go func() {
						sc := bufio.NewScanner(resp.Body)
						for sc.Scan() {
							lines <- summarizeLine(sc.Bytes())
						}
						close(lines)
					}()
					for i, want := range []string{"ADDED a@101", "ADDED b@102"} {
						waitWaiters(t, fc)
						fc.Step(tc.gaps[i] - time.Millisecond)
						// Step fires due timers at once: a waiter left means the
						// event is still waiting for its time.
						if !fc.HasWaiters() {
							t.Fatalf("%s came before its recorded gap of %v", want, tc.gaps[i])
						}
						fc.Step(time.Millisecond)
						if l := <-lines; l != want {
							t.Fatalf("got %s, want %s", l, want)
						}
					}
				})
			})
		}
	})
}
