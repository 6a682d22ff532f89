package replay

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/pace"
	"k8s.io/client-go/rest"
	testclock "k8s.io/utils/clock/testing"
)

// These tests look inside the Replayer (sharing.made, sharing.terminated),
// so they live in package replay; the hub's semantics are also covered by
// every watch test of package replay_test, which all go through it.

const fanPath = "/api/v1/namespaces/default/configmaps"

// fanCassette is a list of no ConfigMaps at resourceVersion 100, then a
// watch from 100 of n events gap apart: cm-i ADDED at 101+i, labelled
// app=a for even i and app=b for odd.
func fanCassette(n int, gap time.Duration) *cassettes.Cassette {
	const host = "https://127.0.0.1:6443"
	jsonType := http.Header{"Content-Type": {"application/json"}}
	accept := http.Header{"Accept": {"application/json"}}
	frames := make([]cassettes.Frame, n)
	for i := range frames {
		app := "ab"[i%2 : i%2+1]
		obj := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%04d","namespace":"default","uid":"u%d","resourceVersion":"%d","labels":{"app":%q}},"data":{"k":"v%d"}}`, i, i, 101+i, app, i)
		frames[i] = cassettes.Frame{At: time.Duration(i+1) * gap, Data: wire.WatchEventJSON("ADDED", []byte(obj))}
	}
	return &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{
		{ID: 1, Request: cassettes.Request{Method: "GET", URL: host + fanPath + "?limit=500", Header: accept},
			Response: &cassettes.Response{Status: 200, Header: jsonType},
			Frames:   []cassettes.Frame{{Data: []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[]}` + "\n")}},
			End:      &cassettes.End{Reason: cassettes.EndEOF}},
		{ID: 2, Request: cassettes.Request{Method: "GET", URL: host + fanPath + "?allowWatchBookmarks=true&resourceVersion=100&watch=true", Header: accept},
			Response: &cassettes.Response{Status: 200, Header: jsonType},
			Frames:   frames, End: &cassettes.End{At: time.Duration(n+1) * gap, Reason: cassettes.EndStopped}},
	}}
}

// fanSources replays c from memory (New) and from a cassette file (Open),
// whose frames the hubs read back from the file.
// fanSources runs test on a Replayer of c from memory and from a cassette
// file, each in a synctest bubble: a test on the fake clock waits for the
// watches with synctest.Wait, never by polling.
func fanSources(t *testing.T, c *cassettes.Cassette, opts Options, test func(t *testing.T, r *Replayer)) {
	t.Run("from memory", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			r, err := New(c, opts)
			if err != nil {
				t.Fatal(err)
			}
			test(t, r)
		})
	})
	t.Run("from a cassette file", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "fan.kwrec.zst")
		cassettetest.Write(t, path, c, cassettes.WriterOptions{SegmentSize: 4096, FlushInterval: time.Hour})
		synctest.Test(t, func(t *testing.T) {
			r, err := Open(path, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			test(t, r)
		})
	})
}

// fanWatch is one in-process watch of fanPath, read a frame at a time.
type fanWatch struct {
	body io.ReadCloser
	buf  []byte
}

// startWatch watches fanPath from resourceVersion 100 with the given
// Accept header and extra query.
func startWatch(t *testing.T, r *Replayer, accept, query string) *fanWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", "https://h"+fanPath+"?resourceVersion=100&watch=true"+query, nil)
	req.Header.Set("Accept", accept)
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("watch: %s", resp.Status)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return &fanWatch{body: resp.Body, buf: make([]byte, 1<<20)}
}

// next reads one frame (a Read returns at most the rest of one frame).
func (w *fanWatch) next() ([]byte, error) {
	n, err := w.body.Read(w.buf)
	return bytes.Clone(w.buf[:n]), err
}

func TestEachFrameIsMadeOncePerEncodingForEveryWatch(t *testing.T) {
	const (
		events  = 100
		watches = 20 // per encoding
	)
	fanSources(t, fanCassette(events, time.Millisecond), Options{}, func(t *testing.T, r *Replayer) {
		var ws []*fanWatch
		for i := range 2 * watches {
			accept := "application/json"
			if i%2 == 1 {
				accept = wire.MediaProtobuf + ",application/json"
			}
			ws = append(ws, startWatch(t, r, accept, ""))
		}
		// Every watch reads its first event before any reads on: all have
		// joined their hub (as watches that start together do), none made
		// a frame of its own.
		got := make([][][]byte, len(ws))
		for i, w := range ws {
			f, err := w.next()
			if err != nil {
				t.Fatal(err)
			}
			got[i] = append(got[i], f)
		}
		var wg sync.WaitGroup
		for i, w := range ws {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for len(got[i]) < events {
					f, err := w.next()
					if err != nil {
						t.Errorf("watch %d: after %d events: %v", i, len(got[i]), err)
						return
					}
					got[i] = append(got[i], f)
				}
			}()
		}
		wg.Wait()
		if n := r.fan.made.Load(); n != 2*events {
			t.Errorf("%d watch-event frames made for %d watches of %d events in 2 encodings; want %d, each once per encoding", n, len(ws), events, 2*events)
		}
		for i := 2; i < len(ws); i++ {
			if !slices.EqualFunc(got[i%2], got[i], bytes.Equal) {
				t.Fatalf("watch %d got other frames than watch %d in the same encoding:\n%q\n%q", i, i%2, got[i], got[i%2])
			}
		}
		if !bytes.HasPrefix(got[0][events-1], []byte(`{"type":"ADDED","object":{"kind":"ConfigMap"`)) || !bytes.Contains(got[0][events-1], []byte(`"resourceVersion":"200"`)) {
			t.Errorf("last JSON frame: %s", got[0][events-1])
		}
		if typ, _, _, ok := wire.SplitWatchEventProto(got[1][events-1]); !ok || typ != "ADDED" {
			t.Errorf("last protobuf frame does not parse: %q", got[1][events-1])
		}
	})
}

func TestSelectorsFilterEachWatchOfASharedHub(t *testing.T) {
	const events = 60
	fanSources(t, fanCassette(events, time.Millisecond), Options{}, func(t *testing.T, r *Replayer) {
		all := startWatch(t, r, "application/json", "")
		first, err := all.next() // joins the hub at the first event
		if err != nil {
			t.Fatal(err)
		}
		names := func(w *fanWatch, n int, got ...[]byte) []string {
			var out []string
			for _, f := range got {
				out = append(out, nameOf(f))
			}
			for len(out) < n {
				f, err := w.next()
				if err != nil {
					t.Fatalf("after %d events: %v", len(out), err)
				}
				out = append(out, nameOf(f))
			}
			return out
		}
		a := startWatch(t, r, "application/json", "&labelSelector=app%3Da")
		b := startWatch(t, r, "application/json", "&labelSelector=app%21%3Da")
		one := startWatch(t, r, "application/json", "&fieldSelector=metadata.name%3Dcm-0007")
		var wantA, wantB, wantAll []string
		for i := range events {
			n := fmt.Sprintf("cm-%04d", i)
			wantAll = append(wantAll, n)
			if i%2 == 0 {
				wantA = append(wantA, n)
			} else {
				wantB = append(wantB, n)
			}
		}
		for _, tc := range []struct {
			name string
			got  []string
			want []string
		}{
			{"no selector", names(all, events, first), wantAll},
			{"app=a", names(a, len(wantA)), wantA},
			{"app!=a", names(b, len(wantB)), wantB},
			{"metadata.name=cm-0007", names(one, 1), []string{"cm-0007"}},
		} {
			if d := cmp.Diff(tc.want, tc.got); d != "" {
				t.Errorf("%s: (-want +got):\n%s", tc.name, d)
			}
		}
		if n := r.fan.made.Load(); n != events {
			t.Errorf("%d frames made; want %d, each once", n, events)
		}
	})
}

func TestAWatchThatCannotKeepUpIsEndedAsTheAPIServerEndsIt(t *testing.T) {
	const (
		events = 1000
		gap    = 10 * time.Millisecond
	)
	for _, tc := range []struct {
		name string
		// stall is how long the slow watch reads nothing past the time
		// its first event's frame pace.WatchBuffer ahead is due; want is how
		// many events it gets.
		stall time.Duration
		want  int
	}{
		{"a watch 200 frames behind for longer than the dispatch budget gets what its buffer held, then a clean end", 2 * time.Second, pace.WatchBuffer},
		{"a watch 200 frames behind for less than the budget keeps up", 50 * time.Millisecond, events},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fanSources(t, fanCassette(events, gap), Options{Speed: 1, Clock: testclock.NewFakeClock(time.Unix(0, 0))}, func(t *testing.T, r *Replayer) {
				fc := r.clock.(*testclock.FakeClock)
				fast := readAll(startWatch(t, r, "application/json", ""), events, nil)
				start := make(chan struct{})
				slow := readAll(startWatch(t, r, "application/json", ""), events, start)
				// Event k is due (k+1)*gap after the watches started: step
				// the clock a gap at a time, once every watch still reading
				// waits for its next event.
				stall := time.Duration(pace.WatchBuffer+1)*gap + tc.stall
				for at := time.Duration(0); fast.reading() || slow.reading(); at += gap {
					if at == stall {
						close(start)
					}
					// A watch still reading waits for its next event once it
					// has every one that is due.
					waiting := func() int {
						n := 0
						for _, w := range []*reader{fast, slow} {
							if w.reading() && (w != slow || at >= stall) {
								n++
							}
						}
						return n
					}
					synctest.Wait()
					// Both wait for the same next instant, the waits of
					// one instant sharing one timer (pace.Alarms).
					if want := min(waiting(), 1); fc.Waiters() != want && (fast.reading() || slow.reading()) {
						t.Fatalf("at %v: %d clock waiters, want %d; fast read %d, slow %d (%v)", at, fc.Waiters(), want, len(fast.names()), len(slow.names()), slow.err)
					}
					fc.Step(gap)
				}
				var all []string
				for i := range events {
					all = append(all, fmt.Sprintf("cm-%04d", i))
				}
				if fast.err != nil {
					t.Errorf("fast watch: %v", fast.err)
				}
				if d := cmp.Diff(all, fast.names()); d != "" {
					t.Errorf("the fast watch missed events (-want +got):\n%s", d)
				}
				if d := cmp.Diff(all[:tc.want], slow.names()); d != "" {
					t.Errorf("the slow watch (-want +got):\n%s", d)
				}
				if tc.want < events && slow.err != io.EOF {
					t.Errorf("the slow watch ended with %v; want a clean end (io.EOF) as the API server's", slow.err)
				}
				for _, f := range slow.got {
					if bytes.Contains(f, []byte(`"type":"ERROR"`)) {
						t.Errorf("the slow watch got an ERROR event, which the API server does not send: %s", f)
					}
				}
				wantEnded := int64(0)
				if tc.want < events {
					wantEnded = 1
				}
				if n := r.fan.terminated.Load(); n != wantEnded {
					t.Errorf("%d watches ended for falling behind; want %d", n, wantEnded)
				}
			})
		})
	}
}

func TestPacedWatchesThatKeepUpGetEveryEventAndNoneIsEnded(t *testing.T) {
	// 5 ms apart: a watch that keeps up is never 200 events (a second)
	// behind, even on a loaded machine under -race.
	const events = 3 * pace.WatchBuffer // the backlog's window goes round
	fanSources(t, fanCassette(events, 50*time.Millisecond), Options{Speed: 10}, func(t *testing.T, r *Replayer) {
		var rs []*reader
		for range 5 {
			rs = append(rs, readAll(startWatch(t, r, "application/json", ""), events, nil))
		}
		var want []string
		for i := range events {
			want = append(want, fmt.Sprintf("cm-%04d", i))
		}
		for i, rd := range rs {
			<-rd.done
			if rd.err != nil {
				t.Errorf("watch %d: %v", i, rd.err)
			}
			if d := cmp.Diff(want, rd.names()); d != "" {
				t.Errorf("watch %d (-want +got):\n%s", i, d)
			}
		}
		if n := r.fan.terminated.Load(); n != 0 {
			t.Errorf("%d watches ended for falling behind; want none", n)
		}
	})
}

// reader reads a watch on its own goroutine, once start is closed (nil:
// at once), until it has n frames or an error.
type reader struct {
	mu   sync.Mutex
	got  [][]byte
	err  error
	done chan struct{}
	wait <-chan struct{}
}

func readAll(w *fanWatch, n int, start <-chan struct{}) *reader {
	rd := &reader{done: make(chan struct{}), wait: start}
	go func() {
		defer close(rd.done)
		if start != nil {
			<-start
		}
		for range n {
			f, err := w.next()
			rd.mu.Lock()
			if err != nil {
				rd.err = err
				rd.mu.Unlock()
				return
			}
			rd.got = append(rd.got, f)
			rd.mu.Unlock()
		}
	}()
	return rd
}

// reading reports whether the reader has not finished.
func (rd *reader) reading() bool {
	select {
	case <-rd.done:
		return false
	default:
		return true
	}
}

// names returns the names of the objects of the frames read.
func (rd *reader) names() []string {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	var out []string
	for _, f := range rd.got {
		out = append(out, nameOf(f))
	}
	return out
}

// nameOf returns the first "name" in a JSON frame: its object's.
func nameOf(f []byte) string {
	_, rest, ok := bytes.Cut(f, []byte(`"name":"`))
	if !ok {
		return ""
	}
	name, _, _ := bytes.Cut(rest, []byte(`"`))
	return string(name)
}

func TestTwoHundredWatchesThroughTheServerGetEveryEventInOrder(t *testing.T) {
	const (
		events  = 100
		watches = 200
	)
	fanSources(t, fanCassette(events, time.Millisecond), Options{Hold: true}, func(t *testing.T, r *Replayer) {
		srv := &Server{Replayer: r}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		// One client process: every watch over its HTTP/2 connections.
		hc, err := rest.HTTPClientFor(srv.Config())
		if err != nil {
			t.Fatal(err)
		}
		defer hc.CloseIdleConnections()
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		var want []string
		for i := range events {
			want = append(want, fmt.Sprintf("cm-%04d@%d", i, 101+i))
		}
		got := make([][]string, watches)
		errs := make([]error, watches)
		var started, done sync.WaitGroup
		for i := range watches {
			started.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				got[i], errs[i] = serverWatch(ctx, hc, srv.URL(), events, started.Done)
			}()
		}
		started.Wait() // every watch has its headers: Hold keeps the events
		r.Play()
		done.Wait()
		for i := range watches {
			if errs[i] != nil {
				t.Fatalf("watch %d: %v after %d events", i, errs[i], len(got[i]))
			}
			if d := cmp.Diff(want, got[i]); d != "" {
				t.Fatalf("watch %d (-want +got):\n%s", i, d)
			}
		}
	})
}

// serverWatch watches fanPath from resourceVersion 100 through a server
// at base until it has n events, returning them as name@resourceVersion.
func serverWatch(ctx context.Context, hc *http.Client, base string, n int, headers func()) ([]string, error) {
	req, _ := http.NewRequestWithContext(ctx, "GET", base+fanPath+"?resourceVersion=100&watch=true", nil)
	req.Header.Set("Accept", "application/json")
	resp, err := hc.Do(req)
	headers()
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	if ce := resp.Header.Get("Content-Encoding"); ce != "" {
		return nil, fmt.Errorf("a plain watch served with Content-Encoding %s; kube-apiserver compresses none", ce)
	}
	var out []string
	sc := bufio.NewScanner(resp.Body)
	for len(out) < n && sc.Scan() {
		out = append(out, fmt.Sprintf("%s@%d", nameOf(sc.Bytes()), wire.ScanRV(sc.Bytes())))
	}
	if len(out) < n {
		return out, fmt.Errorf("the stream ended: %v", sc.Err())
	}
	return out, nil
}

func TestAWatchAskedForBeforePlayCountsItsGapsFromPlay(t *testing.T) {
	const gap = time.Second
	fanSources(t, fanCassette(3, gap), Options{Speed: 1, Hold: true}, func(t *testing.T, r *Replayer) {
		// The watch has its headers, then Play comes long after, before
		// the watch's first read (as a server's handler may come to it):
		// its events are still due their recorded gaps after Play, never
		// before, as for a watch that was waiting.
		w := startWatch(t, r, "application/json", "")
		time.Sleep(10 * gap)
		r.Play()
		played := time.Now()
		for k := range 3 {
			if _, err := w.next(); err != nil {
				t.Fatal(err)
			}
			if got, want := time.Since(played), time.Duration(k+1)*gap; got != want {
				t.Errorf("event %d came %v after Play, want %v", k, got, want)
			}
		}
	})
}
