package replay

import (
	"strconv"
	"sync"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// kubectl's Table form of a collection (server-side printing): the rows
// recorded of it, read on first use, and the rows of writes made when
// served.

// tableFeed is a recorded Table-form list or watch of a collection.
type tableFeed struct {
	in    *cassettes.Interaction
	watch bool
	rvs   []int64 // per watch frame: the resourceVersion of its row
}

func (f *tableFeed) observe(fr cassettes.Frame) {
	if f.watch {
		// The Table's resourceVersion comes first: its row's object's.
		f.rvs = append(f.rvs, wire.ScanRV(fr.Data))
	}
}

// tableSet is kubectl's Table form of a collection: the rows of its
// recorded Table-form lists and watches, read on first use. Parsing every
// row when the cassette is opened took a fifth of the open of a recording
// of 2,000 ConfigMaps and 1,200 changes, for a form only kubectl asks for.
type tableSet struct {
	feeds []*tableFeed
	once  sync.Once
	x     *table.Index
}

// index returns the set's rows, reading them from src the first time. A
// frame that cannot be read or indexed adds no row, as when it was read
// at open.
func (s *tableSet) index(src indexSource) *table.Index {
	s.once.Do(func() {
		s.x = new(table.Index)
		for _, f := range s.feeds {
			it, err := src.frames(f.in, 0)
			if err != nil {
				continue
			}
			var list []byte
			for {
				data, err := it.next()
				if err != nil {
					break
				}
				if f.watch {
					s.x.AddWatchEvent(data)
				} else {
					list = append(list, data...)
				}
			}
			it.close()
			if len(list) > 0 {
				s.x.AddList(list)
			}
		}
	})
	return s.x
}

// table returns the Table rows recorded for the collection at path, nil
// when none were.
func (vw *views) table(path string) *table.Index {
	if s := vw.tables[path]; s != nil {
		return s.index(vw.src)
	}
	return nil
}

// tableVersion names an object's row in a table index: by its recorded
// resourceVersion (a timeline that takes writes serves them scaled), or
// for a write its own.
func tableVersion(t *timeline.Timeline, o *timeline.Object) table.Version {
	rv := o.RV
	if !o.Ref.W {
		rv = t.Recorded(rv)
	}
	return table.Version{Key: o.Key, RV: strconv.FormatInt(rv, 10)}
}

// rowOf returns the name of o's row in x, making the row of a write the
// first time it is asked for.
func (vw *views) rowOf(x *table.Index, t *timeline.Timeline, o *timeline.Object) table.Version {
	v := tableVersion(t, o)
	if (o.Ref.W || o.Ref.Restamp) && !x.Has(v) {
		// A write, or an object that left a watch's selection, served at
		// a resourceVersion no row was recorded at.
		raws, err := objects{vw.src}.raws(t, []timeline.Object{*o})
		if err == nil {
			x.AddObject(v, raws[0], vw.clock.Now())
		}
	}
	return v
}

// tableHasRows reports whether every object a watch sends has a recorded
// Table row: a watch is served in the Table form whole or not at all (its
// client then prints plain objects, as it does for a server without
// server-side printing). Writes to come get theirs when served.
func (vw *views) tableHasRows(x *table.Index, t *timeline.Timeline, steps []timeline.Step) bool {
	for _, s := range steps {
		o := s.Obj
		if s.Kind == timeline.StepEvent {
			o = &s.Ev.Obj
		}
		if o != nil && !x.Has(vw.rowOf(x, t, o)) {
			return false
		}
	}
	return true
}
