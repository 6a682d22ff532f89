package cut

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Errors a caller may branch on, wrapped with %w.
var (
	// ErrBadPoint: a point that is neither a duration, an RFC 3339 time
	// nor rv=RESOURCEVERSION.
	ErrBadPoint = errors.New("bad point")
	// ErrOutside: a point before the recording's start or after its end.
	ErrOutside = errors.New("outside the recording")
	// ErrUnknownRV: rv=N where no recorded list or watch event has N.
	ErrUnknownRV = errors.New("resourceVersion not recorded")
	// ErrOrder: a window whose start is after its end.
	ErrOrder = errors.New("empty window")
)

type pointKind uint8

const (
	pointNone pointKind = iota
	pointOffset
	pointTime
	pointRV
)

// Point is a place in a recording: a duration from its start, a time, or
// a resourceVersion. The zero Point is the recording's start as a start,
// its end as an end.
type Point struct {
	kind pointKind
	d    time.Duration
	t    time.Time
	rv   int64
	text string
}

// ParsePoint parses a point: a Go duration from the recording's start
// ("55m", "1h30m", "0s"), an RFC 3339 time ("2026-12-01T07:55:00Z") or
// "rv=12345". Errors wrap [ErrBadPoint].
func ParsePoint(s string) (Point, error) {
	bad := func() (Point, error) {
		return Point{}, fmt.Errorf("%w %q: want a duration from the recording's start (55m), an RFC 3339 time (2026-12-01T07:55:00Z) or rv=RESOURCEVERSION", ErrBadPoint, s)
	}
	if v, ok := strings.CutPrefix(s, "rv="); ok {
		rv, err := strconv.ParseInt(v, 10, 64)
		if err != nil || rv <= 0 {
			return bad()
		}
		return Point{kind: pointRV, rv: rv, text: s}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d < 0 {
			return bad()
		}
		return Point{kind: pointOffset, d: d, text: s}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Point{kind: pointTime, t: t, text: s}, nil
	}
	return bad()
}

// String returns the point as it was parsed, "" for the zero Point.
func (p Point) String() string { return p.text }

// IsZero reports whether p is the zero Point.
func (p Point) IsZero() bool { return p.kind == pointNone }
