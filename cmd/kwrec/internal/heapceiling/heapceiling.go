package heapceiling

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// Options are a [Ceiling]'s settings.
type Options struct {
	// Floor is the lowest limit set: a heap below it is left to GOGC.
	Floor int64
	// Margin is how much the heap may grow over the live heap, as a
	// fraction of it (0.3: 30%), before the runtime collects.
	Margin float64
	// Overhead is added to the limit for what the runtime holds beside
	// the heap (stacks, its own structures), which the limit counts.
	Overhead int64
	// Adjusted, if not nil, is called after each change of the limit
	// with the live heap and the new limit (tests wait on it).
	Adjusted func(live, limit int64)
}

// Limit returns the memory limit o sets for a live heap of live bytes.
func (o Options) Limit(live int64) int64 {
	l := float64(live)*(1+o.Margin) + float64(o.Overhead)
	if l >= math.MaxInt64 {
		return math.MaxInt64
	}
	return max(o.Floor, int64(l))
}

// Chosen reports whether the user chose the collector's settings through
// the GOGC or GOMEMLIMIT environment variables, which a Ceiling must then
// leave alone.
func Chosen() bool {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	return gogc || limit
}

// Ceiling moves the runtime's soft memory limit after each garbage
// collection; see the package doc.
type Ceiling struct {
	o      Options
	before int64 // the limit before Start

	mu      sync.Mutex
	stopped bool
	sample  []metrics.Sample
}

// sentinel is an object nothing refers to: its cleanup runs after the
// collection that finds it unreachable, and allocates the next.
type sentinel struct{ _ *byte }

// Start sets the limit for the heap live now and moves it after every
// collection until [Ceiling.Stop].
func Start(o Options) *Ceiling {
	c := &Ceiling{o: o, before: debug.SetMemoryLimit(-1), sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	c.adjust()
	c.arm()
	return c
}

// arm makes the next collection call cycle.
func (c *Ceiling) arm() {
	runtime.AddCleanup(&sentinel{}, func(c *Ceiling) { c.cycle() }, c)
}

// cycle runs after a collection.
func (c *Ceiling) cycle() {
	if c.adjust() {
		c.arm()
	}
}

// adjust sets the limit for the live heap, and reports false once
// stopped.
func (c *Ceiling) adjust() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return false
	}
	metrics.Read(c.sample)
	var live int64
	if s := c.sample[0]; s.Value.Kind() == metrics.KindUint64 {
		live = int64(min(s.Value.Uint64(), math.MaxInt64))
	}
	limit := c.o.Limit(live)
	debug.SetMemoryLimit(limit)
	if c.o.Adjusted != nil {
		c.o.Adjusted(live, limit)
	}
	return true
}

// Stop stops moving the limit and sets it back to what it was before
// Start. A second Stop does nothing.
func (c *Ceiling) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return
	}
	c.stopped = true
	debug.SetMemoryLimit(c.before)
}
