package replay_test

import (
	"bufio"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	testclock "k8s.io/utils/clock/testing"
)

func names(l *corev1.ConfigMapList) []string {
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Name+"@"+cm.ResourceVersion)
	}
	return out
}

func TestTheTimelineAnswersUnrecordedRequests(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		// Each case gets a fresh replay: a list at X moves the replay point to X,
		// as a client that has seen X must never be shown older state.
		var (
			r   *replay.Replayer
			cms typedCMs
			ctx = ctxT(t)
		)
		fresh := func(t *testing.T) {
			r = src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
			cms = clientset(t, r.Config()).CoreV1().ConfigMaps("default")
		}
		run := func(name string, f func(t *testing.T)) {
			t.Run(name, func(t *testing.T) { fresh(t); f(t) })
		}
		run("a list at an exact resourceVersion has the objects as of it", func(t *testing.T) {
			l, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "102", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a@102", "b@95", "c@101"}, names(l)); d != "" || l.ResourceVersion != "102" {
				t.Errorf("list at %s (-want +got):\n%s", l.ResourceVersion, d)
			}
		})
		run("a list with no resourceVersion is the state the replay has reached", func(t *testing.T) {
			l, err := cms.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a@90", "b@95"}, names(l)); d != "" || l.ResourceVersion != "100" {
				t.Errorf("list at %s (-want +got):\n%s", l.ResourceVersion, d)
			}
		})
		run("a list older than the recording is 410 Expired", func(t *testing.T) {
			_, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "50", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if !apierrors.IsResourceExpired(err) || !strings.Contains(err.Error(), "too old resource version: 50 (100)") {
				t.Errorf("err = %v; want 410 Expired", err)
			}
		})
		run("a list newer than the recording is 504 with Retry-After", func(t *testing.T) {
			err := clientset(t, r.Config()).CoreV1().RESTClient().Get().Namespace("default").Resource("configmaps").
				Param("resourceVersion", "999").MaxRetries(0).Do(ctx).Error()
			if d, ok := apierrors.SuggestsClientDelay(err); !apierrors.IsTimeout(err) || !ok || d != 1 {
				t.Errorf("err = %v (delay %d, %v); want 504 Timeout with Retry-After 1", err, d, ok)
			}
		})
		run("a paged list follows its continue token", func(t *testing.T) {
			p1, err := cms.List(ctx, metav1.ListOptions{Limit: 2, ResourceVersion: "104", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
			if err != nil {
				t.Fatal(err)
			}
			p2, err := cms.List(ctx, metav1.ListOptions{Limit: 2, Continue: p1.Continue})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a@102", "c@101", "d@104"}, append(names(p1), names(p2)...)); d != "" || p2.Continue != "" || *p1.RemainingItemCount != 1 {
				t.Errorf("pages (-want +got):\n%s", d)
			}
		})
		run("a label selector filters", func(t *testing.T) {
			l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "app=demo"})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{"a@90"}, names(l)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
		run("a get of one object", func(t *testing.T) {
			cm, err := cms.Get(ctx, "b", metav1.GetOptions{})
			if err != nil || cm.ResourceVersion != "95" {
				t.Errorf("get b = %v, %v", cm, err)
			}
			if _, err := cms.Get(ctx, "zz", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get zz: %v; want NotFound", err)
			}
		})
		run("a watch from an old resourceVersion gets one 410 ERROR event and ends", func(t *testing.T) {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "50"})
			if err != nil {
				t.Fatal(err)
			}
			var evs []watch.Event
			for ev := range w.ResultChan() {
				evs = append(evs, ev)
			}
			if len(evs) != 1 || evs[0].Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(evs[0].Object)) {
				t.Errorf("events %v; want one 410 Expired ERROR", evs)
			}
		})
		run("a watch from a resourceVersion gets the later events then a bookmark", func(t *testing.T) {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "102", AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			want := []got{recordedEvents[2], recordedEvents[3], {Type: "BOOKMARK", RV: "104"}}
			if d := cmp.Diff(want, recv(t, w, 3)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
		run("a streaming list sends ADDED per object, the initial-events-end bookmark, then the events", func(t *testing.T) {
			yes := true
			w, err := cms.Watch(ctx, metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			var evs []got
			var ann map[string]string
			for i := 0; i < 8; i++ {
				select {
				case ev := <-w.ResultChan():
					if ev.Type == watch.Bookmark && ann == nil {
						ann = ev.Object.(*corev1.ConfigMap).Annotations
					}
					evs = append(evs, summarize(ev))
				case <-time.After(20 * time.Second):
					t.Fatalf("watchdog: only %v", evs)
				}
			}
			want := []got{{"ADDED", "a", "90", "1"}, {"ADDED", "b", "95", "2"}, {Type: "BOOKMARK", RV: "100"}}
			want = append(append(want, recordedEvents...), got{Type: "BOOKMARK", RV: "104"})
			if d := cmp.Diff(want, evs); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if ann[metav1.InitialEventsAnnotationKey] != "true" {
				t.Errorf("first bookmark annotations %v; want %s: \"true\"", ann, metav1.InitialEventsAnnotationKey)
			}
		})
	})
}

func TestStrictModeAnswersRecordedRequestsOnly(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Strict: true})
		_, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{})
		if !errors.Is(err, replay.ErrNoMatch) {
			t.Errorf("err = %v; want ErrNoMatch", err)
		}
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		recv(t, w, 4)
		select {
		case <-r.Done():
			t.Error("a strict replay is done though the recorded list was never requested")
		default:
		}
		rawGet(t, r, ctxT(t), cmPath+"?limit=500&resourceVersion=0").Body.Close()
		waitDone(t, r)
	})
}

func TestAnUnrecordedCollectionIsEmptyAndAnUnknownResourceNotFound(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		cs := clientset(t, r.Config())
		// A resource the server has, never recorded: none exist, as of the
		// newest resourceVersion recorded (kubectl describe lists events so).
		l, err := cs.CoreV1().Events("default").List(ctxT(t), metav1.ListOptions{FieldSelector: "involvedObject.name=a"})
		if err != nil || len(l.Items) != 0 || l.ResourceVersion != "104" {
			t.Errorf("events list = %v, %v; want an empty list at 104", l, err)
		}
		if _, err := cs.CoreV1().Secrets("default").Get(ctxT(t), "s", metav1.GetOptions{}); !apierrors.IsNotFound(err) || err.Error() != `secrets "s" not found` {
			t.Errorf("get of an unrecorded secret: %v", err)
		}
		// All namespaces of a resource recorded in one namespace: assembled
		// from the namespaces recorded.
		all, err := cs.CoreV1().ConfigMaps("").List(ctxT(t), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, cm := range all.Items {
			names = append(names, cm.Namespace+"/"+cm.Name)
		}
		if want := []string{"default/a", "default/b"}; !slices.Equal(names, want) {
			t.Errorf("all-namespaces configmaps: %v, want %v", names, want)
		}
		// A resource no discovery knows.
		resp := rawGet(t, r, ctxT(t), "/apis/example.com/v1/namespaces/default/widgets")
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 404 || !strings.Contains(string(b), `"message":"the server could not find the requested resource (kwrec: the cassette records no list or watch of /apis/example.com/v1/namespaces/default/widgets)","reason":"NotFound"`) {
			t.Errorf("unknown resource: %d %s", resp.StatusCode, b)
		}
	})
}

func TestAStrictReplayDoesNotAnswerUnrecordedRequests(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Strict: true})
		_, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{ResourceVersion: "102"})
		if !errors.Is(err, replay.ErrNoMatch) || !strings.Contains(err.Error(), "GET /api/v1/namespaces/default/configmaps?resourceVersion=102; nearest recorded: #1 (query limit (absent) vs 500, query resourceVersion=102 vs 0)") {
			t.Errorf("err = %v", err)
		}
	})
}

func TestErrorWhenExhausted(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{ErrorWhenExhausted: true})
		cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
		w, err := cms.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		evs := waitClosed(t, w) // never hangs: the idle end becomes an error
		if len(evs) != 5 || cmp.Diff(recordedEvents, evs[:4]) != "" || evs[4].Type != "ERROR" || !strings.Contains(evs[4].Value, replay.ErrExhausted.Error()) {
			t.Errorf("events %v; want the recorded four then an ERROR naming ErrExhausted", evs)
		}
		waitDone(t, r)
		if _, err := cms.List(ctxT(t), metav1.ListOptions{}); !errors.Is(err, replay.ErrExhausted) {
			t.Errorf("list after the end: %v; want ErrExhausted", err)
		}

		t.Run("the raw body read error wraps ErrExhausted", func(t *testing.T) {
			r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{ErrorWhenExhausted: true, Strict: true})
			rawGet(t, r, ctxT(t), cmPath+"?limit=500&resourceVersion=0").Body.Close()
			b, err := io.ReadAll(rawGet(t, r, ctxT(t), fixtureWatch).Body)
			if !errors.Is(err, replay.ErrExhausted) || strings.Count(string(b), "\n") != 4 {
				t.Errorf("ReadAll: %d lines, %v; want 4 lines then ErrExhausted", strings.Count(string(b), "\n"), err)
			}
		})
	})
}

func TestGzipWhenTheClientAskedForIt(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := fixture(t, "configmaps.kwrec")
		r := src.replayer(t, c, replay.Options{})
		req := rawRequest(fixtureWatch)
		req.Header.Set("Accept-Encoding", "gzip")
		resp, err := r.RoundTrip(req.WithContext(ctxT(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.Header.Get("Content-Encoding") != "gzip" {
			t.Fatalf("Content-Encoding %q", resp.Header.Get("Content-Encoding"))
		}
		zr, err := gzip.NewReader(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		br := bufio.NewReader(zr)
		// The stream stays open (recorded end: stopped), so each frame must be
		// flushed through gzip on its own to be readable now.
		for i, f := range c.Interactions[1].Frames {
			line, err := br.ReadString('\n')
			if err != nil || line != string(f.Data) {
				t.Fatalf("frame %d = %q, %v; want %q", i+1, line, err, f.Data)
			}
		}
	})
}

func TestSpeedZeroReplays100kEventsWithoutWaiting(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		const n = 100_000
		frames := make([]cassettes.Frame, n)
		for i := range frames {
			// A second apart: any wait would block on the never-stepped clock.
			frames[i] = eventFrame(time.Duration(i+1)*time.Second, "ADDED", cmJSON(fmt.Sprint("cm", i), 101+i, "v"))
		}
		c := watchCassette("eof", frames...)
		c.Interactions[0].Response.Latency = time.Minute
		fc := testclock.NewFakeClock(time.Unix(0, 0))
		r := src.replayer(t, c, replay.Options{Clock: fc, Strict: true})
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		count, last := 0, ""
		for ev := range w.ResultChan() {
			count++
			last = ev.Object.(*corev1.ConfigMap).ResourceVersion
		}
		if count != n || last != fmt.Sprint(100+n) {
			t.Fatalf("%d events, last at %s; want %d, last at %d", count, last, n, 100+n)
		}
		waitDone(t, r)
		t.Logf("%d events in %v (%.0f events/s)", n, time.Since(start), n/time.Since(start).Seconds())
	})
}

type typedCMs = typedcorev1.ConfigMapInterface

func TestAListBodySplitAcrossFramesStillFeedsTheTimeline(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		list := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"20"},"items":[` +
			`{"metadata":{"name":"a","namespace":"default","resourceVersion":"10"},"data":{"k":"1"}},` +
			`{"metadata":{"name":"b","namespace":"default","resourceVersion":"11"},"data":{"k":"2"}}]}` + "\n"
		for _, tc := range []struct {
			name   string
			frames []string
			want   []string
			err    string
		}{
			{"in one frame", []string{list}, []string{"a@10", "b@11"}, ""},
			{"cut in two mid-item", []string{list[:100], list[100:]}, []string{"a@10", "b@11"}, ""},
			{"cut in three", []string{list[:40], list[40:170], list[170:]}, []string{"a@10", "b@11"}, ""},
			{"not JSON at all", []string{"{\"kind\":", "oops}\n"}, nil,
				"the timeline of /api/v1/namespaces/default/configmaps cannot be rebuilt: interaction 1: list body is not JSON: invalid character 'o' looking for beginning of value"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				in := &cassettes.Interaction{ID: 1,
					Request:  cassettes.Request{Method: "GET", URL: "https://h" + cmPath + "?limit=500"},
					Response: &cassettes.Response{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}},
					End:      &cassettes.End{Reason: cassettes.EndEOF}}
				for _, f := range tc.frames {
					in.Frames = append(in.Frames, cassettes.Frame{Data: []byte(f)})
				}
				r := src.replayer(t, &cassettes.Cassette{Interactions: []*cassettes.Interaction{in}}, replay.Options{})
				// Not the recorded request (no limit): answered from state.
				l, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{ResourceVersion: "20"})
				if tc.err != "" {
					if err == nil || !strings.Contains(err.Error(), tc.err) {
						t.Fatalf("error %v, want one containing %q", err, tc.err)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, names(l)); d != "" {
					t.Errorf("list (-want +got):\n%s", d)
				}
			})
		}
	})
}

func TestGetsListsAndWatchEventsCarryKindWhereTheAPIServerPutsIt(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		ctx := ctxT(t)
		// a came from the recorded list, whose items carry no kind.
		get := rawGet(t, r, ctx, cmPath+"/a")
		b, _ := io.ReadAll(get.Body)
		if want := `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a",`; !strings.HasPrefix(string(b), want) {
			t.Errorf("get a = %s; want it to start %s", b, want)
		}
		// c came from a watch event, whose object carries kind; in a list it
		// does not, as the API server writes list items.
		list := rawGet(t, r, ctx, cmPath+"?resourceVersion=101&resourceVersionMatch=Exact")
		b, _ = io.ReadAll(list.Body)
		if strings.Count(string(b), `"kind"`) != 1 || !strings.Contains(string(b), `{"metadata":{"name":"c",`) {
			t.Errorf("list at 101 = %s; want kind on the list only", b)
		}
		// A streaming list's initial events carry kind, a's included.
		w := rawGet(t, r, ctx, cmPath+"?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true")
		line, _ := bufio.NewReader(w.Body).ReadString('\n')
		if want := `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a",`; !strings.HasPrefix(line, want) {
			t.Errorf("first initial event %s; want it to start %s", line, want)
		}
	})
}
