package heapceiling_test

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/heapceiling"
)

func TestTheLimitFollowsTheLiveHeapAboveTheFloor(t *testing.T) {
	o := heapceiling.Options{Floor: 100, Margin: 0.5, Overhead: 10}
	tests := []struct {
		name string
		live int64
		want int64
	}{
		{"an empty heap gets the floor", 0, 100},
		{"a heap whose limit would be under the floor gets the floor", 50, 100},
		{"a heap at the floor's edge gets the floor", 60, 100},
		{"a larger heap gets itself, its margin and the overhead", 200, 310},
		{"a heap too large to add to gets no limit", math.MaxInt64, math.MaxInt64},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := o.Limit(tt.live); got != tt.want {
				t.Errorf("Limit(%d) = %d, want %d", tt.live, got, tt.want)
			}
		})
	}
}

func TestChosenIsTheUsersGOGCOrGOMEMLIMIT(t *testing.T) {
	tests := []struct {
		name       string
		gogc, lim  string // "" unset
		wantChosen bool
	}{
		{"neither set", "", "", false},
		{"GOGC set", "100", "", true},
		{"GOMEMLIMIT set", "", "1GiB", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			setenv(t, "GOGC", tt.gogc)
			setenv(t, "GOMEMLIMIT", tt.lim)
			if got := heapceiling.Chosen(); got != tt.wantChosen {
				t.Errorf("Chosen() = %v, want %v", got, tt.wantChosen)
			}
		})
	}
}

// setenv sets or unsets name for the test, restoring it after.
func setenv(t *testing.T, name, v string) {
	t.Setenv(name, v) // restores the old value
	if v == "" {
		if err := os.Unsetenv(name); err != nil {
			t.Fatal(err)
		}
	}
}

// A collection moves the limit to the live heap's, and Stop puts back
// the limit from before Start.
func TestACollectionMovesTheLimitAndStopPutsItBack(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	adjusted := make(chan [2]int64, 1)
	// A floor far above any test heap: the limit is then the floor,
	// whatever else the process holds.
	const floor = 1 << 40
	c := heapceiling.Start(heapceiling.Options{Floor: floor, Margin: 0.3, Adjusted: func(live, limit int64) {
		select {
		case adjusted <- [2]int64{live, limit}:
		default: // a collection of the runtime's own, not yet read
		}
	}})
	first := <-adjusted // Start's own
	if first[1] != floor {
		t.Fatalf("Start set the limit to %d, want the floor %d", first[1], floor)
	}
	if got := debug.SetMemoryLimit(-1); got != floor {
		t.Fatalf("the runtime's limit after Start = %d, want %d", got, floor)
	}
	runtime.GC()
	if got := <-adjusted; got[0] <= 0 || got[1] != floor {
		t.Errorf("after a collection: live %d, limit %d; want a live heap and the floor", got[0], got[1])
	}
	c.Stop()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("the limit after Stop = %d, want %d from before Start", got, before)
	}
	c.Stop() // a second Stop does nothing
	runtime.GC()
	runtime.GC()
	if got := debug.SetMemoryLimit(-1); got != before {
		t.Errorf("the limit after collections past Stop = %d, want %d", got, before)
	}
}
