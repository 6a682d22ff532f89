package watcher

import (
	"errors"
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/cache"
)

// Object is what a [Watcher] watches: a pointer to a Kubernetes object such
// as *corev1.ConfigMap, or *unstructured.Unstructured for the dynamic client.
type Object interface {
	metav1.Object
	runtime.Object
}

// EventType says what an [Event] means; see the constants.
type EventType int

// The event types, in the order a watcher first emits them. A watcher
// reports Init, then InitApply for every object that exists, then InitDone;
// from then on Apply and Delete describe changes. A re-list after an
// unrecoverable watch error starts again at Init. Error can come at any
// point and is followed by recovery, never by the end of the sequence.
const (
	// Init starts a fresh view: the objects up to the next InitDone replace
	// everything seen before.
	Init EventType = iota + 1
	// InitApply carries one object of the initial view.
	InitApply
	// InitDone ends the initial view; [Store] swaps it in here.
	InitDone
	// Apply carries an object that was added or modified.
	Apply
	// Delete carries the last state of a deleted object.
	Delete
	// Error carries an error as a value in [Event.Err]; the watcher backs
	// off and recovers by itself.
	Error
)

var typeNames = [...]string{Init: "Init", InitApply: "InitApply", InitDone: "InitDone", Apply: "Apply", Delete: "Delete", Error: "Error"}

// String returns the constant's name, such as "InitApply".
func (t EventType) String() string {
	if t > 0 && int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("EventType(%d)", int(t))
}

// Event is one element of [Watcher.Events]. Object is set for InitApply,
// Apply and Delete; Err is set for Error and matches one of
// [ErrInitialListFailed], [ErrWatchStartFailed], [ErrWatchError] or
// [ErrWatchFailed] with [errors.Is].
type Event[T Object] struct {
	Type   EventType
	Object T
	Err    error
}

// String describes the event the way the kube-rs tests spell it:
// "Init", "InitApply default/a", "Apply default/a", "Delete default/a",
// "InitDone" or "Error(watch failed: ...)".
func (e Event[T]) String() string {
	switch e.Type {
	case InitApply, Apply, Delete:
		return e.Type.String() + " " + Key(e.Object)
	case Error:
		return fmt.Sprintf("Error(%v)", e.Err)
	}
	return e.Type.String()
}

// Key returns "namespace/name", or just "name" for a cluster-scoped object:
// the key of a [Store], the same as client-go's MetaNamespaceKeyFunc.
func Key(obj metav1.Object) string {
	return cache.MetaObjectToName(obj).String()
}

// The kinds of [Event.Err], after kube-rs's watcher::Error. Each wraps the
// client's error, so apierrors.IsGone and friends still see it.
var (
	// ErrInitialListFailed: a page of the initial list failed (including an
	// HTTP 410 for an expired continue token). The watcher starts again
	// from Init.
	ErrInitialListFailed = errors.New("initial list failed")
	// ErrWatchStartFailed: the watch request itself was refused. The
	// watcher retries it from the same resourceVersion, or re-lists if the
	// answer was 410 Gone.
	ErrWatchStartFailed = errors.New("watch start failed")
	// ErrWatchError: the server sent an ERROR event. The error is a
	// [*WatchError] carrying the Status. For 410 (Expired) the watcher
	// re-lists, otherwise it keeps reading the stream.
	ErrWatchError = errors.New("watch error")
	// ErrWatchFailed: the client could not read the stream (a decoding
	// error, an object of the wrong type), a streaming list ended before
	// its initial-events-end bookmark, or a watch closed within a second
	// with nothing in it. The watcher re-lists, except after a very short
	// watch, which it re-watches from the same resourceVersion.
	ErrWatchFailed = errors.New("watch failed")
)

// WatchError is an ERROR event from the watch stream. It matches
// [ErrWatchError] with [errors.Is], and its Status method makes apierrors
// helpers such as apierrors.IsResourceExpired work on it.
type WatchError struct {
	status metav1.Status
}

// Status returns the Status object the server sent.
func (e *WatchError) Status() metav1.Status { return e.status }

// Error returns "watch error: Reason (code): message".
func (e *WatchError) Error() string {
	return fmt.Sprintf("%v: %s (%d): %s", ErrWatchError, e.status.Reason, e.status.Code, e.status.Message)
}

// Is reports whether target is [ErrWatchError].
func (e *WatchError) Is(target error) bool { return target == ErrWatchError }

// gone reports whether a Status means "your resourceVersion is too old":
// the apiserver answers a watch from a compacted version with an ERROR
// event of code 410 and reason Expired (older servers said Gone).
func gone(s metav1.Status) bool {
	return s.Code == http.StatusGone || s.Reason == metav1.StatusReasonExpired || s.Reason == metav1.StatusReasonGone
}

var _ error = (*WatchError)(nil)
