package watcher_test

import (
	"errors"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/watcher"
)

type ev = watcher.Event[*corev1.ConfigMap]

func obj(name, rv string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, ResourceVersion: rv}}
}

func view(s *watcher.Store[*corev1.ConfigMap]) []string {
	var keys []string
	for _, o := range s.List() {
		keys = append(keys, watcher.Key(o)+"@"+o.ResourceVersion)
	}
	return keys
}

func TestStoreShowsEachViewWhole(t *testing.T) {
	// Each step is one event and the view readers see right after it.
	type step struct {
		ev   ev
		want []string
	}
	tests := []struct {
		name  string
		steps []step
	}{
		{
			name: "the first view appears at InitDone, not before",
			steps: []step{
				{ev{Type: watcher.Init}, nil},
				{ev{Type: watcher.InitApply, Object: obj("b", "2")}, nil},
				{ev{Type: watcher.InitApply, Object: obj("a", "1")}, nil},
				{ev{Type: watcher.InitDone}, []string{"default/a@1", "default/b@2"}},
				{ev{Type: watcher.Apply, Object: obj("c", "3")}, []string{"default/a@1", "default/b@2", "default/c@3"}},
				{ev{Type: watcher.Delete, Object: obj("a", "4")}, []string{"default/b@2", "default/c@3"}},
			},
		},
		{
			name: "a re-list keeps the old view until InitDone, then drops what is gone",
			steps: []step{
				{ev{Type: watcher.Init}, nil},
				{ev{Type: watcher.InitApply, Object: obj("a", "1")}, nil},
				{ev{Type: watcher.InitApply, Object: obj("b", "2")}, nil},
				{ev{Type: watcher.InitDone}, []string{"default/a@1", "default/b@2"}},
				{ev{Type: watcher.Error, Err: watcher.ErrWatchFailed}, []string{"default/a@1", "default/b@2"}},
				{ev{Type: watcher.Init}, []string{"default/a@1", "default/b@2"}},
				{ev{Type: watcher.InitApply, Object: obj("a", "5")}, []string{"default/a@1", "default/b@2"}},
				{ev{Type: watcher.InitDone}, []string{"default/a@5"}},
			},
		},
		{
			name: "an Init that never completes is discarded by the next Init",
			steps: []step{
				{ev{Type: watcher.Init}, nil},
				{ev{Type: watcher.InitApply, Object: obj("a", "1")}, nil},
				{ev{Type: watcher.Error, Err: errors.New("initial list failed")}, nil},
				{ev{Type: watcher.Init}, nil},
				{ev{Type: watcher.InitApply, Object: obj("b", "2")}, nil},
				{ev{Type: watcher.InitDone}, []string{"default/b@2"}},
			},
		},
		{
			name: "an empty initial view empties the store",
			steps: []step{
				{ev{Type: watcher.Apply, Object: obj("a", "1")}, []string{"default/a@1"}},
				{ev{Type: watcher.Init}, []string{"default/a@1"}},
				{ev{Type: watcher.InitDone}, nil},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s watcher.Store[*corev1.ConfigMap]
			for i, st := range tc.steps {
				s.Apply(st.ev)
				if diff := cmp.Diff(st.want, view(&s), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("after event %d (%v), view (-want +got):\n%s", i, st.ev, diff)
				}
			}
		})
	}
}

func TestStoreGetAndReady(t *testing.T) {
	var s watcher.Store[*corev1.ConfigMap]
	if s.Ready() {
		t.Error("a new store is ready")
	}
	s.Apply(ev{Type: watcher.Init})
	s.Apply(ev{Type: watcher.InitApply, Object: obj("a", "1")})
	if _, ok := s.Get("default/a"); ok || s.Ready() {
		t.Error("the store shows a view before InitDone")
	}
	s.Apply(ev{Type: watcher.InitDone})
	if got, ok := s.Get("default/a"); !ok || got.ResourceVersion != "1" || !s.Ready() {
		t.Errorf("Get(default/a) = %v, %v after InitDone; ready %v", got, ok, s.Ready())
	}
}

// Readers running during a re-list only ever see the whole old view or the
// whole new one (run with -race).
func TestStoreReadersNeverSeeAHalfView(t *testing.T) {
	var s watcher.Store[*corev1.ConfigMap]
	old := []string{"default/a@1", "default/b@1"}
	s.Apply(ev{Type: watcher.Init})
	s.Apply(ev{Type: watcher.InitApply, Object: obj("a", "1")})
	s.Apply(ev{Type: watcher.InitApply, Object: obj("b", "1")})
	s.Apply(ev{Type: watcher.InitDone})
	next := []string{"default/c@2", "default/d@2", "default/e@2"}

	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got := view(&s)
				if !cmp.Equal(got, old) && !cmp.Equal(got, next) {
					t.Errorf("a reader saw %v", got)
					return
				}
			}
		})
	}
	s.Apply(ev{Type: watcher.Init})
	for _, n := range []string{"c", "d", "e"} {
		s.Apply(ev{Type: watcher.InitApply, Object: obj(n, "2")})
	}
	s.Apply(ev{Type: watcher.InitDone})
	close(stop)
	wg.Wait()
}

func TestEventString(t *testing.T) {
	tests := []struct {
		ev   ev
		want string
	}{
		{ev{Type: watcher.Init}, "Init"},
		{ev{Type: watcher.InitApply, Object: obj("a", "1")}, "InitApply default/a"},
		{ev{Type: watcher.InitDone}, "InitDone"},
		{ev{Type: watcher.Apply, Object: obj("a", "1")}, "Apply default/a"},
		{ev{Type: watcher.Delete, Object: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-wide"}}}, "Delete cluster-wide"},
		{ev{Type: watcher.Error, Err: watcher.ErrWatchFailed}, "Error(watch failed)"},
	}
	for _, tc := range tests {
		if got := tc.ev.String(); got != tc.want {
			t.Errorf("String() = %q, want %q", got, tc.want)
		}
	}
}
