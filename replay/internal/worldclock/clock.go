package worldclock

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Errors of a change the clock refuses, wrapped with %w.
var (
	// ErrOutside: a seek before the recording's start or past its end.
	ErrOutside = errors.New("outside the recording")
	// ErrBadSpeed: a negative, infinite or NaN speed.
	ErrBadSpeed = errors.New("bad speed")
)

// Clock is where the world of one replay is. It is safe for concurrent
// use.
type Clock struct {
	clk    clock.PassiveClock
	length time.Duration

	mu      sync.Mutex
	at      time.Duration // where the world was at anchor
	anchor  time.Time
	speed   float64
	paused  bool
	back    uint64
	changed chan struct{}
}

// State is a clock's settings and where its world is.
type State struct {
	// At is where the world is, from the recording's start.
	At time.Duration
	// Length is the recording's: the world stops there.
	Length time.Duration
	Speed  float64
	Paused bool
	// Back counts the seeks back so far: a watch open across one ends,
	// as a real server never goes back.
	Back uint64
}

// New returns a clock whose world is at at (in [0, length]) and plays on
// at speed, unless paused.
func New(clk clock.PassiveClock, at, length time.Duration, speed float64, paused bool) *Clock {
	return &Clock{clk: clk, length: length, at: min(max(at, 0), length), anchor: clk.Now(),
		speed: speed, paused: paused, changed: make(chan struct{})}
}

// Now returns where the world is.
func (c *Clock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nowLocked()
}

func (c *Clock) nowLocked() time.Duration {
	if c.paused || c.speed == 0 {
		return c.at
	}
	d := float64(c.at) + c.speed*float64(c.clk.Since(c.anchor))
	if d >= float64(c.length) {
		return c.length
	}
	return time.Duration(d)
}

// State returns the clock's state.
func (c *Clock) State() State {
	c.mu.Lock()
	defer c.mu.Unlock()
	return State{At: c.nowLocked(), Length: c.length, Speed: c.speed, Paused: c.paused, Back: c.back}
}

// Changed returns a channel closed at the clock's next change (play,
// pause, seek, speed).
func (c *Clock) Changed() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.changed
}

// Wait returns the wall time until the world reaches at, 0 when it is
// there; ok is false when it never will as things stand (paused, at speed
// 0, or at past the recording's end): wait for [Clock.Changed] then.
func (c *Clock) Wait(at time.Duration) (d time.Duration, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.nowLocked()
	switch {
	case now >= at:
		return 0, true
	case c.paused || c.speed == 0 || at > c.length:
		return 0, false
	}
	return time.Duration(math.Ceil(float64(at-now) / c.speed)), true
}

// Play lets the world run on at its speed.
func (c *Clock) Play() { c.set(func() { c.paused = false }) }

// Pause holds the world where it is.
func (c *Clock) Pause() { c.set(func() { c.paused = true }) }

// SetSpeed sets how many recorded seconds pass in a wall second; 0 holds
// the world.
func (c *Clock) SetSpeed(s float64) error {
	if s < 0 || math.IsNaN(s) || math.IsInf(s, 0) {
		return fmt.Errorf("%w %v: want 0 (hold) or more (1: real time)", ErrBadSpeed, s)
	}
	c.set(func() { c.speed = s })
	return nil
}

// Seek moves the world to at, forward or back. at must be in the
// recording: [0, its length].
func (c *Clock) Seek(at time.Duration) error {
	if at < 0 || at > c.length {
		return fmt.Errorf("%w: %v is not in [0s, %v], the recording's range", ErrOutside, at, c.length)
	}
	c.set(func() {
		if at < c.at {
			c.back++
		}
		c.at = at
	})
	return nil
}

// set applies change from where the world is now, and wakes the waiters.
func (c *Clock) set(change func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.at, c.anchor = c.nowLocked(), c.clk.Now()
	change()
	close(c.changed)
	c.changed = make(chan struct{})
}
