package replay

import (
	"strconv"
	"sync"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/printer"
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

// tableForm is a collection's Table form: the index of its rows
// (recorded, or made when served) and the printer of the rows the index
// lacks, nil when kwrec has none for the resource or its columns are not
// the recorded ones (then only a write's row is made, of the columns
// [table.Index.AddObject] knows).
type tableForm struct {
	x *table.Index
	p table.Printer
}

// rowOf returns the name of o's row in f's index, making the row the
// first time it is asked for of an object that has none: of any object
// with a printer, else of a write.
func (vw *views) rowOf(f tableForm, t *timeline.Timeline, o *timeline.Object) table.Version {
	return vw.rowsOf(f, t, []*timeline.Object{o})[0]
}

// rowsOf is rowOf of each of objs, the objects whose rows are made read
// with one pass over the recording: read one at a time, each would
// decode a segment of a compressed cassette again (a list of a thousand
// objects of a long recording, a thousand segments).
func (vw *views) rowsOf(f tableForm, t *timeline.Timeline, objs []*timeline.Object) []table.Version {
	vs := make([]table.Version, len(objs))
	var todo []timeline.Object
	var of []int // the index in objs of each of todo
	making := map[table.Version]bool{}
	for i, o := range objs {
		vs[i] = tableVersion(t, o)
		if f.x.Has(vs[i]) || f.p == nil && !o.Ref.W && !o.Ref.Restamp || making[vs[i]] {
			// Without a printer only a write, or an object that left a
			// watch's selection, served at a resourceVersion no row was
			// recorded at, gets a row.
			continue
		}
		making[vs[i]] = true
		todo = append(todo, *o)
		of = append(of, i)
	}
	for len(todo) > 0 {
		n := min(len(todo), rowBatch)
		// An object that cannot be read gets no row; the others still do.
		_ = objects{vw.src}.Each(t, todo[:n], func(k int, raw []byte) error {
			o, v := objs[of[k]], vs[of[k]]
			if f.p != nil {
				b, err := vw.codec.Object(t, o, raw, false) // the printer reads the object as served
				if err == nil {
					f.x.AddPrinted(f.p, v, b, vw.clock.Now())
				}
				return nil
			}
			f.x.AddObject(v, raw, vw.clock.Now())
			return nil
		})
		todo, of = todo[n:], of[n:]
	}
	return vs
}

// rowBatch is how many objects rowsOf reads with one pass.
const rowBatch = 4096

// tableHasRows reports whether every object a watch sends has a recorded
// Table row: a watch is served in the Table form whole or not at all (its
// client then prints plain objects, as it does for a server without
// server-side printing). Writes to come get theirs when served.
func (vw *views) tableHasRows(f tableForm, t *timeline.Timeline, steps []timeline.Step) bool {
	var objs []*timeline.Object
	for _, s := range steps {
		o := s.Obj
		if s.Kind == timeline.StepEvent {
			o = &s.Ev.Obj
		}
		if o != nil {
			objs = append(objs, o)
		}
	}
	for _, v := range vw.rowsOf(f, t, objs) {
		if !f.x.Has(v) {
			return false
		}
	}
	return true
}

// tableForm returns the Table form of timeline t, answering for
// collection: its recorded rows, with the printer of its resource when
// kwrec has one whose columns are the recorded ones; else, with a
// printer, rows made as they are served. ok is false when kwrec cannot
// answer in the Table form: it answers in plain JSON then.
func (vw *views) tableForm(t *timeline.Timeline, collection string) (f tableForm, ok bool) {
	p := vw.printers.of(t)
	x := vw.table(t.Path)
	if x == nil {
		// A namespace answered from the all-namespaces timeline has the
		// rows recorded of it.
		x = vw.table(collection)
	}
	switch {
	case x != nil && x.Len() > 0 && p != nil && x.AdoptPrinter(p, vw.clock.Now()):
		return tableForm{x: x, p: p}, true
	case x != nil && x.Len() > 0:
		// In Overlay mode a write needs a row too: the Table form is
		// served only where kwrec can print one.
		return tableForm{x: x}, !vw.writes || x.CanAdd()
	case p != nil:
		return vw.printers.form(t, p, vw.clock.Now()), true
	}
	return tableForm{}, false
}

// printers are the [table.Printer]s of a replay's collections and the
// rows they make of collections recorded without a Table form, made
// when first asked for. A custom resource's printer is its
// CustomResourceDefinition's as the world holds it now: a changed
// definition prints anew.
type printers struct {
	world *overlay.World

	mu    sync.Mutex
	made  map[printerKey]table.Printer
	forms map[formKey]tableForm
}

// printerKey names a printer: a version of a resource's definition.
type printerKey struct {
	res, crd string
	crdRV    int64
}

type formKey struct {
	path string
	p    printerKey
}

// of returns the printer of t's resource, nil when kwrec has none: a
// custom resource whose definition the world does not hold, or a
// built-in resource whose printer is not ported.
func (ps *printers) of(t *timeline.Timeline) table.Printer {
	p, _ := ps.keyed(t)
	return p
}

func (ps *printers) keyed(t *timeline.Timeline) (table.Printer, printerKey) {
	rp := apipath.Path{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource}
	key := printerKey{res: rp.Collection()}
	d, custom := ps.world.Definition(rp)
	if custom {
		key.crd, key.crdRV = d.Name, d.RV
	}
	ps.mu.Lock()
	p, ok := ps.made[key]
	ps.mu.Unlock()
	if ok {
		return p, key
	}
	if custom {
		if def, err := d.JSON(); err == nil {
			if c, err := printer.NewCustom(def, rp.Version); err == nil {
				p = c
			}
		}
	} else if b, err := printer.NewBuiltin(key.res); err == nil {
		p = b
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.made == nil {
		ps.made = map[printerKey]table.Printer{}
	}
	// nil when the definition cannot be read, or no built-in printer is
	// ported: plain JSON, as before.
	ps.made[key] = p
	return p, key
}

// form returns the Table form of t made by p alone, kept for later views.
func (ps *printers) form(t *timeline.Timeline, p table.Printer, now time.Time) tableForm {
	_, key := ps.keyed(t)
	fk := formKey{path: t.Path, p: key}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if f, ok := ps.forms[fk]; ok {
		return f
	}
	f := tableForm{x: new(table.Index), p: p}
	f.x.AdoptPrinter(p, now)
	if ps.forms == nil {
		ps.forms = map[formKey]tableForm{}
	}
	ps.forms[fk] = f
	return f
}
