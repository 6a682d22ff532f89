package e2e_test

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// failure is one way a replay is made to fail a client, with what the
// client must meet.
type failure struct {
	name string
	// edit is given to replay (--edit or replay.ParseEdit); "" for none.
	edit string
	// expired replays the cassette with the hand-written 410 ERROR frame.
	expired bool
	// want410 is how many 410 Expired watch ERROR events the client meets.
	want410 int
	// want503 is how many 503 responses the client meets.
	want503 int
}

// failures returns the variants every client is run under. verb is the
// Kubernetes verb of the client's first request for the collection (list,
// or watch for a WatchList informer), which the 503 hits.
func failures(rec *recording, verb string) []failure {
	return []failure{
		{name: "with no edit"},
		{name: "with a 410 injected after the first watch event", edit: fmt.Sprintf("watch-error:request=%d,after=1,code=410", rec.WatchID), want410: 1},
		{name: "with a 410 hand-written into the cassette after the first watch event", expired: true, want410: 1},
		{name: "with a 503 on the first " + verb, edit: "error:resource=configmaps,verb=" + verb + ",nth=1,status=503", want503: 1},
	}
}

func (f failure) cassette(rec *recording) string {
	if f.expired {
		return rec.Expired
	}
	return rec.Cassette
}

func (f failure) edits() []string {
	if f.edit == "" {
		return nil
	}
	return []string{f.edit}
}

func (f failure) serveArgs() []string {
	if f.edit == "" {
		return nil
	}
	return []string{"--edit", f.edit}
}

// TestLiveInformerRecoversToTheRecordedStore runs a client-go
// SharedInformer (typed clientset) over each recording, with WatchList on
// and off, in process and through kwrec serve, under each failure: it must
// meet the failure exactly once, notify every recorded change exactly once
// and end with exactly the recorded final objects.
func TestLiveInformerRecoversToTheRecordedStore(t *testing.T) {
	fx := fixture(t)
	for _, rc := range []struct {
		name       string
		rec        *recording
		watchLists []bool
	}{
		{"JSON recording", fx.json, []bool{true, false}},
		{"protobuf recording", fx.proto, []bool{false, true}},
	} {
		for _, watchList := range rc.watchLists {
			verb, wl := "list", "WatchList off"
			if watchList {
				verb, wl = "watch", "WatchList on"
			}
			for _, via := range []string{"in process", "through kwrec serve"} {
				for _, f := range failures(rc.rec, verb) {
					t.Run(strings.Join([]string{rc.name, wl, via, f.name}, "/"), func(t *testing.T) {
						clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
						var cfg *rest.Config
						if via == "in process" {
							cfg = openReplay(t, f.cassette(rc.rec), f.edits()...).Config()
						} else {
							cfg = serve(t, fx, f.cassette(rc.rec), f.serveArgs()...).Config(t)
						}
						checkInformer(t, cfg, rc.rec, f, rc.rec == fx.proto)
					})
				}
			}
		}
	}
}

// checkInformer runs an informer on cfg and checks it against rec under f;
// with protobuf it also checks that every list and watch was answered in
// protobuf, re-lists included.
func checkInformer(t *testing.T, cfg *rest.Config, rec *recording, f failure, protobuf bool) {
	t.Helper()
	var w wire
	w.wrap(cfg)
	inf := startInformer(t, cfg, rec.Namespace)
	want := wantNotifications(rec)
	if !inf.waitFor(rec.Final, len(want), 8*time.Second) {
		t.Errorf("the informer did not reach the recorded final store in 8s\nstore: %v\nwant:  %v\nnotifications: %v\nrequests:\n%s", inf.store(), rec.Final, inf.notifications(), &w)
		return
	}
	// Anything still to come (a late error, a repeated event) has time to
	// show.
	time.Sleep(300 * time.Millisecond)
	if d := cmp.Diff(rec.Final, inf.store()); d != "" {
		t.Errorf("final store (-recorded +replayed):\n%s", d)
	}
	if d := cmp.Diff(want, initialSorted(inf.notifications(), len(rec.Initial))); d != "" {
		t.Errorf("handler notifications (-recorded +replayed):\n%s", d)
	}
	if got := w.expiredEvents(); got != f.want410 {
		t.Errorf("the informer met %d 410 Expired watch events, want %d; requests:\n%s", got, f.want410, &w)
	}
	if got := w.count(503); got != f.want503 {
		t.Errorf("the informer met %d 503 responses, want %d; requests:\n%s", got, f.want503, &w)
	}
	checkAnswered(t, &w, f.want503)
	if protobuf {
		checkProtobuf(t, &w, f.want410 > 0)
	}
}

// checkAnswered checks that every request got a 2xx response, but the
// want503 injected 503s: a real API server answers every list and watch an
// informer sends, so a client that only recovers through its own fallbacks
// (WatchList to list+watch) is not served.
func checkAnswered(t *testing.T, w *wire, want503 int) {
	t.Helper()
	for _, x := range w.log() {
		if x.Err != "" || (x.Status/100 != 2 && !(x.Status == 503 && want503 > 0)) {
			t.Errorf("a request not answered: %s", x)
		}
	}
}

// checkProtobuf checks that every ConfigMap list and watch the informer
// sent was answered in protobuf, and after a 410 that it re-listed (a list,
// or a streaming list) in protobuf.
func checkProtobuf(t *testing.T, w *wire, relist bool) {
	t.Helper()
	lists := 0
	for _, x := range w.log() {
		if !strings.Contains(x.URL, "/configmaps") || x.Status != 200 {
			continue
		}
		want := "application/vnd.kubernetes.protobuf"
		if strings.Contains(x.URL, "watch=") {
			want += ";stream=watch"
		}
		if !strings.Contains(x.URL, "watch=") || strings.Contains(x.URL, "sendInitialEvents=true") {
			lists++
		}
		if x.ContentType != want {
			t.Errorf("%s: Content-Type %q, want %q", x, x.ContentType, want)
		}
	}
	if relist && lists < 2 {
		t.Errorf("%d protobuf lists after a 410, want the first and a re-list; requests:\n%s", lists, w)
	}
}

// wantNotifications is what an informer's handler must see for rec: an add
// for each listed object, then one notification per recorded event
// (updates that keep the resourceVersion, resyncs, left out).
func wantNotifications(rec *recording) []string {
	var want []string
	for _, name := range sortedKeys(rec.Initial) {
		want = append(want, "add "+name+"@"+rec.Initial[name])
	}
	verbs := map[string]string{"ADDED": "add", "MODIFIED": "update", "DELETED": "delete"}
	for _, e := range rec.Events {
		want = append(want, verbs[e.Type]+" "+e.Name+"@"+e.RV)
	}
	return want
}

// initialSorted sorts the first n notifications: an informer's initial adds
// come in no set order.
func initialSorted(log []string, n int) []string {
	n = min(n, len(log))
	out := append([]string(nil), log...)
	sort.Strings(out[:n])
	return out
}

// informerRun is a running ConfigMap informer and what its handler saw.
type informerRun struct {
	inf     cache.SharedIndexInformer
	changed chan struct{}
	mu      sync.Mutex
	log     []string
}

// startInformer starts a typed ConfigMap informer in ns on cfg, stopped in
// t.Cleanup.
func startInformer(t *testing.T, cfg *rest.Config, ns string) *informerRun {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	run := &informerRun{inf: f.Core().V1().ConfigMaps().Informer(), changed: make(chan struct{}, 1)}
	note := func(verb string, obj any) {
		name, rv := "?", "?"
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			name, obj = d.Key+" (final state unknown)", d.Obj
		}
		if cm, ok := obj.(*corev1.ConfigMap); ok {
			name, rv = cm.Name, cm.ResourceVersion
		}
		run.mu.Lock()
		run.log = append(run.log, verb+" "+name+"@"+rv)
		run.mu.Unlock()
		select {
		case run.changed <- struct{}{}:
		default:
		}
	}
	if _, err := run.inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { note("add", obj) },
		UpdateFunc: func(old, obj any) {
			// An update that keeps the resourceVersion is what client-go
			// calls a resync: a re-list notifies one for every object it
			// already held, against a real API server too. Not a change.
			if old.(*corev1.ConfigMap).ResourceVersion != obj.(*corev1.ConfigMap).ResourceVersion {
				note("update", obj)
			}
		},
		DeleteFunc: func(obj any) { note("delete", obj) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	return run
}

func (r *informerRun) notifications() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// store returns the informer's store: name -> resourceVersion.
func (r *informerRun) store() map[string]string {
	m := map[string]string{}
	for _, obj := range r.inf.GetStore().List() {
		cm := obj.(*corev1.ConfigMap)
		m[cm.Name] = cm.ResourceVersion
	}
	return m
}

// waitFor waits until the store equals final and the handler has seen at
// least n notifications, or the store equals final and nothing changed for
// a second; it returns false if neither happens within timeout.
func (r *informerRun) waitFor(final map[string]string, n int, timeout time.Duration) bool {
	deadline := time.After(timeout)
	quiet := time.Now()
	for {
		if cmp.Equal(final, r.store()) && (len(r.notifications()) >= n || time.Since(quiet) > time.Second) {
			return true
		}
		select {
		case <-r.changed:
			quiet = time.Now()
		case <-time.After(50 * time.Millisecond): // the store changes before the handler runs
		case <-deadline:
			return false
		}
	}
}
