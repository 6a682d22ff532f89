// Package worldclock is the clock a replay's world runs on when every
// client shares one "now" (replay.WorldClock): where in the recording the
// world is, as a duration from the recording's start.
//
// The world is at its start point plus speed times the wall time since it
// was last set, held at the recording's length once there. It can be
// paused, played, sought (forward or back) and sped up or slowed down;
// each change closes the channel [Clock.Changed] returned, so that a
// watch waiting for the world to reach its next event looks again. A
// speed of 0 holds the world where it is, as a pause does.
//
//	c := worldclock.New(clock.RealClock{}, 90*time.Second, length, 1, false)
//	c.Now()                  // 1m30s, then on at wall speed
//	d, ok := c.Wait(2 * time.Minute) // 30s of wall time; ok false while paused
//	err := c.Seek(10 * time.Second)  // a seek back: c.State().Back counts it
package worldclock
