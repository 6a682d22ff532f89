package watcher_test

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/watcher"
	"github.com/kwrec/kwrec/watcher/internal/fakeapi"
)

// Shorthands for scripts.
var (
	cm       = fakeapi.ConfigMap
	list     = fakeapi.List
	added    = fakeapi.Added
	modified = fakeapi.Modified
	deleted  = fakeapi.Deleted
)

func listReply(body string) fakeapi.Reply { return fakeapi.Reply{Body: body} }

func watchReply(events ...string) fakeapi.Reply { return fakeapi.Reply{Watch: true, Events: events} }

func heldWatch(events ...string) fakeapi.Reply {
	return fakeapi.Reply{Watch: true, Events: events, Hold: true}
}

// The query parameters the watcher sets; others (the typed client's
// timeout, say) differ between clients and are left out of comparisons.
var watchedParams = []string{"watch", "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "allowWatchBookmarks", "limit", "continue", "labelSelector", "fieldSelector", "timeoutSeconds"}

const (
	firstPage = "limit=500"
	streaming = "allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeoutSeconds=290&watch=true"
)

func watchFrom(rv string) string {
	return "allowWatchBookmarks=true&resourceVersion=" + rv + "&timeoutSeconds=290&watch=true"
}

type scenario struct {
	name   string
	cfg    watcher.Config
	script []fakeapi.Reply
	// want is the events taken, as described by describe; the test stops
	// consuming after len(want).
	want []string
	// wantQueries are the requests' query strings, restricted to
	// watchedParams; nil skips the check.
	wantQueries []string
	// wantErrs are the Error events' errors, exactly, in order.
	wantErrs []string
	// wantWaits are the backoff delays, with jitter off.
	wantWaits []time.Duration
}

var scenarios = []scenario{
	{
		name: "a paged list fills the initial view and the watch from its resourceVersion applies changes",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "8"), cm("b", "9"))),
			heldWatch(modified(cm("a", "11")), deleted(cm("b", "12"))),
		},
		want:        []string{"Init", "InitApply default/a@8", "InitApply default/b@9", "InitDone", "Apply default/a@11", "Delete default/b@12"},
		wantQueries: []string{firstPage, watchFrom("10")},
	},
	{
		name: "page size 1 takes three list requests joined by continue tokens",
		cfg:  watcher.Config{PageSize: 1},
		script: []fakeapi.Reply{
			listReply(list("10", "c1", cm("a", "7"))),
			listReply(list("10", "c2", cm("b", "8"))),
			listReply(list("10", "", cm("c", "9"))),
			heldWatch(added(cm("d", "11"))),
		},
		want:        []string{"Init", "InitApply default/a@7", "InitApply default/b@8", "InitApply default/c@9", "InitDone", "Apply default/d@11"},
		wantQueries: []string{"limit=1", "continue=c1&limit=1", "continue=c2&limit=1", watchFrom("10")},
	},
	{
		name: "an expired continue token restarts the paged list from Init",
		cfg:  watcher.Config{PageSize: 1},
		script: []fakeapi.Reply{
			listReply(list("10", "c1", cm("a", "7"))),
			{Code: 410, Body: fakeapi.Status(410, "Expired", "The provided continue parameter is too old")},
			listReply(list("20", "c2", cm("a", "7"))),
			listReply(list("20", "", cm("b", "19"))),
		},
		want:        []string{"Init", "InitApply default/a@7", "Error(initial list failed)", "Init", "InitApply default/a@7", "InitApply default/b@19", "InitDone"},
		wantQueries: []string{"limit=1", "continue=c1&limit=1", "limit=1", "continue=c2&limit=1"},
		wantErrs:    []string{"initial list failed: The provided continue parameter is too old"},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "a streaming list ends its initial events at the initial-events-end bookmark and streams on",
		cfg:  watcher.Config{InitialList: watcher.StreamingList},
		script: []fakeapi.Reply{
			heldWatch(added(cm("a", "8")), added(cm("b", "9")), fakeapi.Bookmark("10"), fakeapi.InitialEventsEnd("12"), modified(cm("a", "13"))),
		},
		want:        []string{"Init", "InitApply default/a@8", "InitApply default/b@9", "InitDone", "Apply default/a@13"},
		wantQueries: []string{streaming},
	},
	{
		name: "a streaming list that ends before initial-events-end is a failure and starts over",
		cfg:  watcher.Config{InitialList: watcher.StreamingList},
		script: []fakeapi.Reply{
			watchReply(added(cm("a", "8"))),
			heldWatch(added(cm("a", "8")), fakeapi.InitialEventsEnd("10")),
		},
		want:        []string{"Init", "InitApply default/a@8", "Error(watch failed)", "Init", "InitApply default/a@8", "InitDone"},
		wantQueries: []string{streaming, streaming},
		wantErrs:    []string{"watch failed: the streaming list ended before the initial-events-end bookmark"},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "an error event mid-watch is reported and the next element follows with nothing lost or duplicated",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			watchReply(added(cm("b", "11")), fakeapi.ErrorEvent(500, "InternalError", "etcd hiccup")),
			heldWatch(added(cm("c", "12"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Apply default/b@11", "Error(watch error InternalError)", "Apply default/c@12"},
		wantQueries: []string{firstPage, watchFrom("10"), watchFrom("11")},
		wantErrs:    []string{"watch error: InternalError (500): etcd hiccup"},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "streaming_list_resync: a watch that fails to decode re-lists from scratch",
		cfg:  watcher.Config{InitialList: watcher.StreamingList},
		script: []fakeapi.Reply{
			watchReply(added(cm("a", "8")), added(cm("b", "9")), fakeapi.InitialEventsEnd("10"), modified(cm("a", "11")), `{"type":"ADDED","object":{not json`),
			heldWatch(added(cm("a", "11")), added(cm("b", "9")), fakeapi.InitialEventsEnd("12")),
		},
		want:        []string{"Init", "InitApply default/a@8", "InitApply default/b@9", "InitDone", "Apply default/a@11", "Error(watch failed)", "Init", "InitApply default/a@11", "InitApply default/b@9", "InitDone"},
		wantQueries: []string{streaming, streaming},
		wantErrs:    []string{`watch failed: an error on the server ("unable to decode an event from the watch stream: invalid character 'n' looking for beginning of object key string") has prevented the request from succeeding`},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "410 Expired mid-watch re-lists",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			watchReply(modified(cm("a", "11")), fakeapi.ErrorEvent(410, "Expired", "too old resource version: 11 (20)")),
			listReply(list("20", "", cm("a", "11"), cm("b", "19"))),
			heldWatch(added(cm("c", "21"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Apply default/a@11", "Error(watch error Expired)", "Init", "InitApply default/a@11", "InitApply default/b@19", "InitDone", "Apply default/c@21"},
		wantQueries: []string{firstPage, watchFrom("10"), firstPage, watchFrom("20")},
		wantErrs:    []string{"watch error: Expired (410): too old resource version: 11 (20)"},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "a bookmark's resourceVersion is the one used to re-watch after a plain stream end",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			watchReply(modified(cm("a", "11")), fakeapi.Bookmark("15")),
			heldWatch(added(cm("b", "16"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Apply default/a@11", "Apply default/b@16"},
		wantQueries: []string{firstPage, watchFrom("10"), watchFrom("15")},
	},
	{
		name: "a watch that closes at once with no events is a failure that backs off before re-watching",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			watchReply(),
			heldWatch(added(cm("b", "11"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Error(watch failed)", "Apply default/b@11"},
		wantQueries: []string{firstPage, watchFrom("10"), watchFrom("10")},
		wantErrs:    []string{`watch failed: very short watch from resourceVersion "10": the stream closed at once with no events`},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "a refused watch is retried from the same resourceVersion",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			{Watch: true, Code: 500, Body: fakeapi.Status(500, "InternalError", "try again")},
			heldWatch(added(cm("b", "11"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Error(watch start failed)", "Apply default/b@11"},
		wantQueries: []string{firstPage, watchFrom("10"), watchFrom("10")},
		wantErrs:    []string{"watch start failed: try again"},
		wantWaits:   []time.Duration{800 * time.Millisecond},
	},
	{
		name: "an exhausted script ends in errors with growing backoff, never a hang",
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			watchReply(added(cm("b", "11"))),
		},
		want:        []string{"Init", "InitApply default/a@9", "InitDone", "Apply default/b@11", "Error(watch start failed)", "Error(watch start failed)", "Error(watch start failed)"},
		wantQueries: []string{firstPage, watchFrom("10"), watchFrom("11"), watchFrom("11"), watchFrom("11")},
		wantErrs: []string{
			"watch start failed: fakeapi: script exhausted after 2 replies",
			"watch start failed: fakeapi: script exhausted after 3 replies",
			"watch start failed: fakeapi: script exhausted after 4 replies",
		},
		// The third error is the last event taken: no wait follows it.
		wantWaits: []time.Duration{800 * time.Millisecond, 1600 * time.Millisecond},
	},
	{
		name: "selectors, page size, bookmarks off and the watch timeout reach the requests",
		cfg:  watcher.Config{LabelSelector: "app=x", FieldSelector: "metadata.name=a", PageSize: 2, DisableBookmarks: true, WatchTimeout: time.Minute},
		script: []fakeapi.Reply{
			listReply(list("10", "", cm("a", "9"))),
			heldWatch(modified(cm("a", "11"))),
		},
		want: []string{"Init", "InitApply default/a@9", "InitDone", "Apply default/a@11"},
		wantQueries: []string{
			"fieldSelector=metadata.name%3Da&labelSelector=app%3Dx&limit=2",
			"fieldSelector=metadata.name%3Da&labelSelector=app%3Dx&resourceVersion=10&timeoutSeconds=60&watch=true",
		},
	},
}

func TestWatcherScenarios(t *testing.T) {
	for _, tc := range scenarios {
		t.Run("typed/"+tc.name, func(t *testing.T) {
			srv, cfg, clk := setup(t, tc)
			cs, err := kubernetes.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			got, errs := take[*corev1.ConfigMap](t, watcher.FromTyped(cs.CoreV1().ConfigMaps("default")), cfg, len(tc.want))
			check(t, tc, got, errs, srv, clk)
		})
		t.Run("dynamic/"+tc.name, func(t *testing.T) {
			srv, cfg, clk := setup(t, tc)
			dyn, err := dynamic.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			ri := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")
			got, errs := take[*unstructured.Unstructured](t, watcher.FromDynamic(ri), cfg, len(tc.want))
			check(t, tc, got, errs, srv, clk)
		})
		// client-go's own ListWatch, as informers build it, passed as it
		// is. It sets the field selector it is given on every request, so
		// it is given the scenario's.
		t.Run("cache.NewListWatchFromClient/"+tc.name, func(t *testing.T) {
			srv, cfg, clk := setup(t, tc)
			cs, err := kubernetes.NewForConfig(srv.Config())
			if err != nil {
				t.Fatal(err)
			}
			lw := cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "default", fields.ParseSelectorOrDie(cfg.FieldSelector))
			got, errs := take[*corev1.ConfigMap](t, lw, cfg, len(tc.want))
			check(t, tc, got, errs, srv, clk)
		})
	}
}

func setup(t *testing.T, tc scenario) (*fakeapi.Server, watcher.Config, *autoClock) {
	srv := fakeapi.Start(tc.script...)
	t.Cleanup(srv.Close)
	clk := &autoClock{FakeClock: testingclock.NewFakeClock(time.Unix(1e9, 0))}
	cfg := tc.cfg
	cfg.Clock = clk
	// client-go's reflector backoff without its jitter: exact waits.
	cfg.Backoff = &wait.Backoff{Duration: 800 * time.Millisecond, Cap: 30 * time.Second, Steps: 38, Factor: 2}
	return srv, cfg, clk
}

// take ranges over a new watcher's events and stops after n. It returns
// them as described by describe, and the Error events' errors.
func take[T watcher.Object](t *testing.T, lw cache.ListerWatcherWithContext, cfg watcher.Config, n int) (events, errs []string) {
	t.Helper()
	// A safety net only: a correct watcher yields n events long before.
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	for ev := range watcher.New[T](lw, cfg).Events(ctx) {
		events = append(events, describe(ev))
		if ev.Type == watcher.Error {
			errs = append(errs, ev.Err.Error())
		}
		if len(events) == n {
			break
		}
	}
	return events, errs
}

func check(t *testing.T, tc scenario, got, errs []string, srv *fakeapi.Server, clk *autoClock) {
	t.Helper()
	if diff := cmp.Diff(tc.want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(tc.wantErrs, errs); diff != "" {
		t.Errorf("errors (-want +got):\n%s", diff)
	}
	if tc.wantQueries != nil {
		var queries []string
		for _, r := range srv.Requests() {
			queries = append(queries, filter(r.Query))
		}
		if diff := cmp.Diff(tc.wantQueries, queries); diff != "" {
			t.Errorf("request queries (-want +got):\n%s", diff)
		}
	}
	if diff := cmp.Diff(tc.wantWaits, clk.Waits(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("backoff waits (-want +got):\n%s", diff)
	}
}

func filter(q url.Values) string {
	kept := url.Values{}
	for _, k := range watchedParams {
		if v, ok := q[k]; ok {
			kept[k] = v
		}
	}
	return kept.Encode()
}

// describe renders an event for comparison: errors by kind (a scenario's
// wantErrs has their exact text), objects with their resourceVersion so
// that a lost or duplicated event shows.
func describe[T watcher.Object](ev watcher.Event[T]) string {
	switch ev.Type {
	case watcher.Error:
		var we *watcher.WatchError
		if errors.As(ev.Err, &we) {
			return "Error(watch error " + string(we.Status().Reason) + ")"
		}
		for _, kind := range []error{watcher.ErrInitialListFailed, watcher.ErrWatchStartFailed, watcher.ErrWatchFailed} {
			if errors.Is(ev.Err, kind) {
				return "Error(" + kind.Error() + ")"
			}
		}
	case watcher.InitApply, watcher.Apply, watcher.Delete:
		return ev.String() + "@" + ev.Object.GetResourceVersion()
	}
	return ev.String()
}

// autoClock is a FakeClock that steps itself through every timer as soon
// as one is waiting, recording the durations: backoff in tests takes no
// real time and is deterministic.
type autoClock struct {
	*testingclock.FakeClock
	mu    sync.Mutex
	waits []time.Duration
}

func (c *autoClock) NewTimer(d time.Duration) clock.Timer {
	t := c.FakeClock.NewTimer(d)
	c.mu.Lock()
	c.waits = append(c.waits, d)
	c.mu.Unlock()
	if c.HasWaiters() {
		c.Step(d)
	}
	return t
}

func (c *autoClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

var _ clock.WithTicker = (*autoClock)(nil)

func TestErrorsKeepTheirKindAndTheServersStatus(t *testing.T) {
	srv := fakeapi.Start(
		fakeapi.Reply{Code: 410, Body: fakeapi.Status(410, "Expired", "The provided continue parameter is too old")},
		listReply(list("10", "", cm("a", "9"))),
		watchReply(fakeapi.ErrorEvent(410, "Expired", "too old resource version: 10 (20)")),
	)
	t.Cleanup(srv.Close)
	cs, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		t.Fatal(err)
	}
	clk := &autoClock{FakeClock: testingclock.NewFakeClock(time.Unix(1e9, 0))}
	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(cs.CoreV1().ConfigMaps("default")), watcher.Config{Clock: clk})
	var errs []error
	for ev := range w.Events(t.Context()) {
		if ev.Type == watcher.Error {
			errs = append(errs, ev.Err)
			if len(errs) == 2 {
				break
			}
		}
	}

	list, watchErr := errs[0], errs[1]
	if !errors.Is(list, watcher.ErrInitialListFailed) || !apierrors.IsResourceExpired(list) {
		t.Errorf("list error %v: want ErrInitialListFailed wrapping the 410", list)
	}
	var we *watcher.WatchError
	if !errors.Is(watchErr, watcher.ErrWatchError) || !errors.As(watchErr, &we) || !apierrors.IsResourceExpired(watchErr) {
		t.Fatalf("watch error %v: want a *WatchError matching ErrWatchError and IsResourceExpired", watchErr)
	}
	want := metav1.Status{Status: "Failure", Reason: "Expired", Code: 410, Message: "too old resource version: 10 (20)"}
	if diff := cmp.Diff(want, we.Status(), cmpopts.IgnoreFields(metav1.Status{}, "TypeMeta")); diff != "" {
		t.Errorf("Status (-want +got):\n%s", diff)
	}
	if got, want := (watcher.Event[*corev1.ConfigMap]{Type: watcher.Error, Err: watchErr}).String(), "Error(watch error: Expired (410): too old resource version: 10 (20))"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

// failingLists is a hand-built cache.ListWatch, as informer-style code
// writes one, that answers its first n lists with 503 and records when
// each list came, on the bubble's clock.
func failingLists(n int, start time.Time, at *[]time.Duration) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			*at = append(*at, time.Since(start))
			if len(*at) <= n {
				return nil, apierrors.NewServiceUnavailable("etcd is down")
			}
			return &corev1.ConfigMapList{
				ListMeta: metav1.ListMeta{ResourceVersion: "10"},
				Items:    []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "a", ResourceVersion: "9"}}},
			}, nil
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return watch.NewEmptyWatch(), nil
		},
	}
}

// In a synctest bubble the default clock, the real one, is the bubble's:
// the backoff between errors takes exactly its delays, in no real time.
func TestTheBackoffBetweenErrorsTakesItsDelaysOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var lists []time.Duration
		cfg := watcher.Config{Backoff: &wait.Backoff{Duration: 800 * time.Millisecond, Cap: 30 * time.Second, Steps: 38, Factor: 2}}
		var got, errs []string
		for ev := range watcher.New[*corev1.ConfigMap](failingLists(2, start, &lists), cfg).Events(t.Context()) {
			got = append(got, describe(ev))
			if ev.Type == watcher.Error {
				errs = append(errs, ev.Err.Error())
			}
			if ev.Type == watcher.InitDone {
				break
			}
		}
		want := []string{"Init", "Error(initial list failed)", "Init", "Error(initial list failed)", "Init", "InitApply default/a@9", "InitDone"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		wantErrs := []string{"initial list failed: etcd is down", "initial list failed: etcd is down"}
		if diff := cmp.Diff(wantErrs, errs); diff != "" {
			t.Errorf("errors (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]time.Duration{0, 800 * time.Millisecond, 2400 * time.Millisecond}, lists); diff != "" {
			t.Errorf("lists at (-want +got):\n%s", diff)
		}
	})
}

func TestAContextDoneDuringTheBackoffEndsTheSequenceThen(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var lists []time.Duration
		ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
		defer cancel()
		var got []string
		for ev := range watcher.New[*corev1.ConfigMap](failingLists(1, start, &lists), watcher.Config{}).Events(ctx) {
			got = append(got, describe(ev))
		}
		if diff := cmp.Diff([]string{"Init", "Error(initial list failed)"}, got); diff != "" {
			t.Errorf("events (-want +got):\n%s", diff)
		}
		if d := time.Since(start); d != 500*time.Millisecond {
			t.Errorf("the sequence ended after %v, want 500ms (the context's deadline, inside the backoff)", d)
		}
	})
}
