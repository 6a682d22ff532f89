package replay

import (
	"fmt"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/overlay"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/timepoint"
	"github.com/kwrec/kwrec/replay/internal/worldclock"
)

// WorldClock controls the world clock of a replay made with
// [Options.WorldClock]: every client of the replay sees the recorded
// cluster as it was at the time the world is at. Its methods are safe for
// concurrent use.
type WorldClock struct {
	c      *worldclock.Clock
	world  *overlay.World
	ivs    []*ivState
	header cassettes.Header
}

// WorldState is where a replay's world is and how it moves.
type WorldState struct {
	// At is where the world is, from the recording's start; Time is the
	// same as a wall-clock time of the recording.
	At   time.Duration
	Time time.Time
	// Length is the recording's length: the world stops at its end.
	Length time.Duration
	// Speed is how many recorded seconds pass in a wall second; 0 holds
	// the world.
	Speed  float64
	Paused bool
}

// WorldClock returns the control of r's world clock, nil for a replay on
// the consumption clock (without [Options.WorldClock]).
func (r *Replayer) WorldClock() *WorldClock { return r.wc }

// State returns where the world is and how it moves.
func (w *WorldClock) State() WorldState {
	s := w.c.State()
	return WorldState{At: s.At, Time: w.header.RecordedAt.Add(s.At), Length: s.Length, Speed: s.Speed, Paused: s.Paused}
}

// Play lets the world run on at its speed.
func (w *WorldClock) Play() { w.c.Play() }

// Pause holds the world where it is.
func (w *WorldClock) Pause() { w.c.Pause() }

// SetSpeed sets how many recorded seconds pass in a wall second; 0 holds
// the world where it is.
func (w *WorldClock) SetSpeed(s float64) error { return w.c.SetSpeed(s) }

// Seek moves the world to point (see [Options.At] for its syntax),
// forward or back, and returns the writes the move back drops: in
// [WritesOverlay] mode, those made after the last change recorded by the
// new time, as kubectl names them ("create configmaps default/w
// (resourceVersion 102001)"). Moving forward, every open watch sends
// the recorded changes it passes at once; moving back, every open watch
// ends with a 410 Expired ERROR event, and its client re-lists at the new
// time.
func (w *WorldClock) Seek(point string) (dropped []string, err error) {
	at, err := w.resolvePoint(point)
	if err != nil {
		return nil, err
	}
	if err := w.c.Seek(at); err != nil {
		return nil, err
	}
	return w.sync(), nil
}

// newWorldClock sets r's world clock up (Options.WorldClock): the world at
// opts.At, which its bodies wait on.
func newWorldClock(r *Replayer) (*WorldClock, error) {
	w := &WorldClock{world: r.world, ivs: r.ivs, header: r.hist.header}
	at, err := w.resolvePoint(r.opts.At)
	if err != nil {
		return nil, err
	}
	w.c = worldclock.New(r.clock, at, w.length(), r.opts.Speed, r.opts.Paused)
	w.sync()
	return w, nil
}

// length is the recording's: the latest time anything in it was recorded.
func (w *WorldClock) length() time.Duration {
	var end time.Duration
	for _, t := range w.world.Distinct() {
		end = max(end, t.Span())
	}
	for _, iv := range w.ivs {
		in := iv.in
		at := in.At
		if in.Response != nil {
			at += in.Response.Latency
		}
		if in.End != nil {
			at += in.End.At
		}
		end = max(end, at)
	}
	return end
}

// resolvePoint resolves point, as Options.At takes it, to a time in the
// recording.
func (w *WorldClock) resolvePoint(point string) (time.Duration, error) {
	if point == "" {
		return 0, nil
	}
	p, err := timepoint.Parse(point)
	if err != nil {
		return 0, fmt.Errorf("kwrec replay: %w", err)
	}
	length := w.length()
	if p.Kind != timepoint.RV {
		d, err := p.Within(w.header.RecordedAt, length)
		if err != nil {
			return 0, fmt.Errorf("kwrec replay: %w", err)
		}
		return d, nil
	}
	at, found := time.Duration(0), false
	for _, t := range w.world.Distinct() {
		if a, ok := t.AtOfRV(p.RV); ok && (!found || a < at) {
			at, found = a, true
		}
	}
	if !found {
		return 0, fmt.Errorf("kwrec replay: %w: %s: no recorded list or watch event has resourceVersion %d", timepoint.ErrUnknownRV, p, p.RV)
	}
	return at, nil
}

// sync moves every timeline's now to where the world is, and returns
// the writes a move back dropped.
func (w *WorldClock) sync() (dropped []string) {
	at := w.c.Now()
	for _, t := range w.world.All() {
		if t.Broken() != "" {
			continue
		}
		for _, ev := range t.SetNow(at) {
			dropped = append(dropped, droppedWrite(t, ev))
		}
	}
	return dropped
}

// droppedWrite names a write a seek back dropped, as kubectl would:
// "create configmaps default/w (resourceVersion 102001)".
func droppedWrite(t *timeline.Timeline, ev timeline.Event) string {
	verb := map[string]string{"ADDED": "create", "DELETED": "delete"}[ev.Type]
	if verb == "" {
		verb = "update"
	}
	res := t.Res.Resource
	if t.Res.Group != "" {
		res += "." + t.Res.Group
	}
	return fmt.Sprintf("%s %s %s (resourceVersion %d)", verb, res, strings.TrimPrefix(ev.Obj.Key, "/"), ev.Obj.RV)
}
