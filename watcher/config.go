package watcher

import (
	"time"

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
	// Tests pass a k8s.io/utils/clock/testing FakeClock.
	Clock clock.WithTicker
	// Backoff is the delay after each Error event. The zero value is
	// client-go's reflector backoff; see [Backoff].
	Backoff Backoff
}

// Backoff is the wait after an Error event, before the watcher's next step.
// Each consecutive error multiplies the delay by Factor up to Max; an error
// more than ResetAfter after the previous one starts again at Initial. Zero
// fields take client-go's reflector numbers.
type Backoff struct {
	// Initial is the first delay. Default 800ms.
	Initial time.Duration
	// Max caps the delay before jitter. Default 30s.
	Max time.Duration
	// Factor multiplies the delay after each error. Zero means 2.
	Factor float64
	// Jitter adds a random extra of up to Jitter times the delay. Zero
	// means 1.0 (client-go's); negative means no jitter.
	Jitter float64
	// ResetAfter is the quiet time after which the delay starts again at
	// Initial. Default 2m.
	ResetAfter time.Duration
}

// Defaults, named where they are documented above.
const (
	defaultPageSize     = 500
	defaultWatchTimeout = 290 * time.Second
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
	c.Backoff = c.Backoff.withDefaults()
	return c
}

func (b Backoff) withDefaults() Backoff {
	if b.Initial <= 0 {
		b.Initial = 800 * time.Millisecond
	}
	if b.Max <= 0 {
		b.Max = 30 * time.Second
	}
	if b.Factor <= 0 {
		b.Factor = 2
	}
	if b.Jitter == 0 {
		b.Jitter = 1
	}
	if b.ResetAfter <= 0 {
		b.ResetAfter = 2 * time.Minute
	}
	return b
}
