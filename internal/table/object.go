package table

import (
	"encoding/json"
	"reflect"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

// AddObject makes the row of an object that was never recorded in the
// Table form (one the code under test wrote), from its JSON, as the API
// server's printer would: it knows the columns Name, Age (as of now),
// Data (a ConfigMap's or Secret's count of data and binaryData keys) and
// Type (a Secret's). It reports false, and adds nothing, when the index
// has no column definitions or one it cannot compute.
func (x *Index) AddObject(v Version, obj []byte, now time.Time) bool {
	var o struct {
		Metadata   json.RawMessage
		Data       map[string]json.RawMessage
		BinaryData map[string]json.RawMessage
		Type       string
	}
	if json.Unmarshal(obj, &o) != nil || len(o.Metadata) == 0 {
		return false
	}
	var m metav1.ObjectMeta
	if json.Unmarshal(o.Metadata, &m) != nil {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	cols, ok := x.computable()
	if !ok {
		return false
	}
	cells := make([]any, len(cols))
	for i, c := range cols {
		switch c.Name {
		case "Name":
			cells[i] = m.Name
		case "Age":
			cells[i] = "<unknown>"
			if !m.CreationTimestamp.IsZero() {
				cells[i] = duration.HumanDuration(now.Sub(m.CreationTimestamp.Time))
			}
		case "Data":
			cells[i] = len(o.Data) + len(o.BinaryData)
		case "Type":
			cells[i] = o.Type
		default:
			return false
		}
	}
	cb, err := json.Marshal(cells)
	if err != nil {
		return false
	}
	// The row's object is the object's metadata, as the server's
	// PartialObjectMetadata conversion keeps it.
	x.addRow(v, row{b: append(cb, o.Metadata...), split: len(cb)})
	return true
}

// CanAdd reports whether [Index.AddObject] can make rows: the index has
// column definitions, all of them ones it computes.
func (x *Index) CanAdd() bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.computable()
	return ok
}

func (x *Index) computable() ([]metav1.TableColumnDefinition, bool) {
	var cols []metav1.TableColumnDefinition
	if x.columns == nil || json.Unmarshal(x.columns, &cols) != nil {
		return nil, false
	}
	for _, c := range cols {
		switch c.Name {
		case "Name", "Age", "Data", "Type":
		default:
			return nil, false
		}
	}
	return cols, true
}

// Printer prints an object's Table row as the API server's table
// convertor for its resource does: for a custom resource, the server's
// own convertor over its CustomResourceDefinition's printer columns; for
// a built-in kind, a port of the server's printer. An [Index] asks it for
// the rows the recording holds none of.
type Printer interface {
	// Columns returns the column definitions, the JSON array the server
	// sends as a Table's columnDefinitions.
	Columns() []byte
	// Cells returns the JSON array of the cells of the row of obj, an
	// object's JSON, its ages as of now.
	Cells(obj []byte, now time.Time) ([]byte, error)
}

// emptyObject is what a printer is given for a BOOKMARK's row: the server
// prints the bookmark's object, empty but for its resourceVersion.
const emptyObject = `{"metadata":{}}`

// AdoptPrinter makes p the maker of the rows the index lacks: an index
// without column definitions takes p's, and without a recorded BOOKMARK
// row the cells p prints of an empty object. It reports whether p's rows
// fit the index, its column definitions equal p's; they do not when the
// Table form was recorded from a server whose printer differs (a
// CustomResourceDefinition changed since).
func (x *Index) AdoptPrinter(p Printer, now time.Time) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.columns == nil {
		x.columns = p.Columns()
	} else if !sameColumns(x.columns, p.Columns()) {
		return false
	}
	if x.bookmarkCells == nil {
		if cells, err := p.Cells([]byte(emptyObject), now); err == nil {
			x.bookmarkCells = cells
		}
	}
	return true
}

// sameColumns reports whether two columnDefinitions arrays define the
// same columns, however their JSON is spelled.
func sameColumns(a, b []byte) bool {
	var ca, cb []metav1.TableColumnDefinition
	if json.Unmarshal(a, &ca) != nil || json.Unmarshal(b, &cb) != nil {
		return false
	}
	return reflect.DeepEqual(ca, cb)
}

// AddPrinted makes the row of an object the recording holds no Table row
// of, from its JSON, with p, which [Index.AdoptPrinter] has made the
// index's; ages are as of now. It reports false, and adds nothing, when p
// cannot print obj.
func (x *Index) AddPrinted(p Printer, v Version, obj []byte, now time.Time) bool {
	var o struct{ Metadata json.RawMessage }
	if json.Unmarshal(obj, &o) != nil || len(o.Metadata) == 0 {
		return false
	}
	cells, err := p.Cells(obj, now)
	if err != nil {
		return false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addRow(v, row{b: append(cells, o.Metadata...), split: len(cells)})
	return true
}
