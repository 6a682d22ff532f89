package pace

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
		a := NewAlarms(fc)
		at := fc.Now().Add(time.Second)
		woke := make([]bool, 10)
		var wg sync.WaitGroup
		for i := range woke {
			al := a.Join(at, time.Second)
			wg.Go(func() {
				defer a.Leave(al)
				<-al.Fired()
				woke[i] = true
			})
		}
		later := a.Join(at.Add(time.Second), 2*time.Second)
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
		if closed(later.fired) {
			t.Error("the wait for the later instant woke too")
		}
		// The last wait to leave before its instant stops the timer.
		a.Leave(later)
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
		a := NewAlarms(fc)
		at := fc.Now().Add(time.Second)
		first := a.Join(at, time.Second)
		fc.Step(time.Second)
		<-first.fired
		// A wait that computed its instant as still ahead just before it
		// passed joins after the timer fired (first has not left yet).
		second := a.Join(at, time.Millisecond)
		if second == first {
			t.Fatal("joined an alarm that has fired")
		}
		fc.Step(time.Millisecond)
		<-second.fired
		a.Leave(first)
		a.Leave(second)
		if len(a.at) != 0 {
			t.Errorf("%d alarms kept once every wait left, want 0", len(a.at))
		}
	})
}
