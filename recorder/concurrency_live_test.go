package recorder_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/recorder"
)

// informerSeen is what one informer's handlers saw: the last resourceVersion
// of each ConfigMap name.
type informerSeen struct {
	mu   sync.Mutex
	last map[string]string
}

func (s *informerSeen) saw(obj any) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return
	}
	s.mu.Lock()
	s.last[cm.Name] = cm.ResourceVersion
	s.mu.Unlock()
}

func (s *informerSeen) has(want map[string]string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	for name, rv := range want {
		if s.last[name] != rv {
			return false
		}
	}
	return true
}

func rvNumber(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", rv, err)
	}
	return n
}

func TestLiveTwentyInformersRecordThroughOneRecorder(t *testing.T) {
	const (
		nInformers = 20
		before     = 2 // ConfigMaps per namespace before the informers start
		after      = 3 // created while they run, then each updated once
	)
	cp := controlplanetest.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()

	// Writes go through an unrecorded client; every read through the one
	// recorder.
	admin := kubernetes.NewForConfigOrDie(cp.Config)
	ns := func(i int) string { return fmt.Sprintf("inf-%02d", i) }
	// want[i] is the final resourceVersion of each ConfigMap of namespace i.
	want := make([]map[string]string, nInformers)
	var wantMu sync.Mutex
	put := func(i int, cm *corev1.ConfigMap) {
		wantMu.Lock()
		want[i][cm.Name] = cm.ResourceVersion
		wantMu.Unlock()
	}
	for i := range nInformers {
		want[i] = map[string]string{}
		if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns(i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for j := range before {
			cm, err := admin.CoreV1().ConfigMaps(ns(i)).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("before-%d", j)}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			put(i, cm)
		}
	}

	s := newSession(t, recorder.Options{})
	cfg := jsonConfig(cp.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	s.rec.WrapConfig(cfg)
	cs := kubernetes.NewForConfigOrDie(cfg)

	infCtx, stopInformers := context.WithCancel(ctx)
	defer stopInformers()
	seen := make([]*informerSeen, nInformers)
	factories := make([]informers.SharedInformerFactory, nInformers)
	synced := make([]cache.InformerSynced, nInformers)
	for i := range nInformers {
		seen[i] = &informerSeen{last: map[string]string{}}
		factories[i] = informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns(i)))
		inf := factories[i].Core().V1().ConfigMaps().Informer()
		if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    seen[i].saw,
			UpdateFunc: func(_, obj any) { seen[i].saw(obj) },
		}); err != nil {
			t.Fatal(err)
		}
		synced[i] = inf.HasSynced
	}
	for _, f := range factories {
		f.Start(infCtx.Done())
	}
	for i, ok := range synced {
		if !cache.WaitForCacheSync(ctx.Done(), ok) {
			t.Fatalf("informer %d (namespace %s) did not sync: %v", i, ns(i), ctx.Err())
		}
	}

	// Change objects in every namespace at once while the informers watch.
	var wg sync.WaitGroup
	errs := make(chan error, nInformers)
	for i := range nInformers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cms := admin.CoreV1().ConfigMaps(ns(i))
			for j := range after {
				cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("after-%d", j)}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
				if err != nil {
					errs <- err
					return
				}
				put(i, cm)
				cm.Data["k"] = "v2"
				if cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					errs <- err
					return
				}
				put(i, cm)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Every informer sees every object at its final resourceVersion.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for i := range nInformers {
		for !seen[i].has(want[i]) {
			select {
			case <-ctx.Done():
				seen[i].mu.Lock()
				t.Fatalf("informer %d (namespace %s) saw %v, want %v", i, ns(i), seen[i].last, want[i])
			case <-tick.C:
			}
		}
	}
	stopInformers()
	for _, f := range factories {
		f.Shutdown()
	}
	c := s.finish()

	// The cassette holds each informer's streams: its lists and watches,
	// each watch's events in resourceVersion order at non-decreasing
	// offsets, and between them every object at its final version.
	for i := range nInformers {
		path := "/api/v1/namespaces/" + ns(i) + "/configmaps"
		recorded := map[string]string{} // name → highest resourceVersion recorded
		note := func(name, rv string) {
			if old, ok := recorded[name]; !ok || rvNumber(t, rv) > rvNumber(t, old) {
				recorded[name] = rv
			}
		}
		lists, watches := 0, 0
		for _, in := range c.Interactions {
			u, err := url.Parse(in.Request.URL)
			if err != nil {
				t.Fatal(err)
			}
			if u.Path != path {
				continue
			}
			if in.End == nil || in.Response == nil || in.Response.Status != 200 {
				t.Errorf("%s interaction %d: response %+v, end %+v; want a 200 with an end", ns(i), in.ID, in.Response, in.End)
				continue
			}
			checkOffsets(t, in)
			if u.Query().Get("watch") != "true" {
				lists++
				var list corev1.ConfigMapList
				if err := json.Unmarshal(in.Body(), &list); err != nil {
					t.Fatalf("%s list %d: %v", ns(i), in.ID, err)
				}
				for _, item := range list.Items {
					note(item.Name, item.ResourceVersion)
				}
				continue
			}
			watches++
			// A streaming list (sendInitialEvents, client-go's WatchList)
			// first sends the current objects as ADDED in key order, up to
			// a bookmark annotated k8s.io/initial-events-end at the list's
			// resourceVersion; only the events after it are ordered.
			initial := u.Query().Get("sendInitialEvents") == "true"
			var prev, initialMax int64
			if rv := u.Query().Get("resourceVersion"); rv != "" {
				prev = rvNumber(t, rv)
			}
			for k, ev := range jsonEvents(t, in) {
				rv := rvNumber(t, ev.Object.Metadata.ResourceVersion)
				switch {
				case ev.Type == "BOOKMARK":
					if initial && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
						if rv < initialMax {
							t.Errorf("%s watch %d: initial-events-end bookmark at %d before an initial event at %d", ns(i), in.ID, rv, initialMax)
						}
						initial = false
					} else if rv < prev {
						t.Errorf("%s watch %d event %d: bookmark at %d after %d", ns(i), in.ID, k, rv, prev)
					}
					prev = max(prev, rv)
					continue
				case initial:
					if ev.Type != "ADDED" {
						t.Errorf("%s watch %d event %d: initial event of type %s, want ADDED", ns(i), in.ID, k, ev.Type)
					}
					initialMax = max(initialMax, rv)
				case rv <= prev:
					t.Errorf("%s watch %d event %d: %s %s at resourceVersion %d, not after %d", ns(i), in.ID, k, ev.Type, ev.Object.Metadata.Name, rv, prev)
				}
				if !initial {
					prev = rv
				}
				note(ev.Object.Metadata.Name, ev.Object.Metadata.ResourceVersion)
			}
		}
		if watches == 0 {
			t.Errorf("%s: %d list(s) and no watch recorded", ns(i), lists)
		}
		for name, rv := range want[i] {
			if recorded[name] != rv {
				t.Errorf("%s: ConfigMap %s recorded up to resourceVersion %q, want %q (events lost)", ns(i), name, recorded[name], rv)
			}
		}
	}
	if t.Failed() {
		return
	}
	events := 0
	for _, in := range c.Interactions {
		events += len(in.Frames)
	}
	t.Logf("%d interactions, %d frames recorded by one recorder for %d informers", len(c.Interactions), events, nInformers)
}
