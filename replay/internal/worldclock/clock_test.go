package worldclock_test

import (
	"errors"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/replay/internal/worldclock"
)

var t0 = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)

func TestTheWorldMovesAtItsSpeedAndHoldsWhereTold(t *testing.T) {
	type step struct {
		do   func(c *worldclock.Clock) error
		wall time.Duration // then this much wall time passes
		want time.Duration // where the world is then
	}
	play := func(c *worldclock.Clock) error { c.Play(); return nil }
	pause := func(c *worldclock.Clock) error { c.Pause(); return nil }
	seek := func(at time.Duration) func(c *worldclock.Clock) error {
		return func(c *worldclock.Clock) error { return c.Seek(at) }
	}
	speed := func(s float64) func(c *worldclock.Clock) error {
		return func(c *worldclock.Clock) error { return c.SetSpeed(s) }
	}
	for _, tc := range []struct {
		name   string
		at     time.Duration
		speed  float64
		paused bool
		steps  []step
		back   uint64
	}{
		{"at speed 1 the world keeps the wall's pace from its start point", 10 * time.Second, 1, false,
			[]step{{nil, 5 * time.Second, 15 * time.Second}, {nil, 5 * time.Second, 20 * time.Second}}, 0},
		{"at speed 4 it runs four times as fast", 0, 4, false,
			[]step{{nil, 5 * time.Second, 20 * time.Second}}, 0},
		{"it stops at the recording's end", 50 * time.Second, 1, false,
			[]step{{nil, time.Hour, time.Minute}}, 0},
		{"paused, it holds until played", 10 * time.Second, 1, true,
			[]step{{nil, time.Minute, 10 * time.Second}, {play, 3 * time.Second, 13 * time.Second}, {pause, time.Minute, 13 * time.Second}}, 0},
		{"speed 0 holds it as a pause does", 10 * time.Second, 0, false,
			[]step{{nil, time.Minute, 10 * time.Second}, {speed(2), 3 * time.Second, 16 * time.Second}}, 0},
		{"a seek forward and one back, counted", 0, 1, false,
			[]step{{seek(40 * time.Second), time.Second, 41 * time.Second}, {seek(5 * time.Second), time.Second, 6 * time.Second}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := clocktesting.NewFakePassiveClock(t0)
			c := worldclock.New(fake, tc.at, time.Minute, tc.speed, tc.paused)
			for i, s := range tc.steps {
				if s.do != nil {
					ch := c.Changed()
					if err := s.do(c); err != nil {
						t.Fatal(err)
					}
					select {
					case <-ch:
					default:
						t.Fatalf("step %d: Changed not closed", i)
					}
				}
				fake.SetTime(fake.Now().Add(s.wall))
				if got := c.Now(); got != s.want {
					t.Fatalf("step %d: world at %v, want %v", i, got, s.want)
				}
			}
			if got := c.State().Back; got != tc.back {
				t.Errorf("%d seeks back, want %d", got, tc.back)
			}
		})
	}
}

func TestWaitSaysHowLongUntilTheWorldGetsThere(t *testing.T) {
	for _, tc := range []struct {
		name   string
		speed  float64
		paused bool
		at     time.Duration
		want   time.Duration
		ok     bool
	}{
		{"a time passed already is now", 1, false, 5 * time.Second, 0, true},
		{"a time ahead at speed 1 is that far", 1, false, 30 * time.Second, 20 * time.Second, true},
		{"at speed 2 half as far", 2, false, 30 * time.Second, 10 * time.Second, true},
		{"paused, never", 1, true, 30 * time.Second, 0, false},
		{"at speed 0, never", 0, false, 30 * time.Second, 0, false},
		{"past the end, never", 1, false, 2 * time.Minute, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := worldclock.New(clocktesting.NewFakePassiveClock(t0), 10*time.Second, time.Minute, tc.speed, tc.paused)
			d, ok := c.Wait(tc.at)
			if d != tc.want || ok != tc.ok {
				t.Fatalf("Wait(%v) = %v, %v; want %v, %v", tc.at, d, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestRefusedChangesSayWhy(t *testing.T) {
	c := worldclock.New(clocktesting.NewFakePassiveClock(t0), 0, time.Minute, 1, false)
	for _, tc := range []struct {
		name string
		err  error
		is   error
		want string
	}{
		{"a seek past the end", c.Seek(2 * time.Minute), worldclock.ErrOutside, "outside the recording: 2m0s is not in [0s, 1m0s], the recording's range"},
		{"a seek before the start", c.Seek(-time.Second), worldclock.ErrOutside, "outside the recording: -1s is not in [0s, 1m0s], the recording's range"},
		{"a negative speed", c.SetSpeed(-1), worldclock.ErrBadSpeed, "bad speed -1: want 0 (hold) or more (1: real time)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil || tc.err.Error() != tc.want || !errors.Is(tc.err, tc.is) {
				t.Fatalf("got %v, want %q", tc.err, tc.want)
			}
		})
	}
	if s := c.State(); s.At != 0 || s.Speed != 1 {
		t.Errorf("refused changes changed the clock: %+v", s)
	}
}
