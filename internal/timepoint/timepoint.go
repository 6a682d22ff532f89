package timepoint

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors a caller may branch on, wrapped with %w.
var (
	// ErrBadPoint: a point in none of the forms [Parse] takes.
	ErrBadPoint = errors.New("bad point")
	// ErrOutside: a point before the recording's start or after its end.
	ErrOutside = errors.New("outside the recording")
	// ErrUnknownRV: rv=N where no recorded list or watch event has N.
	ErrUnknownRV = errors.New("resourceVersion not recorded")
)

// Kind is what a Point names.
type Kind uint8

// The kinds of Point.
const (
	// None: the zero Point, which its user reads as the start or the end.
	None Kind = iota
	// Offset: a duration from the recording's start.
	Offset
	// Time: a wall-clock time, compared with the recording's start.
	Time
	// RV: the point just after the recorded change with resourceVersion RV.
	RV
	// End: the recording's end.
	End
)

// Point is a place in a recording. Exactly the field of its Kind is set.
type Point struct {
	Kind   Kind
	Offset time.Duration
	Time   time.Time
	RV     int64
	text   string
}

// Forms says which forms [Parse] takes, for errors and flag help.
const Forms = "a duration from the recording's start (55m), an RFC 3339 time (2026-12-01T07:55:00Z), rv=RESOURCEVERSION or end"

// Parse parses a point: a Go duration from the recording's start ("55m",
// "1h30m", "0s"), an RFC 3339 time, "rv=12345" or "end". Errors wrap
// [ErrBadPoint].
func Parse(s string) (Point, error) {
	bad := func() (Point, error) {
		return Point{}, fmt.Errorf("%w %q: want %s", ErrBadPoint, s, Forms)
	}
	if s == "end" {
		return Point{Kind: End, text: s}, nil
	}
	if v, ok := strings.CutPrefix(s, "rv="); ok {
		rv, err := strconv.ParseInt(v, 10, 64)
		if err != nil || rv <= 0 {
			return bad()
		}
		return Point{Kind: RV, RV: rv, text: s}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return bad()
		}
		return Point{Kind: Offset, Offset: d, text: s}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Point{Kind: Time, Time: t, text: s}, nil
	}
	return bad()
}

// String returns the point as it was parsed, "" for the zero Point.
func (p Point) String() string { return p.text }

// IsZero reports whether p is the zero Point.
func (p Point) IsZero() bool { return p.Kind == None }

// Within resolves an Offset, Time or End point against a recording that
// started at start and lasts length: its offset from the start. An RV
// point needs the recording's changes; its caller resolves it. Errors wrap
// [ErrOutside] and name the recording's range.
func (p Point) Within(start time.Time, length time.Duration) (time.Duration, error) {
	d := p.Offset
	switch p.Kind {
	case None:
		return 0, nil
	case End:
		return length, nil
	case RV:
		return 0, fmt.Errorf("timepoint: %s is resolved by its caller", p)
	case Time:
		if p.Time.Before(start) {
			return 0, fmt.Errorf("%w: %s is before its start (%s)", ErrOutside, p, start.UTC().Format(time.RFC3339Nano))
		}
		d = p.Time.Sub(start)
	}
	if d > length {
		return 0, fmt.Errorf("%w: %s is %v after its start (%s), and it lasts %v (to %s)", ErrOutside, p, d,
			start.UTC().Format(time.RFC3339Nano), length, start.Add(length).UTC().Format(time.RFC3339Nano))
	}
	return d, nil
}
