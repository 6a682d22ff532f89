package cassettes

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"time"
)

// Repair repairs a recording (one file or a rotated recording's parts,
// named as [Open] takes them) where it was cut, as a recorder killed
// mid-way leaves it. It rewrites the file holding the
// cut, the only one or the last part, atomically and in its form (see
// [FormOf]): every entry readable before the cut, in order, then an end
// line ([EndStopped], at the interaction's last frame, or 0 for a request
// cut before its response) for each interaction still open, whichever
// part it started in. Earlier parts are not touched; a rewritten part's
// object deltas name frames of that part only.
//
// It returns how many entries (lines after the header) the rewritten
// file keeps and the IDs of the interactions it ended. A recording that
// reads to its end whole is left alone (0, nil, nil). Errors other than a
// cut ([ErrTruncated]) are returned as reading found them, and a rotated
// recording cut before its last part is refused: nothing after that cut
// can be read.
func Repair(names ...string) (kept int, ended []int, err error) {
	parts, err := Parts(names...)
	if err != nil {
		return 0, nil, err
	}
	last := parts[len(parts)-1]
	rd, err := Open(parts...)
	if err != nil {
		return 0, nil, err
	}
	type state struct {
		responded bool
		lastAt    time.Duration
		frames    int
	}
	open := map[int]*state{}
	// start is what the last part starts from: the interactions open
	// then, each as it was, the next ID and the last request's offset.
	var start map[int]state
	var startID int
	var startAt time.Duration
	var tail []Entry // the last part's entries
	nextID, lastAt := 1, time.Duration(0)
	snapshot := func() {
		start = make(map[int]state, len(open))
		for id, st := range open {
			start[id] = *st
		}
		startID, startAt = nextID, lastAt
	}
	var cut error
	for {
		e, err := rd.Next()
		if err != nil {
			cut = err
			break
		}
		if rd.sc.File() == len(parts)-1 {
			if start == nil {
				snapshot()
			}
			tail = append(tail, e)
		}
		switch {
		case e.Request != nil:
			open[e.ID] = &state{}
			nextID, lastAt = e.ID+1, e.At
		case e.Response != nil:
			open[e.ID].responded = true
		case e.Frame != nil:
			open[e.ID].lastAt = e.Frame.At
			open[e.ID].frames++
		case e.End != nil:
			delete(open, e.ID)
		}
	}
	cutPart := rd.sc.File()
	rd.Close()
	switch {
	case cut == io.EOF:
		return 0, nil, nil
	case !errors.Is(cut, ErrTruncated):
		return 0, nil, cut
	case cutPart != len(parts)-1:
		return 0, nil, fmt.Errorf("%w (part %d of %d: the parts after it cannot be read; keep the parts before it)", cut, cutPart+1, len(parts))
	}
	if start == nil { // the part holds nothing readable past its header
		snapshot()
	}
	h, err := readHeader(last)
	if err != nil {
		return 0, nil, err
	}
	form, err := FormOf(last)
	if err != nil {
		return 0, nil, err
	}
	err = WriteAtomic(last, func(out io.Writer) error {
		opts := form.options()
		opts.FlushInterval = time.Hour
		w, err := newWriter(out, h, opts, compressionOf(opts))
		if err != nil {
			return err
		}
		// The Writer goes on from where the part started: its open
		// interactions, their frame numbers (deltas name a frame by
		// its number in its interaction) and the next ID.
		w.mu.Lock()
		w.nextID, w.lastAt = startID, startAt
		for id, st := range start {
			w.open[id] = &ivState{responded: st.responded, lastAt: st.lastAt}
			if w.deltas != nil {
				w.deltas.Resume(id, st.frames)
			}
		}
		w.mu.Unlock()
		for _, e := range tail {
			if err := writeEntry(w, e); err != nil {
				w.Close()
				return err
			}
		}
		for _, id := range slices.Sorted(maps.Keys(open)) {
			if err := w.End(id, End{At: open[id].lastAt, Reason: EndStopped}); err != nil {
				w.Close()
				return err
			}
			ended = append(ended, id)
		}
		return w.Close()
	})
	if err != nil {
		return 0, nil, err
	}
	return len(tail), ended, nil
}

// writeEntry writes e to w as it was read, its interaction keeping its ID.
func writeEntry(w *Writer, e Entry) error {
	switch {
	case e.Request != nil:
		id, err := w.Request(e.At, *e.Request)
		if err == nil && id != e.ID {
			err = fmt.Errorf("cassette: request %d written as %d", e.ID, id)
		}
		return err
	case e.Response != nil:
		return w.Response(e.ID, *e.Response)
	case e.Frame != nil:
		return w.Frame(e.ID, *e.Frame)
	case e.End != nil:
		return w.End(e.ID, *e.End)
	}
	return nil
}
