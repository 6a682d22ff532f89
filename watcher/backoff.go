package watcher

import (
	"context"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// backoff waits out [Config.Backoff]'s delays. It lives outside the state
// machine: the machine says what happened, the loop in [Watcher.Events]
// decides how long to wait before the next step. The delays are
// wait.Backoff's own, reset the way client-go's reflector resets them
// (DelayWithReset); only the timer is ours, so that it runs on the
// injected clock and ends with the context. Not safe for concurrent use;
// each range over Events has its own.
type backoff struct {
	clock clock.Clock
	delay wait.DelayFunc
}

// newBackoff starts the delays of cfg, which is defaulted.
func newBackoff(cfg Config) backoff {
	delay := cfg.Backoff.DelayFunc()
	if cfg.BackoffReset > 0 {
		delay = cfg.Backoff.DelayWithReset(cfg.Clock, cfg.BackoffReset)
	}
	return backoff{clock: cfg.Clock, delay: delay}
}

// wait sleeps for the next delay on the clock, or until ctx is done.
func (b backoff) wait(ctx context.Context) error {
	t := b.clock.NewTimer(b.delay())
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C():
		return nil
	}
}
