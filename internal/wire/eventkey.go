package wire

import (
	"bytes"
	"encoding/json"
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
		if !bytes.HasPrefix(frame, []byte(`{"type":"`)) {
			// Not laid out as the API server writes an event: a list
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
