package watcher

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"
	testingclock "k8s.io/utils/clock/testing"
)

const ms = time.Millisecond

// noJitter is client-go's reflector backoff without its jitter, so that
// delays are exact.
func noJitter() *wait.Backoff {
	return &wait.Backoff{Duration: 800 * ms, Cap: 30 * time.Second, Steps: 38, Factor: 2}
}

func TestBackoffDefaultsAreTheReflectors(t *testing.T) {
	cfg := Config{}.withDefaults()
	want := &wait.Backoff{Duration: 800 * ms, Cap: 30 * time.Second, Steps: 38, Factor: 2, Jitter: 1}
	if diff := cmp.Diff(want, cfg.Backoff); diff != "" {
		t.Errorf("Backoff (-want +got):\n%s", diff)
	}
	if cfg.BackoffReset != 2*time.Minute {
		t.Errorf("BackoffReset = %v, want 2m", cfg.BackoffReset)
	}
}

func TestBackoffIsCopiedFromTheConfig(t *testing.T) {
	b := noJitter()
	cfg := Config{Backoff: b}.withDefaults()
	b.Duration = time.Hour
	if cfg.Backoff.Duration != 800*ms {
		t.Errorf("the caller's change reached the watcher's Backoff: Duration = %v", cfg.Backoff.Duration)
	}
}

func TestBackoffDelays(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		// gaps[i] is how long the clock moves before error i.
		gaps []time.Duration
		want []time.Duration
	}{
		{
			name: "consecutive errors double from 800ms up to the 30s cap",
			cfg:  Config{Backoff: noJitter()},
			gaps: make([]time.Duration, 9),
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second, 30 * time.Second},
		},
		{
			name: "an error more than two minutes after the start starts again at 800ms",
			cfg:  Config{Backoff: noJitter()},
			gaps: []time.Duration{0, time.Second, time.Second, 2*time.Minute - 2*time.Second + 1},
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 800 * ms},
		},
		{
			name: "two minutes exactly is not yet a reset",
			cfg:  Config{Backoff: noJitter()},
			gaps: []time.Duration{0, 2 * time.Minute},
			want: []time.Duration{800 * ms, 1600 * ms},
		},
		{
			name: "errors that go on start again every two minutes, as the reflector.s do",
			cfg:  Config{Backoff: noJitter()},
			gaps: []time.Duration{0, 30 * time.Second, 30 * time.Second, 30 * time.Second, 30*time.Second + 1, time.Minute, time.Minute + 1},
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 800 * ms, 1600 * ms, 800 * ms},
		},
		{
			name: "BackoffReset sets the period",
			cfg:  Config{Backoff: noJitter(), BackoffReset: time.Second},
			gaps: []time.Duration{0, time.Second, 1},
			want: []time.Duration{800 * ms, 1600 * ms, 800 * ms},
		},
		{
			name: "a negative BackoffReset never starts again",
			cfg:  Config{Backoff: noJitter(), BackoffReset: -1},
			gaps: []time.Duration{0, time.Hour, time.Hour},
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms},
		},
		{
			name: "a Backoff without Steps keeps its Duration, as wait.Backoff does",
			cfg:  Config{Backoff: &wait.Backoff{Duration: time.Second, Factor: 2}},
			gaps: make([]time.Duration, 3),
			want: []time.Duration{time.Second, time.Second, time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
			tc.cfg.Clock = clk
			b := newBackoff(tc.cfg.withDefaults())
			var got []time.Duration
			for _, gap := range tc.gaps {
				clk.Step(gap)
				got = append(got, b.delay())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delays (-want +got):\n%s", diff)
			}
		})
	}
}

// Jitter comes from wait.Jitter's own random source, so only its range is
// checked: 1.0 adds up to the delay again, and after the cap too.
func TestBackoffJitterAddsUpToJitterTimesTheDelay(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
	want := []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second}
	for range 20 {
		b := newBackoff(Config{Clock: clk}.withDefaults())
		for i, base := range want {
			if d := b.delay(); d < base || d >= 2*base {
				t.Fatalf("delay %d = %v, want in [%v, %v)", i, d, base, 2*base)
			}
		}
	}
}

// In a synctest bubble the real clock is the bubble's: the wait takes
// exactly the delay, with no real time spent.
func TestBackoffWaitsTheDelayOnTheClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := newBackoff(Config{Backoff: noJitter()}.withDefaults())
		for _, want := range []time.Duration{800 * ms, 1600 * ms} {
			start := time.Now()
			if err := b.wait(t.Context()); err != nil {
				t.Fatalf("wait: %v", err)
			}
			if got := time.Since(start); got != want {
				t.Errorf("wait took %v, want %v", got, want)
			}
		}
	})
}

func TestBackoffWaitsForTheFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
		b := newBackoff(Config{Backoff: noJitter(), Clock: clk}.withDefaults())
		done := make(chan error, 1)
		go func() { done <- b.wait(t.Context()) }()
		synctest.Wait() // the wait has set its timer
		clk.Step(799 * ms)
		synctest.Wait()
		select {
		case err := <-done:
			t.Fatalf("wait returned %v before 800ms had passed on the clock", err)
		default:
		}
		clk.Step(ms)
		if err := <-done; err != nil {
			t.Fatalf("wait: %v", err)
		}
	})
}

func TestBackoffWaitEndsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
		b := newBackoff(Config{Clock: clk}.withDefaults())
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- b.wait(ctx) }()
		synctest.Wait()
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("wait = %v, want context.Canceled", err)
		}
		if clk.HasWaiters() {
			t.Error("the timer is still set after the wait ended")
		}
	})
}
