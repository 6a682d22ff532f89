package replay_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	testclock "k8s.io/utils/clock/testing"
)

func edits(t testing.TB, ss ...string) []replay.Edit {
	t.Helper()
	var out []replay.Edit
	for _, s := range ss {
		e, err := replay.ParseEdit(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	return out
}

// watchFixture opens the fixture's recorded watch through a typed client.
func watchFixture(t *testing.T, src source, opts replay.Options) watch.Interface {
	t.Helper()
	r := src.replayer(t, fixture(t, "configmaps.kwrec"), opts)
	w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

// rawGet sends one request straight to the replayer.
func rawGet(t *testing.T, r *replay.Replayer, ctx context.Context, pathQuery string) *http.Response {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://x"+pathQuery, nil)
	req.Header.Set("Accept", "application/json")
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

const fixtureWatch = cmPath + "?allowWatchBookmarks=true&resourceVersion=100&watch=true"

func TestErrorEditAnswersWithStatusThenTheRecording(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: edits(t, "error:request=1,status=503,retry-after=1", "error:request=1,status=500")})
		cs := clientset(t, r.Config())
		list := func() error {
			return cs.CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").
				Param("limit", "500").Param("resourceVersion", "0").MaxRetries(0).Do(ctxT(t)).Error()
		}
		err := list()
		if !apierrors.IsServiceUnavailable(err) {
			t.Fatalf("first list: %v, want 503 ServiceUnavailable", err)
		}
		if d, ok := apierrors.SuggestsClientDelay(err); !ok || d != 1 {
			t.Errorf("SuggestsClientDelay = %d, %v; want 1 (Retry-After: 1)", d, ok)
		}
		if err := list(); !apierrors.IsInternalError(err) {
			t.Fatalf("second list: %v, want 500 InternalError", err)
		}
		got, err := cs.CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{Limit: 500, ResourceVersion: "0"})
		if err != nil || got.ResourceVersion != "100" || len(got.Items) != 2 {
			t.Fatalf("third list = %v, %v; want the recorded list at 100", got, err)
		}
	})
}

func TestStreamEditsAsATypedWatchSeesThem(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name, edit string
			want       []got
			closes     bool // the watch channel closes after want
		}{
			{"drop removes the frame", "drop:request=2,frame=2", []got{recordedEvents[0], recordedEvents[2], recordedEvents[3]}, false},
			{"dup sends the frame twice", "dup:request=2,frame=2", []got{recordedEvents[0], recordedEvents[1], recordedEvents[1], recordedEvents[2], recordedEvents[3]}, false},
			{"truncate ends the stream cleanly", "truncate:request=2,after=3", recordedEvents[:3], true},
			{"reset closes the watch without an error event, as client-go treats a reset", "reset:request=2,after=2", recordedEvents[:2], true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				w := watchFixture(t, src, replay.Options{Strict: true, Edits: edits(t, tc.edit)})
				if tc.closes {
					if d := cmp.Diff(tc.want, waitClosed(t, w)); d != "" {
						t.Errorf("events (-want +got):\n%s", d)
					}
					return
				}
				if d := cmp.Diff(tc.want, recv(t, w, len(tc.want))); d != "" {
					t.Errorf("events (-want +got):\n%s", d)
				}
			})
		}
	})
}

func TestWatchErrorEditSendsExpiredStatus(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		w := watchFixture(t, src, replay.Options{Strict: true, Edits: edits(t, "watch-error:request=2,after=1,code=410")})
		evs := []watch.Event{}
		for ev := range w.ResultChan() {
			evs = append(evs, ev)
		}
		if len(evs) != 2 || summarize(evs[0]) != recordedEvents[0] || evs[1].Type != watch.Error {
			t.Fatalf("events = %v; want the first recorded event then ERROR, then the end", evs)
		}
		err := apierrors.FromObject(evs[1].Object)
		if !apierrors.IsResourceExpired(err) || err.(apierrors.APIStatus).Status().Code != 410 {
			t.Errorf("ERROR event = %v; want a 410 Expired Status", err)
		}
		if !strings.Contains(err.Error(), "too old resource version") {
			t.Errorf("message %q; want the watch cache's wording", err)
		}
	})
}

func TestResetEditIsAConnectionResetOnTheBody(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: edits(t, "reset:request=2,after=1")})
		resp := rawGet(t, r, ctxT(t), fixtureWatch)
		b, err := io.ReadAll(resp.Body)
		if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "connection reset by peer") {
			t.Errorf("read error %v; want ECONNRESET", err)
		}
		if want := `{"type":"ADDED"`; !strings.HasPrefix(string(b), want) || strings.Count(string(b), "\n") != 1 {
			t.Errorf("body before the reset = %q; want exactly the first event", b)
		}
	})
}

func TestEndOfRecordedStream(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		t.Run("eof ends the body cleanly", func(t *testing.T) {
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
			resp := rawGet(t, r, ctxT(t), cmPath+"?limit=500&resourceVersion=0")
			if b, err := io.ReadAll(resp.Body); err != nil || !strings.Contains(string(b), `"ConfigMapList"`) {
				t.Errorf("ReadAll = %q, %v", b, err)
			}
		})
		t.Run("a recorded reset is a body read error", func(t *testing.T) {
			c := watchCassette("reset", eventFrame(0, "ADDED", cmJSON("x", 101, "1")))
			c.Interactions[0].End.Error = "read tcp 127.0.0.1:1->127.0.0.1:6443: read: connection reset by peer"
			r := src.replayer(t, c, replay.Options{})
			_, err := io.ReadAll(rawGet(t, r, ctxT(t), cmPath+"?resourceVersion=100&watch=true").Body)
			if !errors.Is(err, syscall.ECONNRESET) || !strings.Contains(err.Error(), "recorded: read tcp 127.0.0.1:1") {
				t.Errorf("err = %v; want ECONNRESET naming the recorded error", err)
			}
		})
		t.Run("a reset before any response fails RoundTrip", func(t *testing.T) {
			c := watchCassette("reset")
			c.Interactions[0].Response = nil
			r := src.replayer(t, c, replay.Options{})
			req, _ := http.NewRequest("GET", "https://x"+cmPath+"?resourceVersion=100&watch=true", nil)
			if _, err := r.RoundTrip(req); !errors.Is(err, syscall.ECONNRESET) {
				t.Errorf("RoundTrip err = %v; want ECONNRESET", err)
			}
		})
		t.Run("a stopped stream idles until the client's timeoutSeconds on the warped clock", func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := testclock.NewFakeClock(time.Unix(0, 0))
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Speed: 10, Clock: fc, Edits: edits(t, "warp:cap=1ms")})
				timeout := int64(412)
				started := make(chan watch.Interface, 1)
				go func() {
					w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
					if err != nil {
						t.Error(err)
					}
					started <- w
				}()
				waitWaiters(t, fc) // the latency, 0.3ms at speed 10
				fc.Step(time.Millisecond)
				w := <-started
				if w == nil {
					t.FailNow()
				}
				defer w.Stop()
				var evs []got
				for range 4 { // every gap capped at 1ms
					waitWaiters(t, fc)
					fc.Step(time.Millisecond)
					evs = append(evs, recv(t, w, 1)...) // the watcher hands over one event at a time
				}
				if d := cmp.Diff(recordedEvents, evs); d != "" {
					t.Fatalf("events (-want +got):\n%s", d)
				}
				waitDone(t, r)
				waitWaiters(t, fc)
				fc.Step(41200*time.Millisecond - 5*time.Millisecond) // 412 s at speed 10, minus the frames' 4ms, minus 1ms
				if !fc.HasWaiters() {
					t.Fatal("the idle stream ended before 41.2 s")
				}
				select {
				case ev, ok := <-w.ResultChan():
					t.Fatalf("event %v, %v while idle", ev, ok)
				default:
				}
				fc.Step(time.Millisecond)
				if evs := waitClosed(t, w); len(evs) != 0 {
					t.Errorf("events at the timeout: %v", evs)
				}
			})
		})
		t.Run("cancelling the request ends an idle stream", func(t *testing.T) {
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
			ctx, cancel := context.WithCancel(context.Background())
			resp := rawGet(t, r, ctx, fixtureWatch)
			buf := make([]byte, 64<<10)
			for n := 0; n < 4; {
				k, err := resp.Body.Read(buf)
				if err != nil {
					t.Fatal(err)
				}
				n += strings.Count(string(buf[:k]), "\n")
			}
			go cancel()
			if _, err := resp.Body.Read(buf); !errors.Is(err, context.Canceled) {
				t.Errorf("read after cancel: %v; want context.Canceled", err)
			}
		})
	})
}

func TestFakeClockStepsFrameByFrame(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		synctest.Test(t, func(t *testing.T) {
			fc := testclock.NewFakeClock(time.Unix(0, 0))
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Speed: 1, Clock: fc})
			cs := clientset(t, r.Config())
			type result struct {
				w   watch.Interface
				err error
			}
			started := make(chan result, 1)
			go func() {
				w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
				started <- result{w, err}
			}()
			// 3ms of recorded latency before the headers.
			waitWaiters(t, fc)
			fc.Step(3 * time.Millisecond)
			res := <-started
			if res.err != nil {
				t.Fatal(res.err)
			}
			defer res.w.Stop()
			gaps := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond, time.Second}
			for i, gap := range gaps {
				waitWaiters(t, fc)
				fc.Step(gap - time.Millisecond)
				if !fc.HasWaiters() {
					t.Fatalf("frame %d came before its recorded gap of %v", i+1, gap)
				}
				select {
				case <-r.Done():
					t.Fatalf("Done closed before frame %d", i+1)
				default:
				}
				fc.Step(time.Millisecond)
				if d := cmp.Diff(recordedEvents[i:i+1], recv(t, res.w, 1)); d != "" {
					t.Fatalf("frame %d (-want +got):\n%s", i+1, d)
				}
			}
			// The unrequested list is covered: its state was delivered by the watch.
			waitDone(t, r)
		})
	})
}

func TestPauseAndWarpEdits(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name    string
			opts    replay.Options
			edit    string
			latency time.Duration
			waits   [4]time.Duration // exact wait before each frame
		}{
			{"pause waits its duration even at speed 0", replay.Options{}, "pause:request=2,before=2,for=5s", 0, [4]time.Duration{0, 5 * time.Second, 0, 0}},
			{"warp scale divides recorded gaps", replay.Options{Speed: 1}, "warp:scale=10", 300 * time.Microsecond,
				[4]time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}},
			{"warp cap bounds every gap", replay.Options{Speed: 1}, "warp:cap=50ms", 3 * time.Millisecond,
				[4]time.Duration{50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond, 50 * time.Millisecond}},
			{"a warp on one interaction composes with Speed", replay.Options{Speed: 2}, "warp:request=2,scale=5", 300 * time.Microsecond,
				[4]time.Duration{10 * time.Millisecond, 10 * time.Millisecond, 10 * time.Millisecond, 100 * time.Millisecond}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				synctest.Test(t, func(t *testing.T) {
					fc := testclock.NewFakeClock(time.Unix(0, 0))
					tc.opts.Clock, tc.opts.Strict, tc.opts.Edits = fc, true, edits(t, tc.edit)
					r := src.replayer(t, fixture(t, "configmaps.kwrec"), tc.opts)
					// stepExactly checks that nothing happens until d has passed.
					stepExactly := func(d time.Duration, what string) {
						if d == 0 {
							return
						}
						waitWaiters(t, fc)
						fc.Step(d - time.Microsecond)
						if !fc.HasWaiters() {
							t.Fatalf("%s came before %v", what, d)
						}
						fc.Step(time.Microsecond)
					}
					started := make(chan *http.Response, 1)
					go func() {
						req, _ := http.NewRequestWithContext(ctxT(t), "GET", "https://x"+fixtureWatch, nil)
						resp, err := r.RoundTrip(req)
						if err != nil {
							t.Error(err)
						}
						started <- resp
					}()
					stepExactly(tc.latency, "the response")
					resp := <-started
					if resp == nil {
						t.FailNow()
					}
					defer resp.Body.Close()
					lines := make(chan string, 8)
					go func() {
						buf := make([]byte, 64<<10)
						for {
							n, err := resp.Body.Read(buf)
							if err != nil {
								close(lines)
								return
							}
							lines <- string(buf[:n])
						}
					}()
					for i, d := range tc.waits {
						stepExactly(d, fmt.Sprintf("frame %d", i+1))
						select {
						case l := <-lines:
							if want := recordedEvents[i].Name; !strings.Contains(l, `"name":"`+want+`"`) {
								t.Errorf("frame %d = %s; want the event for %s", i+1, l, want)
							}
						case <-time.After(20 * time.Second):
							t.Fatalf("watchdog: frame %d never came", i+1)
						}
					}
				})
			})
		}
	})
}

func TestInjectedErrorsRecoverToRecordedFinalStore(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name, edit string
			watchList  bool
		}{
			{"410 mid-watch: re-list from state, then watch the rest", "watch-error:request=2,after=1,code=410", false},
			{"reset mid-watch: re-watch from the last resourceVersion", "reset:request=2,after=2", false},
			{"truncate mid-watch: re-watch from the last resourceVersion", "truncate:request=2,after=3", false},
			{"410 on the streaming list's first watch with WatchList on", "watch-error:request=2,after=1,code=410", true},
			{"503 on the watch: the client retries the same watch", "error:request=2,status=503", false},
		} {
			t.Run(tc.name, func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, tc.watchList)
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: edits(t, tc.edit)})
				rl, events := informerToRecordedFinal(t, r)
				if d := cmp.Diff(informerEvents, events); d != "" {
					t.Errorf("handler events, none lost or duplicated (-want +got):\n%s\nrequests:\n%s", d, rl)
				}
			})
		}
	})
}

func TestCassetteHeaderEditsApply(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := fixture(t, "configmaps.kwrec")
		c.Header.Edits = []string{"truncate:request=2,after=1"}
		w := func() []got {
			r := src.replayer(t, c, replay.Options{Strict: true})
			w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			return waitClosed(t, w)
		}()
		if d := cmp.Diff(recordedEvents[:1], w); d != "" {
			t.Errorf("(-want +got):\n%s", d)
		}
		c.Header.Edits = []string{"truncate:request=2"}
		if _, err := replay.New(c, replay.Options{}); !errors.Is(err, replay.ErrBadEdit) || !strings.Contains(err.Error(), "cassette header") {
			t.Errorf("New with a bad header edit: %v", err)
		}
	})
}
