package replay_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/rest"
)

// The recorded events of testdata/configmaps.kwrec and its final store.
var (
	recordedEvents = []got{
		{"ADDED", "c", "101", "3"},
		{"MODIFIED", "a", "102", "1b"},
		{"DELETED", "b", "103", "2"},
		{"ADDED", "d", "104", "4"},
	}
	recordedFinal = map[string]string{"a": "102=1b", "c": "101=3", "d": "104=4"}
)

func TestTypedWatchReplaysRecordedEvents(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		cs := clientset(t, r.Config())
		wantRecordedEvents(t, cs.CoreV1().ConfigMaps("default").Watch)
		waitDone(t, r)
	})
}

func TestDynamicWatchReplaysRecordedEvents(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Strict: true})
		dc, err := dynamic.NewForConfig(r.Config())
		if err != nil {
			t.Fatal(err)
		}
		gvr := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
		list, err := dc.Resource(gvr).Namespace("default").List(ctxT(t), metav1.ListOptions{Limit: 500, ResourceVersion: "0"})
		if err != nil {
			t.Fatal(err)
		}
		if list.GetResourceVersion() != "100" || len(list.Items) != 2 {
			t.Fatalf("list at %s with %d items, want the recorded 100 with 2", list.GetResourceVersion(), len(list.Items))
		}
		wantRecordedEvents(t, dc.Resource(gvr).Namespace("default").Watch)
		waitDone(t, r)
	})
}

// runInformer starts a ConfigMap informer on cfg and returns it with its
// change notifications and event log.
func runInformer(t *testing.T, cfg *rest.Config) (inf informerT, changed <-chan struct{}, log func() []string) {
	t.Helper()
	f := informers.NewSharedInformerFactoryWithOptions(clientset(t, cfg), 0, informers.WithNamespace("default"))
	i := f.Core().V1().ConfigMaps().Informer()
	h, ch, l := notifier()
	if _, err := i.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	return i, ch, l
}

// informerEvents are what an informer's handler sees of configmaps.kwrec,
// the initial list's two in name order.
var informerEvents = []string{"add a@90", "add b@95", "add c@101", "update a@102", "delete b@103", "add d@104"}

// informerToRecordedFinal runs a ConfigMap informer on r with every
// request logged, waits until r is consumed and the store holds
// recordedFinal, and returns the log and the handler's events, the
// initial list's sorted.
func informerToRecordedFinal(t *testing.T, r *replay.Replayer) (*requestLog, []string) {
	t.Helper()
	rl := &requestLog{next: r}
	cfg := r.Config()
	cfg.Transport = rl
	inf, changed, log := runInformer(t, cfg)
	waitDone(t, r)
	waitStore(t, inf, changed, recordedFinal)
	return rl, initialSorted(waitLog(t, changed, log, len(informerEvents)), 2)
}

func TestInformerReplaysToRecordedFinalStore(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name      string
			cassette  string
			watchList bool
			strict    bool // exact recorded requests only
			wantReq   string
		}{
			{"a list+watch recording with WatchList off replays the recorded list and watch", "configmaps.kwrec", false, true, "limit=500&resourceVersion=0"},
			{"a list+watch recording with WatchList on answers the streaming list from state", "configmaps.kwrec", true, false, "sendInitialEvents=true"},
			{"a streaming-list recording with WatchList on replays the recorded stream", "watchlist.kwrec", true, true, "sendInitialEvents=true"},
			{"a streaming-list recording with WatchList off answers list and watch from state", "watchlist.kwrec", false, false, "limit=500&resourceVersion=0"},
		} {
			t.Run(tc.name, func(t *testing.T) {
				clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, tc.watchList)
				r := src.replayer(t, fixture(t, tc.cassette), replay.Options{Strict: tc.strict})
				rl, events := informerToRecordedFinal(t, r)
				if !rl.contains(tc.wantReq) {
					t.Errorf("no request with %s; requests:\n%s", tc.wantReq, rl)
				}
				if d := cmp.Diff(informerEvents, events); d != "" {
					t.Errorf("handler events (-want +got):\n%s", d)
				}
			})
		}
	})
}
