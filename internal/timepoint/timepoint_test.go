package timepoint_test

import (
	"errors"
	"testing"
	"time"

	"github.com/kwrec/kwrec/internal/timepoint"
)

func TestParseTakesEachFormAndRefusesTheRest(t *testing.T) {
	bad := `: want a duration from the recording's start (55m), an RFC 3339 time (2026-12-01T07:55:00Z), rv=RESOURCEVERSION or end`
	for _, tc := range []struct {
		name, in string
		kind     timepoint.Kind
		want     string
	}{
		{"a duration", "55m", timepoint.Offset, ""},
		{"a time", "2026-12-01T07:55:00Z", timepoint.Time, ""},
		{"a resourceVersion", "rv=12345", timepoint.RV, ""},
		{"the end", "end", timepoint.End, ""},
		{"a word", "soon", 0, `bad point "soon"` + bad},
		{"a negative duration", "-5m", 0, `bad point "-5m"` + bad},
		{"a resourceVersion that is no number", "rv=abc", 0, `bad point "rv=abc"` + bad},
		{"a time without a zone", "2026-12-01T07:55:00", 0, `bad point "2026-12-01T07:55:00"` + bad},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := timepoint.Parse(tc.in)
			if tc.want == "" {
				if err != nil || p.String() != tc.in || p.Kind != tc.kind {
					t.Fatalf("Parse(%q) = %+v, %v", tc.in, p, err)
				}
				return
			}
			if err == nil || err.Error() != tc.want || !errors.Is(err, timepoint.ErrBadPoint) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestWithinResolvesAgainstTheRecordingsRange(t *testing.T) {
	start := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name, in string
		want     time.Duration
		err      string
	}{
		{"a duration inside", "30s", 30 * time.Second, ""},
		{"a time inside", "2026-12-01T07:00:45Z", 45 * time.Second, ""},
		{"the end", "end", time.Minute, ""},
		{"a duration past the end", "2m", 0, "outside the recording: 2m is 2m0s after its start (2026-12-01T07:00:00Z), and it lasts 1m0s (to 2026-12-01T07:01:00Z)"},
		{"a time before the start", "2026-12-01T06:59:00Z", 0, "outside the recording: 2026-12-01T06:59:00Z is before its start (2026-12-01T07:00:00Z)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := timepoint.Parse(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			d, err := p.Within(start, time.Minute)
			if tc.err != "" {
				if err == nil || err.Error() != tc.err || !errors.Is(err, timepoint.ErrOutside) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || d != tc.want {
				t.Fatalf("Within = %v, %v; want %v", d, err, tc.want)
			}
		})
	}
}
