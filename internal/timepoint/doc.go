// Package timepoint is a place in a recording as a person names it: a
// duration from its start ("55m"), an RFC 3339 time
// ("2026-12-01T07:55:00Z"), the resourceVersion of a recorded change
// ("rv=12345"), or its end ("end"). kwrec cut, diff and serve --at take
// the same syntax; each resolves a Point against its own view of the
// recording (its lines, its timelines).
//
//	p, err := timepoint.Parse("rv=12345")
//	if errors.Is(err, timepoint.ErrBadPoint) { ... }
//	switch p.Kind {
//	case timepoint.Offset: // p.Offset
//	case timepoint.Time:   // p.Time
//	case timepoint.RV:     // p.RV
//	case timepoint.End:
//	}
package timepoint
