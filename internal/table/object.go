package table

import (
	"encoding/json"
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
