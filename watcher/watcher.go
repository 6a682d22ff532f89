package watcher

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// Watcher turns a [cache.ListerWatcherWithContext] into an endless
// sequence of [Event] values: an initial view, then changes, with errors
// reported as values and recovered from. It holds no state between ranges
// over [Watcher.Events] and is safe to share.
type Watcher[T Object] struct {
	lw  cache.ListerWatcherWithContext
	cfg Config // defaulted
}

// New returns a watcher of lw's objects. lw is any client-go list-watch:
// [FromTyped] or [FromDynamic] over a client, a [cache.ListWatch] from
// [cache.NewListWatchFromClient] or built by hand, or an informer's
// ListerWatcher wrapped with [cache.ToListerWatcherWithContext]. Its List
// must return a list object (such as *corev1.ConfigMapList or
// *unstructured.UnstructuredList) whose items are T. The watcher sets the
// options of every request from cfg; lw may override some, as
// NewListWatchFromClient sets the field selector it was given. cfg is
// copied; its zero value is documented on [Config].
func New[T Object](lw cache.ListerWatcherWithContext, cfg Config) *Watcher[T] {
	return &Watcher[T]{lw: lw, cfg: cfg.withDefaults()}
}

// Events returns the watcher's events. Each range starts from an empty
// state (Init first) and runs until ctx is done or the loop body stops; it
// never ends on its own, so stop after the events you need. After every
// Error event it waits on [Config.Clock] per [Config.Backoff] (or until
// ctx is done) before the next step. Cancellation is not reported as an
// Error: the sequence just ends.
func (w *Watcher[T]) Events(ctx context.Context) iter.Seq[Event[T]] {
	return func(yield func(Event[T]) bool) {
		var s state[T] = empty[T]{}
		defer func() { s.stop() }()
		bo := newBackoff(w.cfg)
		for ctx.Err() == nil {
			var ev Event[T]
			ev, s = w.step(ctx, s)
			if ctx.Err() != nil {
				return
			}
			if ev.Type == none {
				continue
			}
			if !yield(ev) {
				return
			}
			if ev.Type == Error && bo.wait(ctx) != nil {
				return
			}
		}
	}
}

// step makes one transition from s: it does at most one request or reads
// at most one stream event, and returns the event to report (Type none for
// nothing) with the next state. Each state's own step method, in state.go,
// says how; the recovery rules are written there, at the transitions where
// they happen.
func (w *Watcher[T]) step(ctx context.Context, s state[T]) (Event[T], state[T]) {
	return s.step(ctx, w)
}

// receive reads one event, or reports false when the stream has ended or
// ctx is done.
func receive(ctx context.Context, stream watch.Interface) (watch.Event, bool) {
	select {
	case <-ctx.Done():
		return watch.Event{}, false
	case ev, ok := <-stream.ResultChan():
		return ev, ok
	}
}

// watchError classifies an ERROR event and says whether to re-list.
func watchError[T Object](obj runtime.Object) (Event[T], bool) {
	status, ok := obj.(*metav1.Status)
	if !ok {
		var se *apierrors.StatusError
		if !errors.As(apierrors.FromObject(obj), &se) {
			return errorEvent[T](ErrWatchFailed, fmt.Errorf("ERROR event with a %T instead of a Status", obj)), true
		}
		status = &se.ErrStatus
	}
	// client-go turns a stream it cannot decode into a synthetic ERROR
	// event (cause ClientWatchDecoding) and closes the stream. What was
	// lost is unknown, so re-list.
	if status.Details != nil {
		for _, c := range status.Details.Causes {
			if c.Type == "ClientWatchDecoding" {
				return errorEvent[T](ErrWatchFailed, apierrors.FromObject(status)), true
			}
		}
	}
	// 410: the resourceVersion was compacted away; only a re-list can
	// recover. Any other ERROR event is reported and the stream read on
	// (the apiserver usually closes it next, leading to a re-watch).
	return Event[T]{Type: Error, Err: &WatchError{status: *status}}, gone(*status)
}

func errorEvent[T Object](kind, err error) Event[T] {
	return Event[T]{Type: Error, Err: fmt.Errorf("%w: %w", kind, err)}
}

// page turns one list response into the initPage state that drains it.
func page[T Object](list runtime.Object) (initPage[T], error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return initPage[T]{}, err
	}
	objs, err := meta.ExtractList(list)
	if err != nil {
		return initPage[T]{}, err
	}
	p := initPage[T]{continueToken: lm.GetContinue(), resourceVersion: lm.GetResourceVersion(), items: make([]T, 0, len(objs))}
	if p.resourceVersion == "" {
		return initPage[T]{}, fmt.Errorf("the %T has no resourceVersion to watch from", list)
	}
	for _, o := range objs {
		obj, err := as[T](o)
		if err != nil {
			return initPage[T]{}, err
		}
		p.items = append(p.items, obj)
	}
	return p, nil
}

func as[T Object](o runtime.Object) (T, error) {
	obj, ok := o.(T)
	if !ok {
		var zero T
		return zero, fmt.Errorf("got a %T, want a %T: the client and the Watcher's type parameter disagree", o, zero)
	}
	return obj, nil
}

func (w *Watcher[T]) listOptions() metav1.ListOptions {
	return metav1.ListOptions{
		LabelSelector: w.cfg.LabelSelector,
		FieldSelector: w.cfg.FieldSelector,
		Limit:         w.cfg.PageSize,
	}
}

func (w *Watcher[T]) watchOptions(rv string) metav1.ListOptions {
	timeout := int64(w.cfg.WatchTimeout / time.Second)
	return metav1.ListOptions{
		LabelSelector:   w.cfg.LabelSelector,
		FieldSelector:   w.cfg.FieldSelector,
		ResourceVersion: rv,
		TimeoutSeconds:  &timeout,
	}
}
