package watcher

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	testingclock "k8s.io/utils/clock/testing"
)

func TestBackoffDefaultsAreClientGos(t *testing.T) {
	want := Backoff{Initial: 800 * time.Millisecond, Max: 30 * time.Second, Factor: 2, Jitter: 1, ResetAfter: 2 * time.Minute}
	if diff := cmp.Diff(want, Backoff{}.withDefaults()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestBackoffDelays(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		cfg  Backoff
		rand float64
		// gaps[i] is how long the clock moves before error i.
		gaps []time.Duration
		want []time.Duration
	}{
		{
			name: "consecutive errors double from 800ms up to the 30s cap",
			cfg:  Backoff{Jitter: -1},
			gaps: make([]time.Duration, 8),
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 6400 * ms, 12800 * ms, 25600 * ms, 30 * time.Second, 30 * time.Second},
		},
		{
			name: "an error after two quiet minutes starts again at 800ms",
			cfg:  Backoff{Jitter: -1},
			gaps: []time.Duration{0, time.Second, time.Second, 2*time.Minute + 1},
			want: []time.Duration{800 * ms, 1600 * ms, 3200 * ms, 800 * ms},
		},
		{
			name: "two minutes exactly is not yet quiet enough",
			cfg:  Backoff{Jitter: -1},
			gaps: []time.Duration{0, 2 * time.Minute},
			want: []time.Duration{800 * ms, 1600 * ms},
		},
		{
			name: "jitter 1.0 adds up to the delay again",
			rand: 0.5,
			gaps: make([]time.Duration, 3),
			want: []time.Duration{1200 * ms, 2400 * ms, 4800 * ms},
		},
		{
			name: "jitter applies after the cap",
			cfg:  Backoff{Initial: 20 * time.Second, Jitter: 0.5},
			rand: 1,
			gaps: make([]time.Duration, 2),
			want: []time.Duration{30 * time.Second, 45 * time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
			b := newBackoff(tc.cfg, clk)
			b.rand = func() float64 { return tc.rand }
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

func TestBackoffWaitsOnTheClock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
	b := newBackoff(Backoff{Jitter: -1}, clk)
	done := make(chan error)
	go func() { done <- b.wait(context.Background()) }()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	clk.Step(799 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("wait returned %v before 800ms had passed on the clock", err)
	default:
	}
	clk.Step(time.Millisecond)
	if err := <-done; err != nil {
		t.Fatalf("wait: %v", err)
	}
}

func TestBackoffWaitEndsWithTheContext(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Unix(1e9, 0))
	b := newBackoff(Backoff{}, clk)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- b.wait(ctx) }()
	for !clk.HasWaiters() {
		runtime.Gosched()
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Fatalf("wait = %v, want context.Canceled", err)
	}
	if clk.HasWaiters() {
		t.Error("the timer is still set after the wait ended")
	}
}
