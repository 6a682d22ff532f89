package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	kjson "sigs.k8s.io/json"
)

// WatchEventJSON is a JSON watch event line for an object's JSON.
func WatchEventJSON(typ string, obj []byte) []byte {
	b := make([]byte, 0, len(obj)+32)
	b = append(b, `{"type":"`...)
	b = append(b, typ...)
	b = append(b, `","object":`...)
	b = append(b, obj...)
	return append(b, '}', '\n')
}

// SplitWatchEventJSON splits a JSON watch event line,
// {"type":"T","object":{...}}: its type and the offsets [start, end) of
// its object in line. The API server's layout is read without a parse; any
// other layout is parsed.
func SplitWatchEventJSON(line []byte) (typ string, start, end int, err error) {
	t, start, end, err := splitWatchEventJSON(line)
	return string(t), start, end, err
}

// WatchEventObjectJSON returns the offsets [start, end) of the object of
// the JSON watch event line, as [SplitWatchEventJSON] does, without
// allocating on the API server's layout.
func WatchEventObjectJSON(line []byte) (start, end int, err error) {
	_, start, end, err = splitWatchEventJSON(line)
	return start, end, err
}

func splitWatchEventJSON(line []byte) (typ []byte, start, end int, err error) {
	const head, mid = `{"type":"`, `","object":`
	if rest, ok := bytes.CutPrefix(line, []byte(head)); ok {
		if i := bytes.Index(rest[:min(len(rest), 32)], []byte(mid)); i > 0 {
			body := bytes.TrimRight(rest[i+len(mid):], "\n")
			if n := len(body); n > 2 && body[0] == '{' && body[n-2] == '}' && body[n-1] == '}' {
				start = len(head) + i + len(mid)
				return rest[:i], start, start + n - 1, nil
			}
		}
	}
	var wl struct {
		Type   string          `json:"type"`
		Object json.RawMessage `json:"object"`
	}
	if err := json.Unmarshal(line, &wl); err != nil {
		return nil, 0, 0, err
	}
	if len(wl.Object) == 0 {
		return nil, 0, 0, errors.New("watch event has no object")
	}
	start = bytes.Index(line, wl.Object)
	if start < 0 {
		return nil, 0, 0, errors.New("object not found in the event line")
	}
	return []byte(wl.Type), start, start + len(wl.Object), nil
}

// WithTypeMeta returns an object's JSON with kind and apiVersion first.
// The API server strips them from list items but sends them on a get and
// in watch events, and clients need them to decode.
func WithTypeMeta(raw []byte, kind, apiVersion string) []byte {
	if len(raw) < 2 || raw[0] != '{' {
		return raw
	}
	b := make([]byte, 0, len(raw)+len(kind)+len(apiVersion)+32)
	b = fmt.Appendf(b, `{"kind":%q,"apiVersion":%q`, kind, apiVersion)
	rest := bytes.TrimSpace(raw[1:])
	if len(rest) > 0 && rest[0] != '}' {
		b = append(b, ',')
	}
	return append(b, rest...)
}

// BookmarkObjectJSON is the object of a BOOKMARK event at rv; initialEnd
// adds the annotation that ends a streaming list's initial events.
func BookmarkObjectJSON(kind, apiVersion string, rv int64, initialEnd bool) []byte {
	b := fmt.Appendf(nil, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"`, kind, apiVersion, rv)
	if initialEnd {
		b = append(b, `,"annotations":{"`+InitialEventsEnd+`":"true"}`...)
	}
	return append(b, "}}"...)
}

// ListJSON is a list body around items (each an object's JSON as in a
// list: no kind or apiVersion needed). remaining is written with cont,
// unless nil (the server omits it when a selector filtered the list).
//
// With unstructured, the list is a custom resource's, which the server
// encodes from unstructured objects: its metadata has continue even when
// empty (the caller gives the items with their kind and apiVersion, as
// that list has them too).
func ListJSON(listKind, apiVersion string, rv int64, cont string, remaining *int64, unstructured bool, items [][]byte) []byte {
	n := 128
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = fmt.Appendf(b, `{"kind":%q,"apiVersion":%q,"metadata":{"resourceVersion":"%d"`, listKind, apiVersion, rv)
	if cont == "" && unstructured {
		b = append(b, `,"continue":""`...)
	}
	if cont != "" {
		b = fmt.Appendf(b, `,"continue":%q`, cont)
		if remaining != nil {
			b = fmt.Appendf(b, `,"remainingItemCount":%d`, *remaining)
		}
	}
	b = append(b, `},"items":[`...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	return append(b, "]}\n"...)
}

// ListItemsJSON parses a JSON list body: its kind, apiVersion,
// resourceVersion and the offsets [start, end) of each item in body.
//
// A list the API server wrote is read by a scanner that balances each
// item without decoding it (a 2,000-item list of 4 KB ConfigMaps in
// milliseconds); anything it does not read plainly, such as escapes in the
// fields it keeps, is decoded with encoding/json instead. Like the
// cassette index, the scanner checks an item's structure, not every
// value's syntax: a cassette's bytes are proven by its zstd checksums and
// by `kwrec lint`.
func ListItemsJSON(body []byte) (kind, apiVersion, rv string, items [][2]int, err error) {
	if l, ok := listScan(body); ok {
		return l.kind, l.apiVersion, l.rv, l.items, nil
	}
	return listDecode(body)
}

// listDecode is ListItemsJSON through a decoder.
func listDecode(body []byte) (kind, apiVersion, rv string, items [][2]int, err error) {
	var lb struct {
		Kind       string `json:"kind"`
		APIVersion string `json:"apiVersion"`
		Metadata   struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Items []json.RawMessage `json:"items"`
	}
	// Case-sensitive, as the API server's decoder.
	if err := kjson.UnmarshalCaseSensitivePreserveInts(body, &lb); err != nil {
		return "", "", "", nil, fmt.Errorf("list body is not JSON: %v", err)
	}
	if items, err = rawOffsets(body, `"items"`, lb.Items); err != nil {
		return "", "", "", nil, err
	}
	return lb.Kind, lb.APIVersion, lb.Metadata.ResourceVersion, items, nil
}

// rawOffsets returns where each of raws, the values of the array after
// key decoded from body, lies in body: exactly as in body and in order,
// each found after the previous one (only separators lie between).
func rawOffsets(body []byte, key string, raws []json.RawMessage) ([][2]int, error) {
	var items [][2]int
	pos := max(bytes.Index(body, []byte(key)), 0)
	for _, it := range raws {
		off := bytes.Index(body[pos:], it)
		if off < 0 {
			return nil, errors.New("list item not found in the list body")
		}
		off += pos
		pos = off + len(it)
		items = append(items, [2]int{off, pos})
	}
	return items, nil
}

// ScanRV returns the first "resourceVersion" string value in a JSON frame:
// for a watch event, the object's metadata.resourceVersion (the API server
// writes metadata before any spec that could hold another such key); for a
// list, the list's. It returns 0 when there is none or it is not numeric.
func ScanRV(data []byte) int64 {
	const key = `"resourceVersion":"`
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return 0
	}
	rest := data[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	if err != nil {
		return 0
	}
	return n
}

// WithoutTypeMeta drops the kind and apiVersion the API server writes
// first on a watch event's object (and a write's object carries), so it
// reads as a list item does.
func WithoutTypeMeta(raw []byte) []byte {
	if b, ok := cutTypeMeta(raw); ok {
		return b
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return raw
	}
	delete(m, "kind")
	delete(m, "apiVersion")
	b, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return b
}

// cutTypeMeta is WithoutTypeMeta for an object that starts with kind and
// apiVersion, as the server writes them.
func cutTypeMeta(raw []byte) ([]byte, bool) {
	rest, ok := bytes.CutPrefix(raw, []byte(`{"kind":"`))
	if !ok {
		return nil, false
	}
	i := bytes.Index(rest, []byte(`","apiVersion":"`))
	if i < 0 || bytes.IndexByte(rest[:i], '"') >= 0 {
		return nil, false
	}
	rest = rest[i+len(`","apiVersion":"`):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || len(rest) < j+2 || rest[j+1] != ',' {
		return nil, false
	}
	return append([]byte{'{'}, rest[j+2:]...), true
}
