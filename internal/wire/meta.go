package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"

	"google.golang.org/protobuf/encoding/protowire"
	"k8s.io/apimachinery/pkg/labels"
	kjson "sigs.k8s.io/json"
)

// Meta is what kwrec needs of an object's metadata.
type Meta struct {
	Kind, APIVersion string // empty for list items, which carry none
	Name, Namespace  string
	ResourceVersion  string
	// Labels in labels.Set.String() form, "" for none.
	Labels string
	// InitialEventsEnd is set on the bookmark that ends a streaming list's
	// initial events (metav1.InitialEventsAnnotationKey).
	InitialEventsEnd bool
}

// RV returns the resourceVersion as an integer: every etcd-backed API
// server hands out etcd revisions, decimal integers that only grow.
func (m Meta) RV() (int64, error) {
	return strconv.ParseInt(m.ResourceVersion, 10, 64)
}

// Key is namespace/name.
func (m Meta) Key() string { return m.Namespace + "/" + m.Name }

type jsonMeta struct {
	Name            string            `json:"name"`
	Namespace       string            `json:"namespace"`
	ResourceVersion string            `json:"resourceVersion"`
	Labels          map[string]string `json:"labels"`
	Annotations     map[string]string `json:"annotations"`
}

// MetaJSON reads kind, apiVersion and metadata from an object's JSON and
// stops there: the API server writes them first, so the spec and status
// that make up most of an object are not even scanned.
func MetaJSON(raw []byte) (Meta, error) {
	if m, ok := metaScan(raw); ok {
		return m, nil
	}
	return metaDecode(raw)
}

// metaDecode is MetaJSON through encoding/json, for what metaScan does not
// read plainly.
func metaDecode(raw []byte) (Meta, error) {
	var m Meta
	var jm jsonMeta
	dec := json.NewDecoder(bytes.NewReader(raw))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		if err == nil {
			err = errors.New("not a JSON object")
		}
		return m, err
	}
	for seen := 0; seen < 3 && dec.More(); {
		t, err := dec.Token()
		if err != nil {
			return m, err
		}
		var v any
		switch t {
		case "kind":
			v = &m.Kind
		case "apiVersion":
			v = &m.APIVersion
		case "metadata":
			// Case-sensitive, as the API server's decoder (encoding/json
			// would take "resourceversion" for resourceVersion).
			var raw json.RawMessage
			if err := dec.Decode(&raw); err != nil {
				return m, err
			}
			if err := kjson.UnmarshalCaseSensitivePreserveInts(raw, &jm); err != nil {
				return m, err
			}
			seen++
			continue
		default:
			v = new(json.RawMessage)
			seen--
		}
		if err := dec.Decode(v); err != nil {
			return m, err
		}
		seen++
	}
	m.Name, m.Namespace, m.ResourceVersion = jm.Name, jm.Namespace, jm.ResourceVersion
	if len(jm.Labels) > 0 {
		m.Labels = labels.Set(jm.Labels).String()
	}
	m.InitialEventsEnd = jm.Annotations[InitialEventsEnd] == "true"
	return m, nil
}

// InitialEventsEnd is the annotation on the bookmark that ends a streaming
// list's initial events (sendInitialEvents=true).
const InitialEventsEnd = "k8s.io/initial-events-end"

// MetaProto reads the ObjectMeta (field 1) of an object's protobuf message
// (the raw of its envelope). Kind and APIVersion are the envelope's.
func MetaProto(msg []byte) (Meta, error) { return metaProto(msg, false) }

// metaProto is MetaProto; keyOnly skips labels and annotations.
func metaProto(msg []byte, keyOnly bool) (Meta, error) {
	var m Meta
	om, ok := Field(msg, 1)
	if !ok {
		if len(msg) == 0 {
			return m, nil
		}
		return m, errors.New("protobuf object has no metadata")
	}
	var ls labels.Set
	good := EachField(om, func(n protowire.Number, s, e int) bool {
		v := om[s:e]
		switch n {
		case 1:
			m.Name = string(v)
		case 3:
			m.Namespace = string(v)
		case 6:
			m.ResourceVersion = string(v)
		case 11, 12: // labels, annotations: map entries {key=1, value=2}
			if keyOnly {
				break
			}
			k, _ := Field(v, 1)
			val, _ := Field(v, 2)
			if n == 11 {
				if ls == nil {
					ls = labels.Set{}
				}
				ls[string(k)] = string(val)
			} else if string(k) == InitialEventsEnd && string(val) == "true" {
				m.InitialEventsEnd = true
			}
		}
		return true
	})
	if !good {
		return m, errors.New("protobuf object metadata does not parse")
	}
	if len(ls) > 0 {
		m.Labels = ls.String()
	}
	return m, nil
}

// ListRVProto reads a protobuf list message's ListMeta (field 1):
// resourceVersion (2).
func ListRVProto(msg []byte) string {
	lm, _ := Field(msg, 1)
	rv, _ := Field(lm, 2)
	return string(rv)
}

// ListMetaProto is a ListMeta message: resourceVersion (2), continue (3),
// remainingItemCount (4, with cont unless nil).
func ListMetaProto(rv, cont string, remaining *int64) []byte {
	var b []byte
	b = AppendBytesField(b, 2, []byte(rv))
	if cont != "" {
		b = AppendBytesField(b, 3, []byte(cont))
		if remaining != nil {
			b = protowire.AppendTag(b, 4, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(*remaining))
		}
	}
	return b
}
