package pace

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Alarms wakes every wait for one instant with one timer. The watches of a
// collection served at a speed above 0 are due at the same instants (Play
// plus each event's recorded time): a thousand watchers of one recording
// then share one timer per event, woken together as the timer fires,
// instead of each making, and stopping, a timer of its own for every
// frame (two allocations a wait, the replay's largest share of the
// garbage a paced fan-out makes, whose collections delay whole bursts).
// It needs a clock with AfterFunc (the real clock and
// k8s.io/utils/clock/testing's have it); with another, each wait makes its
// own timer.
type Alarms struct {
	clock clock.WithDelayedExecution // nil: no sharing
	mu    sync.Mutex
	// at holds the alarms by instant. Equal Times (wall and monotonic
	// clock, location) share one; equal instants computed apart may
	// not, which only costs a timer.
	at map[time.Time]*Alarm
}

// Alarm is one instant's timer and the waits that share it.
type Alarm struct {
	key     time.Time
	fired   chan struct{} // closed at the instant (Fired)
	timer   clock.Timer
	waiters int // guarded by Alarms.mu
}

// NewAlarms returns the alarms of clock c.
func NewAlarms(c clock.Clock) *Alarms {
	a := &Alarms{at: map[time.Time]*Alarm{}}
	a.clock, _ = c.(clock.WithDelayedExecution)
	return a
}

// Join returns the alarm of instant t, which is d from now (d > 0), for a
// wait to select on; the wait calls Leave when done. It returns nil
// without a clock that shares.
func (a *Alarms) Join(t time.Time, d time.Duration) *Alarm {
	if a.clock == nil {
		return nil
	}
	key := t
	a.mu.Lock()
	defer a.mu.Unlock()
	al := a.at[key]
	if al == nil || closed(al.fired) {
		// The timer only closes the channel: it takes no lock, so a
		// clock that fires timers under its own lock (the fake clock
		// does) and is called here under mu cannot deadlock with us.
		al = &Alarm{key: key, fired: make(chan struct{})}
		fired := al.fired
		al.timer = a.clock.AfterFunc(d, func() { close(fired) })
		a.at[key] = al
	}
	al.waiters++
	return al
}

// Leave says a wait is done with al; the last one forgets it and stops its
// timer if it has not fired.
func (a *Alarms) Leave(al *Alarm) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if al.waiters--; al.waiters > 0 {
		return
	}
	if a.at[al.key] == al {
		delete(a.at, al.key)
	}
	if !closed(al.fired) {
		al.timer.Stop()
	}
}

// Fired is closed at the alarm's instant.
func (al *Alarm) Fired() <-chan struct{} { return al.fired }

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
