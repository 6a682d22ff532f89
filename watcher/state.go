package watcher

import (
	"context"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
)

// none is the event type of a step that has nothing to report.
const none EventType = 0

// The states of the machine. A range over [Watcher.Events] starts at empty
// and goes through them in this order:
//
//	empty ──► initPage ──► initPage (items, next page) ──► initListed   (paged list)
//	   └────► initialWatch ──► watching, at initial-events-end           (streaming list)
//	initListed ──► watching (watch from the list's resourceVersion)
//	watching ──► watching (events; bookmarks advance the resourceVersion)
//	   └──────► initListed at the stream's end (re-watch from the last resourceVersion)
//
// and back to empty when only a re-list can recover (a 410, a list that
// failed, a stream that could not be read).
//
// A state's step does one thing: at most one request, or at most one
// stream event read. It returns the event to report (Type none for
// nothing) and the state that follows; errors are Error events, and the
// state they lead to is the recovery. stop releases a stream the state
// owns: the range stops the state it ends in.
type state[T Object] interface {
	step(ctx context.Context, w *Watcher[T]) (Event[T], state[T])
	stop()
}

type (
	// empty: nothing known. The next step starts the initial list.
	empty[T Object] struct{}

	// initPage: a paged list is in progress. items is the rest of the
	// page already fetched; continueToken and resourceVersion come from
	// its ListMeta. resourceVersion is "" until the first page arrives.
	initPage[T Object] struct {
		continueToken, resourceVersion string
		items                          []T
	}

	// initialWatch: a streaming list is sending its initial events.
	initialWatch[T Object] struct{ stream watch.Interface }

	// initListed: the initial view is complete at resourceVersion; the
	// next step (re)starts the watch from it.
	initListed[T Object] struct{ resourceVersion string }

	// watching: a watch stream is open. resourceVersion is the newest
	// seen (from an object or a bookmark); started and events detect a
	// very short watch.
	watching[T Object] struct {
		resourceVersion string
		stream          watch.Interface
		started         time.Time
		events          int
	}
)

func (empty[T]) stop()          {}
func (initPage[T]) stop()       {}
func (initListed[T]) stop()     {}
func (s initialWatch[T]) stop() { s.stream.Stop() }
func (s watching[T]) stop()     { s.stream.Stop() }

// step reports Init and starts the initial list: a paged list from the
// next step, or a streaming list's watch now.
func (empty[T]) step(ctx context.Context, w *Watcher[T]) (Event[T], state[T]) {
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
		return errorEvent[T](ErrWatchStartFailed, err), empty[T]{}
	}
	return Event[T]{Type: Init}, initialWatch[T]{stream}
}

// step reports the page's next item, or ends the list at its last page, or
// fetches the next page.
func (s initPage[T]) step(ctx context.Context, w *Watcher[T]) (Event[T], state[T]) {
	if len(s.items) > 0 {
		ev := Event[T]{Type: InitApply, Object: s.items[0]}
		s.items = s.items[1:]
		return ev, s
	}
	if s.resourceVersion != "" && s.continueToken == "" {
		return Event[T]{Type: InitDone}, initListed[T]{s.resourceVersion}
	}
	// The first page has no resourceVersion: "" is a consistent read from
	// etcd. Later pages carry only the continue token, which pins the
	// snapshot; an expired token is HTTP 410 and, like any list error,
	// starts over from empty.
	opts := w.listOptions()
	opts.Continue = s.continueToken
	list, err := w.lw.ListWithContext(ctx, opts)
	if err != nil {
		return errorEvent[T](ErrInitialListFailed, err), empty[T]{}
	}
	next, err := page[T](list)
	if err != nil {
		return errorEvent[T](ErrInitialListFailed, err), empty[T]{}
	}
	return Event[T]{}, next
}

// step reads one of the streaming list's initial events.
func (s initialWatch[T]) step(ctx context.Context, w *Watcher[T]) (Event[T], state[T]) {
	ev, ok := receive(ctx, s.stream)
	if !ok {
		// The stream ended before initial-events-end: the view is
		// incomplete, so start over, after backoff.
		s.stop()
		return errorEvent[T](ErrWatchFailed, errors.New("the streaming list ended before the initial-events-end bookmark")), empty[T]{}
	}
	switch ev.Type {
	case watch.Added, watch.Modified:
		obj, err := as[T](ev.Object)
		if err != nil {
			s.stop()
			return errorEvent[T](ErrWatchFailed, err), empty[T]{}
		}
		return Event[T]{Type: InitApply, Object: obj}, s
	case watch.Deleted:
		// The initial events are the current state: the apiserver sends
		// no DELETED before initial-events-end.
		return Event[T]{}, s
	case watch.Bookmark:
		// Only the bookmark annotated k8s.io/initial-events-end ends the
		// initial events; its resourceVersion is the one the initial view
		// is consistent with.
		m, err := meta.Accessor(ev.Object)
		if err != nil || m.GetAnnotations()[metav1.InitialEventsAnnotationKey] != "true" {
			return Event[T]{}, s
		}
		// The stream goes on as the watch. It has had events (this
		// bookmark at least), so its end is never a very short watch, as
		// client-go's reflector counts bookmarks too.
		return Event[T]{Type: InitDone}, watching[T]{resourceVersion: m.GetResourceVersion(), stream: s.stream, started: w.cfg.Clock.Now(), events: 1}
	case watch.Error:
		return afterWatchError(ev.Object, state[T](s))
	}
	return Event[T]{}, s
}

// step starts the watch from the resourceVersion of the initial view, or
// of the last event of the previous watch.
func (s initListed[T]) step(ctx context.Context, w *Watcher[T]) (Event[T], state[T]) {
	opts := w.watchOptions(s.resourceVersion)
	opts.AllowWatchBookmarks = !w.cfg.DisableBookmarks
	stream, err := w.lw.WatchWithContext(ctx, opts)
	if err != nil {
		// 410: the resourceVersion was compacted away, so re-list. Any
		// other refusal is retried from the same resourceVersion, after
		// backoff.
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			return errorEvent[T](ErrWatchStartFailed, err), empty[T]{}
		}
		return errorEvent[T](ErrWatchStartFailed, err), s
	}
	return Event[T]{}, watching[T]{resourceVersion: s.resourceVersion, stream: stream, started: w.cfg.Clock.Now()}
}

// step reads one event of the watch; its end re-watches.
func (s watching[T]) step(ctx context.Context, w *Watcher[T]) (Event[T], state[T]) {
	ev, ok := receive(ctx, s.stream)
	if !ok {
		s.stop()
		// A plain end (timeoutSeconds, a restarted apiserver) loses
		// nothing: re-watch from the last resourceVersion. But an end
		// within a second with nothing in it is client-go's very short
		// watch, reported so that backoff applies.
		if s.events == 0 && w.cfg.Clock.Since(s.started) < veryShortWatch {
			return errorEvent[T](ErrWatchFailed, fmt.Errorf("very short watch from resourceVersion %q: the stream closed at once with no events", s.resourceVersion)), initListed[T]{s.resourceVersion}
		}
		return Event[T]{}, initListed[T]{s.resourceVersion}
	}
	s.events++
	return s.received(ev)
}

// received handles an event read from the watch: a change is reported and
// advances the resourceVersion, as a bookmark does silently.
func (s watching[T]) received(ev watch.Event) (Event[T], state[T]) {
	switch ev.Type {
	case watch.Added, watch.Modified, watch.Deleted:
		obj, err := as[T](ev.Object)
		if err != nil {
			s.stop()
			return errorEvent[T](ErrWatchFailed, err), empty[T]{}
		}
		if rv := obj.GetResourceVersion(); rv != "" {
			s.resourceVersion = rv
		}
		if ev.Type == watch.Deleted {
			return Event[T]{Type: Delete, Object: obj}, s
		}
		return Event[T]{Type: Apply, Object: obj}, s
	case watch.Bookmark:
		// A bookmark carries only a resourceVersion: everything up to it
		// has been sent, so a re-watch may start there.
		if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
			s.resourceVersion = m.GetResourceVersion()
		}
		return Event[T]{}, s
	case watch.Error:
		return afterWatchError(ev.Object, state[T](s))
	}
	return Event[T]{}, s
}

// afterWatchError is what an ERROR event leads to on the stream state s
// reads: a 410 or an unreadable stream re-lists (s's stream stopped), any
// other ERROR event is reported and the stream read on (the apiserver
// usually closes it next, leading to a re-watch).
func afterWatchError[T Object](obj runtime.Object, s state[T]) (Event[T], state[T]) {
	ev, relist := watchError[T](obj)
	if relist {
		s.stop()
		return ev, empty[T]{}
	}
	return ev, s
}
