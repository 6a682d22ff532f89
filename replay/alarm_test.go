package replay

import (
	"sync"
	"testing"
	"testing/synctest"
	"time"

	testclock "k8s.io/utils/clock/testing"
)

func TestWaitsForOneInstantShareOneTimerAndWakeTogether(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := testclock.NewFakeClock(time.Unix(0, 0))
		a := newAlarms(fc)
		at := fc.Now().Add(time.Second)
		woke := make([]bool, 10)
		var wg sync.WaitGroup
		for i := range woke {
			al := a.join(at, time.Second)
			wg.Go(func() {
				defer a.leave(al)
				<-al.fired
				woke[i] = true
			})
		}
		later := a.join(at.Add(time.Second), 2*time.Second)
		synctest.Wait()
		if n := fc.Waiters(); n != 2 {
			t.Fatalf("%d clock waiters for 11 waits of 2 instants, want 2", n)
		}
		fc.Step(time.Second)
		wg.Wait()
		for i, w := range woke {
			if !w {
				t.Errorf("wait %d did not wake at its instant", i)
			}
		}
		if isClosed(later.fired) {
			t.Error("the wait for the later instant woke too")
		}
		// The last wait to leave before its instant stops the timer.
		a.leave(later)
		if n := fc.Waiters(); n != 0 {
			t.Errorf("%d clock waiters once every wait left, want 0", n)
		}
		if len(a.at) != 0 {
			t.Errorf("%d alarms kept once every wait left, want 0", len(a.at))
		}
	})
}

func TestAWaitForAnInstantThatHasFiredGetsANewAlarm(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := testclock.NewFakeClock(time.Unix(0, 0))
		a := newAlarms(fc)
		at := fc.Now().Add(time.Second)
		first := a.join(at, time.Second)
		fc.Step(time.Second)
		<-first.fired
		// A wait that computed its instant as still ahead just before it
		// passed joins after the timer fired (first has not left yet).
		second := a.join(at, time.Millisecond)
		if second == first {
			t.Fatal("joined an alarm that has fired")
		}
		fc.Step(time.Millisecond)
		<-second.fired
		a.leave(first)
		a.leave(second)
		if len(a.at) != 0 {
			t.Errorf("%d alarms kept once every wait left, want 0", len(a.at))
		}
	})
}
