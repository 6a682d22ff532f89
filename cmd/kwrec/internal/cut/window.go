package cut

import (
	"fmt"
	"time"

	"github.com/kwrec/kwrec/internal/timepoint"
)

// place resolves p as a window's start (start true) or end: the index of
// the first line after it and its offset from the recording's start.
func (r *Recording) place(p timepoint.Point, start bool) (idx int, at time.Duration, err error) {
	switch p.Kind {
	case timepoint.None:
		if start {
			return 0, 0, nil
		}
		return r.lines.Len(), r.end, nil
	case timepoint.RV:
		for i := range r.lines.Len() {
			if r.rvOf(i) != p.RV {
				continue
			}
			if v := r.ivOf(r.lines.At(i)); !v.watch && v.end > i {
				i = v.end // a list recorded it once it is whole
			}
			return i + 1, r.lines.At(i).mono, nil
		}
		return 0, 0, fmt.Errorf("%w: %s: no recorded list or watch event has resourceVersion %d", timepoint.ErrUnknownRV, p, p.RV)
	}
	d, err := p.Within(r.Header.RecordedAt, r.end)
	if err != nil {
		return 0, 0, err
	}
	idx = r.lines.Len()
	for i := range r.lines.Len() {
		if r.lines.At(i).mono > d {
			idx = i
			break
		}
	}
	return idx, d, nil
}

// window resolves from and to.
func (r *Recording) window(from, to timepoint.Point) (w span, err error) {
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
