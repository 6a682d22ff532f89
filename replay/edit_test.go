package replay_test

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func TestParseEdit(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want replay.Edit
		str  string // canonical String(), when not tc.in
	}{
		{in: "error:request=3,status=503,retry-after=1", want: replay.Edit{Kind: replay.EditError, Request: 3, Status: 503, RetryAfter: 1}},
		{in: "error:match=/configmaps,request=2,status=500,reason=InternalError", want: replay.Edit{Kind: replay.EditError, Request: 2, Match: "/configmaps", Status: 500, Reason: "InternalError"},
			str: "error:request=2,match=/configmaps,status=500,reason=InternalError"},
		{in: "error:match=/pods,status=429", want: replay.Edit{Kind: replay.EditError, Request: 1, Match: "/pods", Status: 429}, str: "error:request=1,match=/pods,status=429"},
		{in: "watch-error:request=2,after=1,code=410", want: replay.Edit{Kind: replay.EditWatchError, Request: 2, After: 1, Status: 410}},
		{in: "watch-error:request=2,after=0", want: replay.Edit{Kind: replay.EditWatchError, Request: 2, Status: 410}, str: "watch-error:request=2,after=0,code=410"},
		{in: "watch-error:request=2,after=1,status=500", want: replay.Edit{Kind: replay.EditWatchError, Request: 2, After: 1, Status: 500}, str: "watch-error:request=2,after=1,code=500"},
		{in: "reset:request=2,after=3", want: replay.Edit{Kind: replay.EditReset, Request: 2, After: 3}},
		{in: "truncate:request=2,after=3", want: replay.Edit{Kind: replay.EditTruncate, Request: 2, After: 3}},
		{in: "warp:scale=10", want: replay.Edit{Kind: replay.EditWarp, Scale: 10}},
		{in: "warp:cap=100ms", want: replay.Edit{Kind: replay.EditWarp, Cap: 100 * time.Millisecond}},
		{in: "warp:request=2,scale=0.5,cap=1s", want: replay.Edit{Kind: replay.EditWarp, Request: 2, Scale: 0.5, Cap: time.Second}},
		{in: "pause:request=2,before=3,for=5s", want: replay.Edit{Kind: replay.EditPause, Request: 2, Frame: 3, For: 5 * time.Second}},
		{in: "drop:request=2,frame=3", want: replay.Edit{Kind: replay.EditDrop, Request: 2, Frame: 3}},
		{in: "dup:request=2,frame=3", want: replay.Edit{Kind: replay.EditDup, Request: 2, Frame: 3}},
		{in: "watch-error:resource=configmaps,rv=201,code=410", want: replay.Edit{Kind: replay.EditWatchError, Resource: "configmaps", RV: 201, Status: 410}},
		{in: "watch-error:resource=configmaps,rv=201,code=410,skip=1", want: replay.Edit{Kind: replay.EditWatchError, Resource: "configmaps", RV: 201, Status: 410, Skip: 1}},
		{in: "reset:resource=deployments,group=apps,namespace=prod,at=1.5s", want: replay.Edit{Kind: replay.EditReset, Resource: "deployments", Group: "apps", Namespace: "prod", At: 1500 * time.Millisecond}},
		{in: "truncate:resource=pods,rv=7", want: replay.Edit{Kind: replay.EditTruncate, Resource: "pods", RV: 7}},
		{in: "reset:resource=configmaps,verb=watch,nth=2", want: replay.Edit{Kind: replay.EditReset, Resource: "configmaps", Verb: "watch", Nth: 2}},
		{in: "reset:resource=configmaps,verb=watch,nth=2,before=bookmark", want: replay.Edit{Kind: replay.EditReset, Resource: "configmaps", Verb: "watch", Nth: 2, BeforeBookmark: true}},
		{in: "watch-error:resource=configmaps,verb=watch,before=bookmark", want: replay.Edit{Kind: replay.EditWatchError, Resource: "configmaps", Verb: "watch", Nth: 1, BeforeBookmark: true, Status: 410},
			str: "watch-error:resource=configmaps,verb=watch,nth=1,before=bookmark,code=410"},
		{in: "error:resource=configmaps,namespace=prod,name=alpha,verb=get,nth=2,status=500",
			want: replay.Edit{Kind: replay.EditError, Resource: "configmaps", Namespace: "prod", Name: "alpha", Verb: "get", Nth: 2, Status: 500}},
		{in: "reset:resource=configmaps,verb=get", want: replay.Edit{Kind: replay.EditReset, Resource: "configmaps", Verb: "get", Nth: 1},
			str: "reset:resource=configmaps,verb=get,nth=1"},
		{in: "error:resource=configmaps,verb=list,nth=2,status=503", want: replay.Edit{Kind: replay.EditError, Resource: "configmaps", Verb: "list", Nth: 2, Status: 503}},
		{in: "expire-continue:resource=configmaps,nth=2", want: replay.Edit{Kind: replay.EditExpireContinue, Resource: "configmaps", Nth: 2}},
		{in: "expire-continue:resource=deployments,group=apps,namespace=prod", want: replay.Edit{Kind: replay.EditExpireContinue, Resource: "deployments", Group: "apps", Namespace: "prod", Nth: 1},
			str: "expire-continue:resource=deployments,group=apps,namespace=prod,nth=1"},
		{in: "error:resource=configmaps,status=500", want: replay.Edit{Kind: replay.EditError, Resource: "configmaps", Nth: 1, Status: 500}, str: "error:resource=configmaps,nth=1,status=500"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			e, err := replay.ParseEdit(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, e); d != "" {
				t.Errorf("ParseEdit (-want +got):\n%s", d)
			}
			str := tc.str
			if str == "" {
				str = tc.in
			}
			if e.String() != str {
				t.Errorf("String() = %q, want %q", e.String(), str)
			}
			again, err := replay.ParseEdit(e.String())
			if err != nil || again != e {
				t.Errorf("ParseEdit(String()) = %v, %v; want %v", again, err, e)
			}
		})
	}
}

func TestParseEditErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"explode:request=1", `unknown kind "explode"; kinds are drop, dup, error, expire-continue, pause, reset, truncate, warp, watch-error`},
		{"error:request=1", "missing status; error takes request,match,resource,group,namespace,name,verb,nth,required status,reason,retry-after"},
		{"watch-error:resource=configmaps,code=410", "give rv or at with resource"},
		{"watch-error:resource=configmaps,rv=3,at=1s", "give rv or at with resource"},
		{"watch-error:resource=configmaps,rv=3,after=1", "after goes with request, or with resource and verb; with resource give rv or at"},
		{"watch-error:request=2,after=1,code=410,skip=1", "skip goes with resource: it moves a collection's timeline"},
		{"watch-error:resource=configmaps,rv=3,code=410,skip=0", "skip=0: must be at least 1"},
		{"watch-error:request=2,resource=configmaps,rv=3", "give request (or match) or resource, not both"},
		{"watch-error:request=2,rv=3,after=1", "group, namespace, name, verb, nth, rv and at go with resource"},
		{"watch-error:request=2", "missing after"},
		{"error:resource=configmaps,verb=frob,status=500", "verb=frob: verbs are get, list, watch, create, update, patch, delete, deletecollection"},
		{"error:resource=config/maps,status=500", "resource=config/maps: not a name"},
		{"error:status=503", "missing request"},
		{"error:request=1,status=503,after=2", `unknown key "after"`},
		{"error:request=x,status=503", "request=x: not a number"},
		{"error:request=0,status=503", "request=0: must be at least 1"},
		{"error:request=1,status=5003", "status=5003: 5003 is not an HTTP status"},
		{"watch-error:request=1,after=1,code=410,status=410", `key "status" given twice`},
		{"reset:request=1", "missing after"},
		{"reset:resource=configmaps,nth=2", "nth goes with verb: a reset before the first byte of the Nth request of that verb"},
		{"error:request=1,name=alpha,status=500", "group, namespace, name, verb, nth, rv and at go with resource"},
		{"reset:resource=configmaps,name=alpha,rv=3", "name goes with verb: a reset of the Nth request of that verb on that object"},
		{"reset:resource=configmaps,verb=watch,rv=3", "give rv or at (after that change), or verb (the Nth request of that verb), not both"},
		{"pause:request=1,before=2,for=soon", `for=soon: time: invalid duration "soon"`},
		{"pause:request=1,before=bookmark,for=1s", "a pause takes before=N, the frame it pauses before"},
		{"reset:resource=configmaps,verb=watch,before=3", "before goes with verb=watch, as before=bookmark (the Nth streaming list, before the bookmark that ends its initial events), not with after"},
		{"reset:resource=configmaps,verb=list,before=bookmark", "before goes with verb=watch, as before=bookmark (the Nth streaming list, before the bookmark that ends its initial events), not with after"},
		{"reset:resource=configmaps,verb=watch,after=1,before=bookmark", "before goes with verb=watch, as before=bookmark (the Nth streaming list, before the bookmark that ends its initial events), not with after"},
		{"watch-error:resource=configmaps,verb=watch", "a watch-error with verb takes verb=watch and after (the frames the Nth watch sends first) or before=bookmark"},
		{"warp:", "give scale or cap"},
		{"warp:scale=0", "scale=0: scale must be a finite number > 0"},
		{"drop:request=1,frame", `"frame" is not key=value`},
		{"expire-continue:nth=2", "missing resource; expire-continue takes required resource,group,namespace,nth"},
		{"expire-continue:resource=configmaps,rv=3", `unknown key "rv"`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			_, err := replay.ParseEdit(tc.in)
			if !errors.Is(err, replay.ErrBadEdit) {
				t.Fatalf("err = %v, want ErrBadEdit", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %q, want it to contain %q", err, tc.want)
			}
		})
	}
}

func TestEditsThatDoNotFitTheCassetteAreRefused(t *testing.T) {
	for _, tc := range []struct{ edit, want string }{
		{"truncate:request=7,after=1", "the cassette has no interaction 7 (it has 2 interactions)"},
		{"drop:request=2,frame=5", "interaction 2 has only 4 frame(s)"},
		{"reset:match=/pods,after=1", `the cassette has 0 interaction(s) whose path contains "/pods", not 1`},
	} {
		t.Run(tc.edit, func(t *testing.T) {
			e, err := replay.ParseEdit(tc.edit)
			if err != nil {
				t.Fatal(err)
			}
			_, err = replay.New(fixture(t, "configmaps.kwrec"), replay.Options{Edits: []replay.Edit{e}})
			if !errors.Is(err, replay.ErrBadEdit) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v; want ErrBadEdit containing %q", err, tc.want)
			}
		})
	}
}

func TestAResetByVerbCutsTheNthRequestBeforeItsFirstByte(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := watchCassette(cassettes.EndEOF, eventFrame(0, "MODIFIED", cmJSON("a", 101, "1")))
		r := src.replayer(t, c, replay.Options{Edits: []replay.Edit{mustEdit(t, "reset:resource=configmaps,verb=watch,nth=1")}})
		req, err := http.NewRequestWithContext(ctxT(t), http.MethodGet, "http://replay"+cmPath+"?resourceVersion=100&watch=true", nil)
		if err != nil {
			t.Fatal(err)
		}
		if resp, err := r.RoundTrip(req); err == nil || !strings.Contains(err.Error(), "connection reset") {
			if resp != nil {
				resp.Body.Close()
			}
			t.Fatalf("the first watch: %v, want a connection reset before its first byte", err)
		}
		// The second is answered: client-go's watch retries a reset
		// before the first byte itself.
		w, err := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatalf("the second watch: %v", err)
		}
		defer w.Stop()
		if got := recv(t, w, 1); got[0].String() != "MODIFIED a@101=1" {
			t.Errorf("the second watch got %v", got)
		}
		if rep := r.Edits()[0]; rep.Fired != 1 {
			t.Errorf("fired %d times, want 1: %v", rep.Fired, rep)
		}
	})
}

func TestA410OnAWatchOpenCompactsItsResourceVersion(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := watchCassette(cassettes.EndEOF, eventFrame(0, "MODIFIED", cmJSON("a", 101, "1")))
		r := src.replayer(t, c, replay.Options{Edits: []replay.Edit{mustEdit(t, "error:resource=configmaps,verb=watch,nth=2,status=410")}})
		cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
		ctx := ctxT(t)
		first, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		if got := recv(t, first, 1); got[0].String() != "MODIFIED a@101=1" {
			t.Fatalf("the first watch got %v", got)
		}
		first.Stop()
		// The world is at 101 now: the edit compacts 100, and every
		// later watch from 100 or older is refused alike, as on a
		// cluster that compacted it; one from 101 is served.
		for i, rv := range []string{"100", "100", "99", "101"} {
			w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
			if err != nil {
				t.Fatalf("watch %d: %v", i+2, err)
			}
			if rv == "101" {
				w.Stop()
				break
			}
			ev := <-w.ResultChan()
			w.Stop()
			st, ok := ev.Object.(*metav1.Status)
			want := fmt.Sprintf("too old resource version: %s (%d)", rv, map[string]int{"100": 101, "99": 100}[rv])
			if ev.Type != watch.Error || !ok || st.Code != 410 || st.Reason != metav1.StatusReasonExpired || st.Message != want {
				t.Errorf("watch %d from %s: %s %+v, want an ERROR event 410 Expired %q", i+2, rv, ev.Type, ev.Object, want)
			}
		}
		if rep := r.Edits()[0]; rep.Fired != 1 {
			t.Errorf("fired %d times, want 1: %v", rep.Fired, rep)
		}
	})
}

func TestA410OnAWatchFromTheNewestVersionRefusesItOnce(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := watchCassette(cassettes.EndEOF, eventFrame(0, "MODIFIED", cmJSON("a", 101, "1")))
		r := src.replayer(t, c, replay.Options{Edits: []replay.Edit{mustEdit(t, "error:resource=configmaps,verb=watch,nth=1,status=410")}})
		cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
		ctx := ctxT(t)
		// Nothing newer than 100 was served: a server cannot have
		// compacted it, so the 410 is once, and the retry is served.
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		if ev := <-w.ResultChan(); ev.Type != watch.Error {
			t.Errorf("the first watch got %s, want the 410", ev.Type)
		}
		w.Stop()
		w, err = cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if got := recv(t, w, 1); got[0].String() != "MODIFIED a@101=1" {
			t.Errorf("the retry got %v", got)
		}
	})
}

func mustEdit(t *testing.T, s string) replay.Edit {
	t.Helper()
	e, err := replay.ParseEdit(s)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func TestAnErrorByNameCountsOneObjectsRequests(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		c := watchCassette(cassettes.EndEOF, eventFrame(0, "MODIFIED", cmJSON("a", 101, "1")), eventFrame(0, "ADDED", cmJSON("b", 102, "1")))
		r := src.replayer(t, c, replay.Options{Edits: []replay.Edit{mustEdit(t, "error:resource=configmaps,namespace=default,name=b,verb=get,nth=2,status=500")}})
		cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
		ctx := ctxT(t)
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, w, 2)
		w.Stop()
		// Gets of a do not count; the second get of b fails.
		var got []string
		for _, name := range []string{"a", "b", "a", "b", "b"} {
			_, err := cms.Get(ctx, name, metav1.GetOptions{})
			got = append(got, fmt.Sprintf("%s:%v", name, apierrors.IsInternalError(err)))
		}
		if want := "[a:false b:false a:false b:true b:false]"; fmt.Sprint(got) != want {
			t.Errorf("gets (name:failed) %v, want %s", got, want)
		}
		var counts []string
		for _, c := range r.ObjectRequests() {
			counts = append(counts, fmt.Sprintf("%s %s/%s %d", c.Verb, c.Namespace, c.Name, c.N))
		}
		if want := "[get default/a 2 get default/b 3]"; fmt.Sprint(counts) != want {
			t.Errorf("ObjectRequests %v, want %s", counts, want)
		}
	})
}

func TestACutByVerbFailsTheNthWatchAfterItsFirstFrames(t *testing.T) {
	for _, tc := range []struct {
		edit, want string
	}{
		{"reset:resource=configmaps,verb=watch,nth=1,after=1", "reset"},
		{"watch-error:resource=configmaps,verb=watch,nth=1,after=1,code=410", "ERROR 410"},
	} {
		t.Run(tc.edit, func(t *testing.T) {
			forEachSource(t, func(t *testing.T, src source) {
				c := watchCassette(cassettes.EndEOF, eventFrame(0, "MODIFIED", cmJSON("a", 101, "1")), eventFrame(0, "ADDED", cmJSON("b", 102, "1")))
				r := src.replayer(t, c, replay.Options{Edits: []replay.Edit{mustEdit(t, tc.edit)}})
				cms := kubernetes.NewForConfigOrDie(r.Config()).CoreV1().ConfigMaps("default")
				w, err := cms.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				got := untilEnd(w)
				want := "[MODIFIED a@101=1]" // then the reset ends the stream
				if tc.want != "reset" {
					want = "[MODIFIED a@101=1 " + tc.want + "]"
				}
				if fmt.Sprint(got) != want {
					t.Errorf("the watch saw %v, want %s", got, want)
				}
				// The second watch is whole.
				w2, err := cms.Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
				if err != nil {
					t.Fatal(err)
				}
				defer w2.Stop()
				if got := recv(t, w2, 2); fmt.Sprint(got) != "[MODIFIED a@101=1 ADDED b@102=1]" {
					t.Errorf("the second watch saw %v", got)
				}
			})
		})
	}
}

func TestACutBeforeTheBookmarkFailsTheNthStreamingListOnceItsInitialEventsAreOut(t *testing.T) {
	for _, tc := range []struct {
		edit, want string
	}{
		{"reset:resource=configmaps,verb=watch,nth=1,before=bookmark", "[ADDED a@90=1 ADDED b@95=2]"},
		{"watch-error:resource=configmaps,verb=watch,nth=1,before=bookmark,code=410", "[ADDED a@90=1 ADDED b@95=2 ERROR 410]"},
	} {
		t.Run(tc.edit, func(t *testing.T) {
			forEachSource(t, func(t *testing.T, src source) {
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Edits: []replay.Edit{mustEdit(t, tc.edit)}})
				cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
				ctx := ctxT(t)
				// A plain watch is not a streaming list: it is not counted.
				// It starts at the last recorded change, so it has nothing
				// to send: one from 100 could send c's ADDED before it is
				// stopped, moving the recording on for the lists after it.
				plain, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "104"})
				if err != nil {
					t.Fatal(err)
				}
				plain.Stop()
				yes := true
				streaming := metav1.ListOptions{SendInitialEvents: &yes, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true}
				w, err := cms.Watch(ctx, streaming)
				if err != nil {
					t.Fatal(err)
				}
				defer w.Stop()
				got := untilEnd(w)
				if fmt.Sprint(got) != tc.want {
					t.Errorf("the streaming list saw %v, want %s", got, tc.want)
				}
				// The second streaming list is whole: its bookmark comes.
				w2, err := cms.Watch(ctx, streaming)
				if err != nil {
					t.Fatal(err)
				}
				defer w2.Stop()
				if got := recv(t, w2, 3); fmt.Sprint(got) != "[ADDED a@90=1 ADDED b@95=2 BOOKMARK @100=]" {
					t.Errorf("the second streaming list saw %v", got)
				}
			})
		})
	}
}

// untilEnd returns what w sends until it ends: each event summarized, an
// ERROR as its type and code.
func untilEnd(w watch.Interface) []string {
	var got []string
	for ev := range w.ResultChan() {
		if st, ok := ev.Object.(*metav1.Status); ok {
			got = append(got, fmt.Sprintf("%s %d", ev.Type, st.Code))
			continue
		}
		got = append(got, summarize(ev).String())
	}
	return got
}
