package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/kwrec/kwrec/replay/internal/fanout"
)

// counting makes frame i as "frame i", counting the frames it made, and
// fails on the events in bad.
type counting struct {
	made   *atomic.Int64
	closed *atomic.Bool
	bad    map[int]bool
}

func (c counting) Make(i int) ([]byte, error) {
	if c.bad[i] {
		return nil, errors.New("unreadable")
	}
	c.made.Add(1)
	return fmt.Appendf(nil, "frame %d", i), nil
}

func (c counting) Close() { c.closed.Store(true) }

func TestAHubMakesEachFrameOnceForEveryWatch(t *testing.T) {
	var made atomic.Int64
	var closed atomic.Bool
	var hubs fanout.Hubs[string]
	newMaker := func() fanout.Maker { return counting{made: &made, closed: &closed, bad: map[int]bool{3: true}} }
	a := hubs.Attach("pods/json", 5, 0, newMaker)
	b := hubs.Attach("pods/json", 5, 0, newMaker)
	if a != b {
		t.Fatal("two watches of one key got two hubs")
	}
	ctx := context.Background()
	for _, h := range []*fanout.Hub{a, b} {
		for i := range 5 {
			got, err := h.Frame(ctx, nil, i)
			want := fmt.Sprintf("frame %d", i)
			if i == 3 {
				want = "" // unmade: the watch makes its own
			}
			if err != nil || string(got) != want {
				t.Errorf("Frame(%d) = %q, %v; want %q, nil", i, got, err, want)
			}
		}
	}
	if n := made.Load(); n != 4 {
		t.Errorf("made %d frames for two watches of 5 events (one unreadable), want 4", n)
	}
	hubs.Detach(a)
	if closed.Load() {
		t.Error("the hub stopped with a watch still attached")
	}
	hubs.Detach(b)
	if c := hubs.Attach("pods/json", 5, 4, newMaker); c == a {
		t.Error("a watch after the last left got the stopped hub")
	} else {
		hubs.Detach(c)
	}
}

func TestAHubLeavesTheFramesBeforeItsFirstWatchToEachWatch(t *testing.T) {
	var made atomic.Int64
	var closed atomic.Bool
	var hubs fanout.Hubs[int]
	h := hubs.Attach(1, 10, 6, func() fanout.Maker { return counting{made: &made, closed: &closed} })
	defer hubs.Detach(h)
	if got, err := h.Frame(context.Background(), nil, 2); got != nil || err != nil {
		t.Errorf("Frame(2) of a hub started at 6 = %q, %v; want nil, nil", got, err)
	}
	if !h.Has(2) {
		t.Error("Has(2) = false: a frame before the hub's start is never waited for")
	}
}

func TestAWatchThatClosesStopsWaitingForItsFrame(t *testing.T) {
	var hubs fanout.Hubs[int]
	block := make(chan struct{})
	h := hubs.Attach(1, 3, 0, func() fanout.Maker { return blocking{block} })
	defer func() { close(block); hubs.Detach(h) }()
	closed := make(chan struct{})
	close(closed)
	if _, err := h.Frame(context.Background(), closed, 0); !errors.Is(err, fanout.ErrClosed) {
		t.Errorf("Frame on a closed watch: %v, want %v", err, fanout.ErrClosed)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Frame(ctx, nil, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Frame on a cancelled request: %v, want %v", err, context.Canceled)
	}
}

// blocking makes no frame until block is closed.
type blocking struct{ block chan struct{} }

func (b blocking) Make(i int) ([]byte, error) { <-b.block; return []byte("late"), nil }
func (blocking) Close()                       {}
