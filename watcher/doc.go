// Package watcher watches Kubernetes objects the way kube-rs's
// kube_runtime::watcher does, on top of client-go: an endless sequence of
// events that starts with a complete view, carries every change after it,
// and reports errors as values while it recovers from them by itself.
//
// The same code runs against a live cluster and against a replay: the
// watcher talks only to a client-go [cache.ListerWatcherWithContext],
// whatever rest.Config (or RoundTripper) its client was given. [FromTyped]
// builds one from a typed client and [FromDynamic] from a dynamic one; a
// [cache.ListWatch], such as [cache.NewListWatchFromClient]'s, plugs in as
// it is, and an informer-style [cache.ListerWatcher] through
// [cache.ToListerWatcherWithContext]:
//
//	lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "configmaps", "default", fields.Everything())
//	w := watcher.New[*corev1.ConfigMap](lw, watcher.Config{})
//
// The watcher sets every request's options from its [Config]; a list-watch
// may still override them, as NewListWatchFromClient sets the field
// selector it was given in place of [Config.FieldSelector].
//
// # Recipe
//
//	clientset, err := kubernetes.NewForConfig(restConfig)
//	...
//	w := watcher.New[*corev1.ConfigMap](
//		watcher.FromTyped(clientset.CoreV1().ConfigMaps("default")),
//		watcher.Config{LabelSelector: "app=web"},
//	)
//	var store watcher.Store[*corev1.ConfigMap]
//	for ev := range w.Events(ctx) {
//		store.Apply(ev)
//		if ev.Type == watcher.Error {
//			log.Print(ev.Err) // already being recovered from
//		}
//	}
//
// # Events
//
// A range over [Watcher.Events] yields, in order:
//
//	Init                  a fresh view begins
//	InitApply(obj) ...    one per existing object
//	InitDone              the view is complete
//	Apply(obj), Delete(obj) ...  changes, from the watch
//
// Error events can come anywhere; after one the watcher waits per
// [Config.Backoff] and carries on. A recovery that needs a re-list starts
// again at Init, so a consumer that keeps a view (as [Store] does) swaps it
// at each InitDone and never shows a half-listed or stale set.
//
// # The state machine
//
// The machine has five states, after kube-rs's watcher::State. Each is its
// own type holding only what is valid in it, with a step method that makes
// that state's one transition: at most one request or one stream event
// read, giving the event to report and the next state. The loop of
// [Watcher.Events] calls the current state's step until the range ends.
//
//	Empty          -> InitPage (paged list) or InitialWatch (streaming list)
//	InitPage       -> InitPage (items, next page, continue token) -> InitListed
//	InitialWatch   -> Watching, at the k8s.io/initial-events-end bookmark
//	InitListed     -> Watching (watch from the list's resourceVersion)
//	Watching       -> Watching (events, bookmarks advance the resourceVersion)
//
// Recovery is written at the transitions:
//
//   - 410 (an ERROR event with reason Expired, or a 410 answer to a list
//     or a watch) goes back to Empty: the resourceVersion was compacted
//     away, only a re-list can catch up. So does any failed list page
//     ([ErrInitialListFailed]).
//   - A plain end of the watch stream (timeoutSeconds, a restarted
//     apiserver) goes to InitListed: re-watch from the last
//     resourceVersion seen, losing and repeating nothing. A stream that
//     ends within a second with nothing in it is reported as
//     [ErrWatchFailed] first, so that backoff stops a spin.
//   - A stream client-go cannot decode, an object that is not a T, or a
//     streaming list that ends before initial-events-end ([ErrWatchFailed])
//     goes back to Empty: what was lost is unknown.
//   - Other ERROR events ([ErrWatchError]) are reported and the same
//     stream is read on; a refused watch ([ErrWatchStartFailed]) is
//     retried from the same resourceVersion, or, for a streaming list,
//     from Empty.
//
// # Backoff
//
// Backoff is outside the state machine, in the loop of [Watcher.Events]:
// a [wait.Backoff] ([Config.Backoff]) reset the way client-go's reflector
// resets its own ([wait.Backoff.DelayWithReset], every
// [Config.BackoffReset]), with the reflector's numbers by default: 800ms
// doubling to 30s, jitter 1.0, starting again every two minutes. It waits
// on [Config.Clock] and ends early when the context is done.
package watcher
