package watcher

import (
	"math"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// InitialListStrategy is how a [Watcher] builds its initial view.
type InitialListStrategy int

const (
	// ListWatch lists in pages of [Config.PageSize] (limit/continue), then
	// watches from the list's resourceVersion. It works on every apiserver.
	// This is the default.
	ListWatch InitialListStrategy = iota
	// StreamingList opens one watch with sendInitialEvents=true,
	// resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true: the
	// server sends an ADDED event per existing object, then a bookmark
	// annotated k8s.io/initial-events-end, and the same stream goes on
	// with changes (KEP-3157, on by default since Kubernetes 1.32).
	StreamingList
)

// Config tunes a [Watcher]. The zero value is a paged list-then-watch with
// bookmarks, client-go's backoff and the real clock.
type Config struct {
	// InitialList picks the initial list strategy. Default [ListWatch].
	InitialList InitialListStrategy
	// PageSize is the limit of each page of a [ListWatch] list. Zero
	// means 500 (client-go's pager default); negative means one unpaged
	// list.
	PageSize int64
	// LabelSelector and FieldSelector restrict both the list and the
	// watch. Default: everything.
	LabelSelector, FieldSelector string
	// DisableBookmarks stops asking for BOOKMARK events on the watch that
	// follows a [ListWatch] list. Bookmarks are on by default: they keep
	// the resourceVersion fresh so that a re-watch after the stream ends
	// rarely meets 410. [StreamingList] always asks for bookmarks, since
	// the protocol requires them.
	DisableBookmarks bool
	// WatchTimeout is sent as timeoutSeconds on every watch; the server
	// ends the stream after it and the watcher re-watches. Zero means
	// 290s (kube-rs's default, under the usual 5 minute proxy limits).
	WatchTimeout time.Duration
	// Clock times backoff and very short watches. Default: the real clock.
	// Tests pass a k8s.io/utils/clock/testing FakeClock, or keep the real
	// one inside a testing/synctest bubble, whose time it then is.
	Clock clock.WithTicker
	// Backoff is the delay after each Error event, stepped with
	// [wait.Backoff.Step]: Duration, then Duration*Factor after each
	// error up to Cap while Steps last, each plus a random extra of up to
	// Jitter times the delay. Steps must be positive for the delay to
	// grow. Nil means client-go's reflector backoff: 800ms doubling to
	// 30s, jitter 1.0.
	Backoff *wait.Backoff
	// BackoffReset is the period after which the delays start again from
	// Backoff.Duration, counted from when they last started, as client-go's
	// reflector resets its backoff ([wait.Backoff.DelayWithReset]): a
	// watcher healthy for that long meets its next error with the shortest
	// delay, and one failing for that long starts again from it too. Zero
	// means 2m; negative means never.
	BackoffReset time.Duration
}

// Defaults, named where they are documented above.
const (
	defaultPageSize     = 500
	defaultWatchTimeout = 290 * time.Second
	// client-go's reflector backoff: defaultBackoffInit and its
	// neighbours in tools/cache/reflector.go.
	defaultBackoffInit   = 800 * time.Millisecond
	defaultBackoffMax    = 30 * time.Second
	defaultBackoffFactor = 2.0
	defaultBackoffJitter = 1.0
	defaultBackoffReset  = 2 * time.Minute
	// A watch that ends in under a second with no events is client-go's
	// VeryShortWatchError: something between us and the server is
	// closing streams, and re-watching at once would spin.
	veryShortWatch = time.Second
)

// withDefaults returns a copy of c with every zero field defaulted.
func (c Config) withDefaults() Config {
	if c.PageSize == 0 {
		c.PageSize = defaultPageSize
	}
	if c.PageSize < 0 {
		c.PageSize = 0
	}
	if c.WatchTimeout <= 0 {
		c.WatchTimeout = defaultWatchTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Backoff == nil {
		c.Backoff = &wait.Backoff{
			Duration: defaultBackoffInit,
			Cap:      defaultBackoffMax,
			// Enough steps to reach the cap, as the reflector sets.
			Steps:  int(math.Ceil(float64(defaultBackoffMax) / float64(defaultBackoffInit))),
			Factor: defaultBackoffFactor,
			Jitter: defaultBackoffJitter,
		}
	} else {
		b := *c.Backoff // the caller's stays theirs
		c.Backoff = &b
	}
	if c.BackoffReset == 0 {
		c.BackoffReset = defaultBackoffReset
	}
	return c
}
