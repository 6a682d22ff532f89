package wire

import (
	"bytes"
	"encoding/json"
	"strings"
)

// EventKey returns a watch frame's event type and the identity of its
// object, kind/namespace/name, in either encoding: a JSON event line or a
// protobuf frame (length prefix included). ok is false for a frame that
// is neither, and key is empty for an event without a named object (an
// ERROR's Status, a BOOKMARK). A Table-form event (kubectl's watch, one
// row) is keyed on its row's object, as "Table/namespace/name": its rows
// are the versions of that object. The cassette writer keys object deltas
// on it: two frames with one key are two versions of one object.
func EventKey(frame []byte) (typ, key string, ok bool) {
	var m Meta
	if len(frame) > 0 && frame[0] == '{' {
		if !bytes.HasPrefix(frame, []byte(`{"type":"`)) && !bytes.HasPrefix(frame, []byte(`{"object":{`)) {
			// Not laid out as the API server writes an event, or as
			// kwrec's redaction writes one again (keys sorted): a list
			// or an object, which SplitWatchEventJSON would parse whole.
			return "", "", false
		}
		t, start, end, err := SplitWatchEventJSON(frame)
		if err != nil {
			return "", "", false
		}
		if typ = t; typ == "ERROR" || typ == "BOOKMARK" {
			return typ, "", true
		}
		var scanned bool
		if m, scanned = scanMeta(&scanner{b: frame[start:end], keyOnly: true}); !scanned {
			if m, err = metaDecode(frame[start:end]); err != nil {
				return typ, "", false
			}
		}
		if m.Kind == "Table" && m.Name == "" {
			return typ, tableRowKey(frame[start:end]), true
		}
	} else {
		t, start, end, ok := SplitWatchEventProto(frame)
		if !ok {
			return "", "", false
		}
		if typ = t; typ == "ERROR" || typ == "BOOKMARK" {
			return typ, "", true
		}
		av, kind, ms, me, ok := Unenvelope(frame[start:end])
		if !ok {
			return typ, "", false
		}
		var err error
		if m, err = metaProto(frame[start+ms:start+me], true); err != nil {
			return typ, "", false
		}
		m.Kind, m.APIVersion = kind, av
	}
	if m.Name == "" {
		return typ, "", true
	}
	return typ, m.Kind + "/" + m.Namespace + "/" + m.Name, true
}

// tableRowKey returns the key of the one row of the Table obj, "" if it
// has not exactly one row with a named object.
func tableRowKey(obj []byte) string {
	var t struct {
		Rows []struct {
			Object struct {
				Metadata struct {
					Namespace string `json:"namespace"`
					Name      string `json:"name"`
				} `json:"metadata"`
			} `json:"object"`
		} `json:"rows"`
	}
	if json.Unmarshal(obj, &t) != nil || len(t.Rows) != 1 || t.Rows[0].Object.Metadata.Name == "" {
		return ""
	}
	m := t.Rows[0].Object.Metadata
	return "Table/" + m.Namespace + "/" + m.Name
}

// ListItemKeys returns the items of a list body and the key each has in
// a cassette's deltas: a JSON list's items keyed as [EventKey] keys their
// objects in watch events (kind/namespace/name, the kind the list's
// without "List"), a Table's rows (kubectl's list) keyed by
// [TableItemKey]. It returns none for any other frame. An item without a
// name, or a row without a uid, is left out.
func ListItemKeys(body []byte) (keys []string, items [][2]int) {
	if len(body) == 0 || body[0] != '{' {
		return nil, nil
	}
	switch {
	case bytes.Contains(body, []byte(`"items":[`)):
		kind, _, _, all, err := ListItemsJSON(body)
		base, ok := strings.CutSuffix(kind, "List")
		if err != nil || !ok || base == "" {
			return nil, nil
		}
		for _, it := range all {
			m, err := MetaJSON(body[it[0]:it[1]])
			if err != nil || m.Name == "" {
				continue
			}
			keys = append(keys, base+"/"+m.Namespace+"/"+m.Name)
			items = append(items, it)
		}
	case bytes.Contains(body, []byte(`"rows":[`)):
		var t struct {
			Kind string            `json:"kind"`
			Rows []json.RawMessage `json:"rows"`
		}
		if json.Unmarshal(body, &t) != nil || t.Kind != "Table" {
			return nil, nil
		}
		rows, err := rawOffsets(body, `"rows":[`, t.Rows)
		if err != nil {
			return nil, nil
		}
		for k, row := range t.Rows {
			if key := TableItemKey(row); key != "" {
				keys = append(keys, key)
				items = append(items, rows[k])
			}
		}
	}
	return keys, items
}

// TableItemKey returns the key of a Table row's object, or of the first
// row in a Table-form watch event, by its uid: "Table@" and the uid, ""
// if there is none. Unlike EventKey's namespace/name it tells apart the
// objects of every kind that a Table form carries, as metadata only.
func TableItemKey(b []byte) string {
	i := bytes.Index(b, []byte(`"object":`))
	if i < 0 {
		return ""
	}
	const uid = `"uid":"`
	j := bytes.Index(b[i:], []byte(uid))
	if j < 0 {
		return ""
	}
	rest := b[i+j+len(uid):]
	k := bytes.IndexByte(rest, '"')
	if k <= 0 || bytes.IndexByte(rest[:k], '\\') >= 0 {
		return ""
	}
	return "Table@" + string(rest[:k])
}
