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
	sc := repairScan{open: map[int]*repairState{}, nextID: 1}
	cut := sc.read(rd, len(parts)-1)
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
	if sc.start == nil { // the part holds nothing readable past its header
		sc.snapshot()
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
		return sc.rewrite(out, h, form, &ended)
	})
	if err != nil {
		return 0, nil, err
	}
	return len(sc.tail), ended, nil
}

// repairState is an interaction open where [Repair] has read to.
type repairState struct {
	responded bool
	lastAt    time.Duration
	frames    int
}

// repairScan is what [Repair] reads of a recording up to its cut.
type repairScan struct {
	open map[int]*repairState
	// start is what the last part starts from: the interactions open
	// then, each as it was, the next ID and the last request's offset.
	start   map[int]repairState
	startID int
	startAt time.Duration
	tail    []Entry // the last part's entries
	nextID  int
	lastAt  time.Duration
}

// snapshot records what the last part starts from: the interactions
// open now, the next ID and the last request's offset.
func (sc *repairScan) snapshot() {
	sc.start = make(map[int]repairState, len(sc.open))
	for id, st := range sc.open {
		sc.start[id] = *st
	}
	sc.startID, sc.startAt = sc.nextID, sc.lastAt
}

// read reads rd to its end or its cut, tracking the open interactions and
// keeping the entries of part lastPart, and returns the error that ended
// the reading (io.EOF at the end).
func (sc *repairScan) read(rd *Reader, lastPart int) error {
	for {
		e, err := rd.Next()
		if err != nil {
			return err
		}
		if rd.sc.File() == lastPart {
			if sc.start == nil {
				sc.snapshot()
			}
			sc.tail = append(sc.tail, e)
		}
		switch {
		case e.Request != nil:
			sc.open[e.ID] = &repairState{}
			sc.nextID, sc.lastAt = e.ID+1, e.At
		case e.Response != nil:
			sc.open[e.ID].responded = true
		case e.Frame != nil:
			sc.open[e.ID].lastAt = e.Frame.At
			sc.open[e.ID].frames++
		case e.End != nil:
			delete(sc.open, e.ID)
		}
	}
}

// rewrite writes the last part anew to out, with header h in form: the
// entries read of it, then an end for each interaction still open, whose
// IDs it appends to ended.
func (sc *repairScan) rewrite(out io.Writer, h Header, form Form, ended *[]int) error {
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
	w.nextID, w.lastAt = sc.startID, sc.startAt
	for id, st := range sc.start {
		w.open[id] = &ivState{responded: st.responded, lastAt: st.lastAt}
		if w.deltas != nil {
			w.deltas.Resume(id, st.frames)
		}
	}
	w.mu.Unlock()
	for _, e := range sc.tail {
		if err := writeEntry(w, e); err != nil {
			w.Close()
			return err
		}
	}
	for _, id := range slices.Sorted(maps.Keys(sc.open)) {
		if err := w.End(id, End{At: sc.open[id].lastAt, Reason: EndStopped}); err != nil {
			w.Close()
			return err
		}
		*ended = append(*ended, id)
	}
	return w.Close()
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
