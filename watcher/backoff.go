package watcher

import (
	"context"
	"math/rand/v2"
	"time"

	"k8s.io/utils/clock"
)

// backoff turns a [Backoff] into delays. It lives outside the state machine:
// the machine says what happened, the loop in [Watcher.Events] decides how
// long to wait before the next step. Not safe for concurrent use; each
// range over Events has its own.
type backoff struct {
	cfg   Backoff // defaulted
	clock clock.Clock
	rand  func() float64 // in [0, 1); tests replace it

	next time.Duration // the next delay before jitter; 0 before the first error
	last time.Time     // when the previous error was reported
}

func newBackoff(cfg Backoff, c clock.Clock) *backoff {
	return &backoff{cfg: cfg.withDefaults(), clock: c, rand: rand.Float64}
}

// delay returns the wait for an error reported now and advances the
// sequence: Initial, Initial*Factor, ... up to Max, each plus jitter.
func (b *backoff) delay() time.Duration {
	now := b.clock.Now()
	if b.next == 0 || now.Sub(b.last) > b.cfg.ResetAfter {
		b.next = b.cfg.Initial
	}
	b.last = now
	d := b.next
	b.next = min(time.Duration(float64(d)*b.cfg.Factor), b.cfg.Max)
	if b.cfg.Jitter > 0 {
		// Same shape as wait.Jitter: uniformly in [d, d+Jitter*d).
		d += time.Duration(b.rand() * b.cfg.Jitter * float64(d))
	}
	return d
}

// wait sleeps for the next delay on the clock, or until ctx is done.
func (b *backoff) wait(ctx context.Context) error {
	t := b.clock.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
