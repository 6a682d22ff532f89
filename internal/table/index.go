package table

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/kwrec/kwrec/internal/wire"
)

// Errors AddList and AddWatchEvent wrap.
var (
	// ErrNotTable means a body or watch event object is not a
	// meta.k8s.io Table: it was recorded without the Table Accept header.
	ErrNotTable = errors.New("not a meta.k8s.io Table; record it with kubectl's Accept header (application/json;as=Table;v=v1;g=meta.k8s.io)")
	// ErrNoRowObject means a row carries no object metadata, so it cannot
	// be keyed: the Table was recorded with includeObject=None.
	ErrNoRowObject = errors.New("table row has no object metadata; record the Table without includeObject (the default is Metadata)")
)

// Version names one version of one object: Key is "namespace/name" (""
// namespace for cluster-scoped objects), RV its metadata.resourceVersion.
type Version struct {
	Key string
	RV  string
}

// row is one recorded Table row, stored once: the cells array's JSON
// followed by the JSON of the row object's metadata. The object itself is
// always a PartialObjectMetadata, so kind and apiVersion are rebuilt for
// the Table version asked (the server writes the Table's own group
// version there).
type row struct {
	b     []byte
	split int // b[:split] is the cells, b[split:] the metadata
}

func (r row) cells() []byte    { return r.b[:r.split] }
func (r row) metadata() []byte { return r.b[r.split:] }

// Index holds the Table rows recorded for one collection, keyed by
// [Version], and the collection's column definitions. The zero Index is
// empty and ready to use. Its methods are safe for concurrent use.
type Index struct {
	mu sync.RWMutex
	// columns is the first columnDefinitions array seen, as recorded.
	columns []byte
	rows    map[Version]row
	// bookmarkCells is the cells array of the first recorded Table
	// BOOKMARK: what the resource's printer makes of an object with no
	// name, which only the server knows (ConfigMaps: ["",0,"<unknown>"]).
	bookmarkCells []byte
}

// tableJSON is a Table as recorded, its parts left raw.
type tableJSON struct {
	Kind              string            `json:"kind"`
	APIVersion        string            `json:"apiVersion"`
	ColumnDefinitions json.RawMessage   `json:"columnDefinitions"`
	Rows              []json.RawMessage `json:"rows"`
}

// rowJSON is a row as recorded.
type rowJSON struct {
	Cells  json.RawMessage `json:"cells"`
	Object struct {
		Metadata json.RawMessage `json:"metadata"`
	} `json:"object"`
}

// AddList indexes the rows of a Table list body (the answer to a list
// with the Table Accept header). Rows already indexed under the same
// [Version] are kept as first seen. It returns an error wrapping
// [ErrNotTable] or [ErrNoRowObject] for a body it cannot index, and
// indexes nothing from it then.
func (x *Index) AddList(body []byte) error {
	t, err := parseTable(body)
	if err != nil {
		return err
	}
	return x.addTable(t)
}

// addTable indexes a Table's rows and keeps its columns if first.
func (x *Index) addTable(t tableJSON) error {
	rows, err := parseRows(t.Rows)
	if err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addColumns(t.ColumnDefinitions)
	for v, r := range rows {
		x.addRow(v, r)
	}
	return nil
}

// AddWatchEvent indexes the row of one JSON watch event line from a watch
// with the Table Accept header: {"type":T,"object":{Table with one row}}.
// A BOOKMARK's row only serves as the template of [Index.Bookmark]; an
// ERROR event (its object is a Status, never a Table) is ignored. Both
// return nil. Errors are as for [Index.AddList].
func (x *Index) AddWatchEvent(line []byte) error {
	typ, start, end, err := wire.SplitWatchEventJSON(line)
	if err != nil {
		return fmt.Errorf("watch event: %w", err)
	}
	if typ == "ERROR" {
		return nil
	}
	t, err := parseTable(line[start:end])
	if err != nil {
		return fmt.Errorf("%s watch event: %w", typ, err)
	}
	if typ == "BOOKMARK" {
		x.addBookmark(t)
		return nil
	}
	if err := x.addTable(t); err != nil {
		return fmt.Errorf("%s watch event: %w", typ, err)
	}
	return nil
}

func (x *Index) addBookmark(t tableJSON) {
	var r rowJSON
	if len(t.Rows) != 1 || json.Unmarshal(t.Rows[0], &r) != nil || len(r.Cells) == 0 {
		return
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	x.addColumns(t.ColumnDefinitions)
	if x.bookmarkCells == nil {
		x.bookmarkCells = bytes.Clone(r.Cells)
	}
}

// addColumns keeps the first column definitions seen; watch events after
// the first carry null.
func (x *Index) addColumns(cols json.RawMessage) {
	if x.columns == nil && len(cols) > 0 && !bytes.Equal(cols, []byte("null")) {
		x.columns = bytes.Clone(cols)
	}
}

func (x *Index) addRow(v Version, r row) {
	if x.rows == nil {
		x.rows = make(map[Version]row)
	}
	if _, ok := x.rows[v]; !ok {
		x.rows[v] = r
	}
}

// Has reports whether a row of v was recorded.
func (x *Index) Has(v Version) bool {
	x.mu.RLock()
	defer x.mu.RUnlock()
	_, ok := x.rows[v]
	return ok
}

// Len returns how many rows are indexed.
func (x *Index) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.rows)
}

func parseTable(body []byte) (tableJSON, error) {
	var t tableJSON
	if err := json.Unmarshal(body, &t); err != nil {
		return t, fmt.Errorf("table is not JSON: %v", err)
	}
	if t.Kind != "Table" || (t.APIVersion != string(V1) && t.APIVersion != string(V1beta1)) {
		return t, fmt.Errorf("%w: got kind %q, apiVersion %q", ErrNotTable, t.Kind, t.APIVersion)
	}
	return t, nil
}

// parseRows keys each row by its object's metadata and copies its cells
// and metadata into one slice, so the recorded body is not retained.
func parseRows(raws []json.RawMessage) (map[Version]row, error) {
	rows := make(map[Version]row, len(raws))
	for i, raw := range raws {
		var r rowJSON
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("row %d: %v", i, err)
		}
		if len(r.Object.Metadata) == 0 {
			return nil, fmt.Errorf("row %d: %w", i, ErrNoRowObject)
		}
		var m struct {
			Name, Namespace, ResourceVersion string
		}
		if err := json.Unmarshal(r.Object.Metadata, &m); err != nil || m.Name == "" || m.ResourceVersion == "" {
			return nil, fmt.Errorf("row %d: %w", i, ErrNoRowObject)
		}
		b := make([]byte, 0, len(r.Cells)+len(r.Object.Metadata))
		b = append(append(b, r.Cells...), r.Object.Metadata...)
		v := Version{Key: m.Namespace + "/" + m.Name, RV: m.ResourceVersion}
		if _, ok := rows[v]; !ok {
			rows[v] = row{b: b, split: len(r.Cells)}
		}
	}
	return rows, nil
}
