package cut

import (
	"fmt"
	"time"
)

// place resolves p as a window's start (start true) or end: the index of
// the first line after it and its offset from the recording's start.
func (r *Recording) place(p Point, start bool) (idx int, at time.Duration, err error) {
	d := p.d
	switch p.kind {
	case pointNone:
		if start {
			return 0, 0, nil
		}
		return len(r.lines), r.end, nil
	case pointRV:
		for i := range r.lines {
			if r.rvOf(i) != p.rv {
				continue
			}
			if v := r.lines[i].in; !v.watch && v.end > i {
				i = v.end // a list recorded it once it is whole
			}
			return i + 1, r.lines[i].mono, nil
		}
		return 0, 0, fmt.Errorf("%w: %s: no recorded list or watch event has resourceVersion %d", ErrUnknownRV, p, p.rv)
	case pointTime:
		if p.t.Before(r.Header.RecordedAt) {
			return 0, 0, fmt.Errorf("%w: %s is before its start (%s)", ErrOutside, p, r.Header.RecordedAt.UTC().Format(time.RFC3339Nano))
		}
		d = p.t.Sub(r.Header.RecordedAt)
	}
	if d > r.end {
		return 0, 0, fmt.Errorf("%w: %s is %v after its start, and it lasts %v", ErrOutside, p, d, r.end)
	}
	idx = len(r.lines)
	for i := range r.lines {
		if r.lines[i].mono > d {
			idx = i
			break
		}
	}
	return idx, d, nil
}

// window resolves from and to.
func (r *Recording) window(from, to Point) (w span, err error) {
	if w.from, w.t1, err = r.place(from, true); err != nil {
		return w, err
	}
	if w.to, w.t2, err = r.place(to, false); err != nil {
		return w, err
	}
	if w.t1 > w.t2 || w.from > w.to {
		return w, fmt.Errorf("%w: from %s (%v after the start) is after to %s (%v)", ErrOrder, from, w.t1, to, w.t2)
	}
	return w, nil
}

// span is a window as lines and times: lines [from, to), between t1
// and t2 from the recording's start.
type span struct {
	from, to int
	t1, t2   time.Duration
}
