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
		var s state = empty{}
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

// none is the event type of a step that has nothing to report.
const none EventType = 0

// state is one state of the machine. Each carries only what is valid in it;
// stop releases a stream the state owns.
type state interface{ stop() }

// empty: nothing known. The next step starts the initial list.
type empty struct{}

// initPage: a paged list is in progress. items is the rest of the page
// already fetched; continueToken and resourceVersion come from its
// ListMeta. resourceVersion is "" until the first page arrives.
type initPage[T Object] struct {
	continueToken, resourceVersion string
	items                          []T
}

// initialWatch: a streaming list is sending its initial events.
type initialWatch struct{ stream watch.Interface }

// initListed: the initial view is complete at resourceVersion; the next
// step (re)starts the watch from it.
type initListed struct{ resourceVersion string }

// watching: a watch stream is open. resourceVersion is the newest seen
// (from an object or a bookmark); started and events detect a very short
// watch.
type watching struct {
	resourceVersion string
	stream          watch.Interface
	started         time.Time
	events          int
}

func (empty) stop()          {}
func (initPage[T]) stop()    {}
func (initListed) stop()     {}
func (s initialWatch) stop() { s.stream.Stop() }
func (s watching) stop()     { s.stream.Stop() }

// step makes one transition: it does at most one request or reads at most
// one stream event, and returns the event to report (Type none for nothing)
// with the next state. The recovery rules live at the transitions below.
func (w *Watcher[T]) step(ctx context.Context, s state) (Event[T], state) {
	switch s := s.(type) {
	case empty:
		if w.cfg.InitialList == ListWatch {
			return Event[T]{Type: Init}, initPage[T]{}
		}
		// Streaming list. resourceVersion "" with NotOlderThan asks for a
		// consistent read, like a plain list; the apiserver rejects
		// sendInitialEvents without resourceVersionMatch=NotOlderThan and
		// allowWatchBookmarks=true (422).
		opts := w.watchOptions("")
		send := true
		opts.SendInitialEvents = &send
		opts.ResourceVersionMatch = metav1.ResourceVersionMatchNotOlderThan
		opts.AllowWatchBookmarks = true
		stream, err := w.lw.WatchWithContext(ctx, opts)
		if err != nil {
			return errorEvent[T](ErrWatchStartFailed, err), empty{}
		}
		return Event[T]{Type: Init}, initialWatch{stream}

	case initPage[T]:
		if len(s.items) > 0 {
			ev := Event[T]{Type: InitApply, Object: s.items[0]}
			s.items = s.items[1:]
			return ev, s
		}
		if s.resourceVersion != "" && s.continueToken == "" {
			return Event[T]{Type: InitDone}, initListed{s.resourceVersion}
		}
		// The first page has no resourceVersion: "" is a consistent read
		// from etcd. Later pages carry only the continue token, which
		// pins the snapshot; an expired token is HTTP 410 and, like any
		// list error, starts over from empty.
		opts := w.listOptions()
		opts.Continue = s.continueToken
		list, err := w.lw.ListWithContext(ctx, opts)
		if err != nil {
			return errorEvent[T](ErrInitialListFailed, err), empty{}
		}
		next, err := page[T](list)
		if err != nil {
			return errorEvent[T](ErrInitialListFailed, err), empty{}
		}
		return Event[T]{}, next

	case initialWatch:
		ev, ok := receive(ctx, s.stream)
		if !ok {
			// The stream ended before initial-events-end: the view is
			// incomplete, so start over, after backoff.
			s.stop()
			return errorEvent[T](ErrWatchFailed, errors.New("the streaming list ended before the initial-events-end bookmark")), empty{}
		}
		switch ev.Type {
		case watch.Added, watch.Modified:
			obj, err := as[T](ev.Object)
			if err != nil {
				s.stop()
				return errorEvent[T](ErrWatchFailed, err), empty{}
			}
			return Event[T]{Type: InitApply, Object: obj}, s
		case watch.Deleted:
			// The initial events are the current state: the apiserver
			// sends no DELETED before initial-events-end.
			return Event[T]{}, s
		case watch.Bookmark:
			// Only the bookmark annotated k8s.io/initial-events-end
			// ends the initial events; its resourceVersion is the one
			// the initial view is consistent with.
			m, err := meta.Accessor(ev.Object)
			if err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
				return Event[T]{}, s
			}
			// The stream goes on as the watch. It has had events (this
			// bookmark at least), so its end is never a very short watch,
			// as client-go's reflector counts bookmarks too.
			return Event[T]{Type: InitDone}, watching{resourceVersion: m.GetResourceVersion(), stream: s.stream, started: w.cfg.Clock.Now(), events: 1}
		case watch.Error:
			ev, relist := watchError[T](ev.Object)
			if relist {
				s.stop()
				return ev, empty{}
			}
			return ev, s
		}
		return Event[T]{}, s

	case initListed:
		opts := w.watchOptions(s.resourceVersion)
		opts.AllowWatchBookmarks = !w.cfg.DisableBookmarks
		stream, err := w.lw.WatchWithContext(ctx, opts)
		if err != nil {
			if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return errorEvent[T](ErrWatchStartFailed, err), empty{}
			}
			return errorEvent[T](ErrWatchStartFailed, err), s
		}
		return Event[T]{}, watching{resourceVersion: s.resourceVersion, stream: stream, started: w.cfg.Clock.Now()}

	case watching:
		ev, ok := receive(ctx, s.stream)
		if !ok {
			s.stop()
			// A plain end (timeoutSeconds, a restarted apiserver) loses
			// nothing: re-watch from the last resourceVersion. But an end
			// within a second with nothing in it is client-go's very short
			// watch, reported so that backoff applies.
			if s.events == 0 && w.cfg.Clock.Since(s.started) < veryShortWatch {
				return errorEvent[T](ErrWatchFailed, fmt.Errorf("very short watch from resourceVersion %q: the stream closed at once with no events", s.resourceVersion)), initListed{s.resourceVersion}
			}
			return Event[T]{}, initListed{s.resourceVersion}
		}
		s.events++
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			obj, err := as[T](ev.Object)
			if err != nil {
				s.stop()
				return errorEvent[T](ErrWatchFailed, err), empty{}
			}
			if rv := obj.GetResourceVersion(); rv != "" {
				s.resourceVersion = rv
			}
			if ev.Type == watch.Deleted {
				return Event[T]{Type: Delete, Object: obj}, s
			}
			return Event[T]{Type: Apply, Object: obj}, s
		case watch.Bookmark:
			// A bookmark carries only a resourceVersion: everything up
			// to it has been sent, so a re-watch may start there.
			if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
				s.resourceVersion = m.GetResourceVersion()
			}
			return Event[T]{}, s
		case watch.Error:
			ev, relist := watchError[T](ev.Object)
			if relist {
				s.stop()
				return ev, empty{}
			}
			return ev, s
		}
		return Event[T]{}, s
	}
	panic(fmt.Sprintf("watcher: unknown state %T", s))
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
