package table

import (
	"encoding/json"
	"strconv"

	"github.com/kwrec/kwrec/internal/wire"
)

// List returns a Table list body in gv ("" means [V1]) with the rows of
// versions in the given order, as the API server answers a list with the
// Table Accept header: metadata carries rv, and cont and remaining when
// cont is not empty (remaining may be nil, as the server omits it when it
// does not know). ok is false when the index has no column definitions or
// no row for one of versions; the caller then answers in plain JSON.
func (x *Index) List(gv GroupVersion, rv, cont string, remaining *int64, versions []Version) (body []byte, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.columns == nil {
		return nil, false
	}
	rows := make([]row, len(versions))
	n := 256 + len(x.columns)
	for i, v := range versions {
		r, found := x.rows[v]
		if !found {
			return nil, false
		}
		rows[i] = r
		n += len(r.b) + 96
	}
	b := make([]byte, 0, n)
	b = appendHead(b, gv, rv)
	if cont != "" {
		b = append(b, `,"continue":`...)
		b = appendString(b, cont)
		if remaining != nil {
			b = append(b, `,"remainingItemCount":`...)
			b = strconv.AppendInt(b, *remaining, 10)
		}
	}
	b = append(b, `},"columnDefinitions":`...)
	b = append(b, x.columns...)
	b = append(b, `,"rows":[`...)
	for i, r := range rows {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRow(b, gv, r.cells(), r.metadata())
	}
	return append(b, "]}\n"...), true
}

// Get returns the Table body answering a get of one object with the
// Table Accept header: one row, the column definitions, and the object's
// resourceVersion as the Table's. ok is false as for [Index.List].
func (x *Index) Get(gv GroupVersion, v Version) (body []byte, ok bool) {
	return x.oneRow(gv, "", v, true)
}

// WatchEvent returns the JSON watch event line of type typ for version v,
// as the API server streams it to a watch with the Table Accept header:
// {"type":typ,"object":Table} with one row and the object's
// resourceVersion as the Table's. The server sends the column
// definitions in the first event of a watch only, whatever its type, and
// "columnDefinitions":null in every later one (it sets the TableOptions'
// noHeaders after encoding the first); first says which this is. ok is
// false when v has no recorded row or the index no column definitions.
func (x *Index) WatchEvent(gv GroupVersion, typ string, v Version, first bool) (line []byte, ok bool) {
	return x.oneRow(gv, typ, v, first)
}

// oneRow returns the Table of version v's row alone, the object's
// resourceVersion as the Table's, with the column definitions when
// columns (else "columnDefinitions":null): in a watch event of type typ,
// or as a body when typ is "". ok is false as for [Index.WatchEvent].
func (x *Index) oneRow(gv GroupVersion, typ string, v Version, columns bool) ([]byte, bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	r, found := x.rows[v]
	if !found || x.columns == nil {
		return nil, false
	}
	b := make([]byte, 0, len(r.b)+len(x.columns)+256)
	if typ == "" {
		b = append(appendHead(b, gv, v.RV), '}')
	} else {
		b = appendEventHead(b, typ, gv, v.RV)
	}
	b = x.appendColumns(b, columns)
	b = append(b, `,"rows":[`...)
	b = appendRow(b, gv, r.cells(), r.metadata())
	b = append(b, "]}"...)
	if typ != "" {
		b = append(b, '}')
	}
	return append(b, '\n'), true
}

// Bookmark returns a BOOKMARK event line at rv as the API server streams
// it to a watch with the Table Accept header. Unlike a plain bookmark
// (an object of the watched kind with only metadata.resourceVersion), it
// is a Table with one row: the printer's cells for an empty object and a
// PartialObjectMetadata holding only the resourceVersion, plus the
// k8s.io/initial-events-end annotation when initialEnd. Column
// definitions follow first as in [Index.WatchEvent]. The cells are only
// known from a recorded Table bookmark ([Index.AddWatchEvent] keeps the
// first); without one ok is false, and the caller may leave the bookmark
// out, as a server may.
func (x *Index) Bookmark(gv GroupVersion, rv string, initialEnd, first bool) (line []byte, ok bool) {
	x.mu.RLock()
	defer x.mu.RUnlock()
	if x.bookmarkCells == nil || x.columns == nil {
		return nil, false
	}
	meta := appendString([]byte(`{"resourceVersion":`), rv)
	if initialEnd {
		meta = append(meta, `,"annotations":{"`+wire.InitialEventsEnd+`":"true"}`...)
	}
	meta = append(meta, '}')
	b := make([]byte, 0, len(x.columns)+len(x.bookmarkCells)+len(meta)+256)
	b = appendEventHead(b, "BOOKMARK", gv, rv)
	b = x.appendColumns(b, first)
	b = append(b, `,"rows":[`...)
	b = appendRow(b, gv, x.bookmarkCells, meta)
	return append(b, "]}}\n"...), true
}

// appendHead opens a Table and its metadata, leaving the metadata open.
func appendHead(b []byte, gv GroupVersion, rv string) []byte {
	b = append(b, `{"kind":"Table","apiVersion":`...)
	b = appendString(b, string(gv.orV1()))
	b = append(b, `,"metadata":{"resourceVersion":`...)
	return appendString(b, rv)
}

// appendEventHead opens a watch event and its Table up to the metadata's
// end.
func appendEventHead(b []byte, typ string, gv GroupVersion, rv string) []byte {
	b = append(b, `{"type":`...)
	b = appendString(b, typ)
	b = append(b, `,"object":`...)
	b = appendHead(b, gv, rv)
	return append(b, '}')
}

func (x *Index) appendColumns(b []byte, first bool) []byte {
	b = append(b, `,"columnDefinitions":`...)
	if !first {
		return append(b, "null"...)
	}
	return append(b, x.columns...)
}

// appendRow writes a row whose object is a PartialObjectMetadata in the
// Table's group version, as the server converts it.
func appendRow(b []byte, gv GroupVersion, cells, meta []byte) []byte {
	b = append(b, `{"cells":`...)
	b = append(b, cells...)
	b = append(b, `,"object":{"kind":"PartialObjectMetadata","apiVersion":`...)
	b = appendString(b, string(gv.orV1()))
	b = append(b, `,"metadata":`...)
	b = append(b, meta...)
	return append(b, "}}"...)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
