// Package describe summarises recorded bodies for people: a watch event's
// type and object, a list's kind and size, a Status's code and reason, from
// JSON or Kubernetes protobuf, with no scheme needed.
package describe

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"strings"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kwrec/kwrec/internal/wire"
)

// Summary describes one frame. Zero fields were not present.
type Summary struct {
	// Event is the watch event type (ADDED, MODIFIED, DELETED, BOOKMARK,
	// ERROR), empty when the frame is not a watch event.
	Event string `json:"event,omitempty"`
	// Kind is the object's kind (ConfigMap, PodList, Status).
	Kind      string `json:"kind,omitempty"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	// ResourceVersion of the object or list.
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Items is the number of items of a list.
	Items int `json:"items,omitempty"`
	// Continue is a list's continue token.
	Continue string `json:"continue,omitempty"`
	// Code, Reason and Message of a Status.
	Code    int32  `json:"code,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// InitialEventsEnd marks the bookmark ending a streaming list.
	InitialEventsEnd bool `json:"wire.InitialEventsEnd,omitempty"`
	// Format is "json", "protobuf" or "bytes".
	Format string `json:"format"`
	// Size is the frame's length in bytes.
	Size int `json:"size"`
}

// String renders s on one line: "MODIFIED ConfigMap default/a rv=201".
func (s Summary) String() string {
	var parts []string
	if s.Event != "" {
		parts = append(parts, s.Event)
	}
	if s.Kind != "" {
		parts = append(parts, s.Kind)
	}
	if s.Name != "" {
		if s.Namespace != "" {
			parts = append(parts, s.Namespace+"/"+s.Name)
		} else {
			parts = append(parts, s.Name)
		}
	}
	if s.ResourceVersion != "" {
		parts = append(parts, "rv="+s.ResourceVersion)
	}
	if strings.HasSuffix(s.Kind, "List") || (s.Kind == "Table" && s.Items != 1) {
		parts = append(parts, fmt.Sprintf("items=%d", s.Items))
	}
	if s.Continue != "" {
		parts = append(parts, "continue=…")
	}
	if s.Code != 0 {
		parts = append(parts, fmt.Sprintf("%d %s: %s", s.Code, s.Reason, s.Message))
	}
	if s.InitialEventsEnd {
		parts = append(parts, "(initial-events-end)")
	}
	if len(parts) == 0 || s.Format == "bytes" {
		parts = append(parts, fmt.Sprintf("%d bytes", s.Size))
	} else if s.Format == "protobuf" {
		parts = append(parts, "(protobuf)")
	}
	return strings.Join(parts, " ")
}

type jsonObject struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name            string            `json:"name"`
		Namespace       string            `json:"namespace"`
		ResourceVersion string            `json:"resourceVersion"`
		Continue        string            `json:"continue"`
		Annotations     map[string]string `json:"annotations"`
	} `json:"metadata"`
	Items []json.RawMessage `json:"items"`
	// Rows of a meta.k8s.io Table (kubectl get asks for tables).
	Rows []struct {
		Object struct {
			Metadata struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		} `json:"object"`
	} `json:"rows"`
	Code    int32  `json:"code"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Frame summarises one frame's bytes.
func Frame(data []byte) Summary {
	s := Summary{Size: len(data), Format: "bytes"}
	t := bytes.TrimSpace(data)
	if len(t) > 0 && t[0] == '{' {
		var ev struct {
			Type   string          `json:"type"`
			Object json.RawMessage `json:"object"`
		}
		if json.Unmarshal(t, &ev) == nil {
			obj := t
			if ev.Type != "" && ev.Object != nil {
				s.Event, obj = ev.Type, ev.Object
			}
			var o jsonObject
			if json.Unmarshal(obj, &o) == nil {
				s.Format = "json"
				s.Kind, s.Name, s.Namespace = o.Kind, o.Metadata.Name, o.Metadata.Namespace
				s.ResourceVersion, s.Continue, s.Items = o.Metadata.ResourceVersion, o.Metadata.Continue, len(o.Items)
				s.Code, s.Reason, s.Message = o.Code, o.Reason, o.Message
				s.InitialEventsEnd = o.Metadata.Annotations[wire.InitialEventsEnd] == "true"
				if o.Kind == "Table" {
					s.Items = len(o.Rows)
					if len(o.Rows) == 1 {
						s.Name, s.Namespace = o.Rows[0].Object.Metadata.Name, o.Rows[0].Object.Metadata.Namespace
					}
				}
			}
		}
		return s
	}
	if proto, ok := protobufFrame(data); ok {
		return proto
	}
	return s
}

// protobufFrame decodes a length-prefixed protobuf watch event or a whole
// protobuf response ("k8s\x00" + runtime.Unknown).
func protobufFrame(data []byte) (Summary, bool) {
	s := Summary{Size: len(data), Format: "protobuf"}
	if bytes.HasPrefix(data, wire.ProtoMagic) {
		return s, unknownInto(&s, data[len(wire.ProtoMagic):])
	}
	if len(data) < 4 || int(binary.BigEndian.Uint32(data)) != len(data)-4 {
		return s, false
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(data[4:]); err != nil {
		return s, false
	}
	s.Event = ev.Type
	raw := ev.Object.Raw
	if !bytes.HasPrefix(raw, wire.ProtoMagic) {
		return s, true
	}
	unknownInto(&s, raw[len(wire.ProtoMagic):])
	return s, true
}

func unknownInto(s *Summary, b []byte) bool {
	var u runtime.Unknown
	if err := u.Unmarshal(b); err != nil {
		return false
	}
	s.Kind = u.Kind
	if u.Kind == "Status" {
		var st metav1.Status
		if st.Unmarshal(u.Raw) == nil {
			s.Code, s.Reason, s.Message = st.Code, string(st.Reason), st.Message
		}
		return true
	}
	// Field 1 of every Kubernetes object is its metadata: ObjectMeta,
	// or ListMeta for lists, whose items are field 2.
	meta, items := protoField(u.Raw, 1)
	if strings.HasSuffix(u.Kind, "List") {
		var lm metav1.ListMeta
		if lm.Unmarshal(meta) == nil {
			s.ResourceVersion, s.Continue = lm.ResourceVersion, lm.Continue
		}
		s.Items = items[2]
		return true
	}
	var om metav1.ObjectMeta
	if om.Unmarshal(meta) == nil {
		s.Name, s.Namespace, s.ResourceVersion = om.Name, om.Namespace, om.ResourceVersion
		s.InitialEventsEnd = om.Annotations[wire.InitialEventsEnd] == "true"
	}
	return true
}

// protoField returns the bytes of the first length-delimited field num of
// msg, and how often each length-delimited field number occurs.
func protoField(msg []byte, num protowire.Number) ([]byte, map[protowire.Number]int) {
	var found []byte
	counts := map[protowire.Number]int{}
	wire.EachField(msg, func(n protowire.Number, start, end int) bool {
		counts[n]++
		if n == num && found == nil {
			found = msg[start:end]
		}
		return true
	})
	return found, counts
}
