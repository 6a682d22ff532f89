package recorder

import (
	"bytes"
	"encoding/binary"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kwrec/kwrec/internal/wire"
)

// redactProto redacts a protobuf document, or a watch frame (4-byte length,
// then a metav1.WatchEvent whose object is a document). Anything secret it
// cannot decode is replaced by [protobufPlaceholder].
func redactProto(data []byte, watchFrame bool, rules objRules) []byte {
	if !watchFrame {
		out, ok := redactProtoDoc(data, rules)
		if !ok {
			return []byte(protobufPlaceholder)
		}
		return out
	}
	if len(data) < 4 || int(binary.BigEndian.Uint32(data)) != len(data)-4 {
		return []byte(protobufPlaceholder) // a cut frame
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(data[4:]); err != nil {
		return []byte(protobufPlaceholder)
	}
	obj, ok := redactProtoDoc(ev.Object.Raw, rules)
	if !ok {
		return []byte(protobufPlaceholder)
	}
	if bytes.Equal(obj, ev.Object.Raw) {
		return data
	}
	ev.Object.Raw = obj
	b, err := ev.Marshal()
	if err != nil {
		return []byte(protobufPlaceholder)
	}
	out := binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b)))
	return append(out, b...)
}

// redactProtoDoc returns doc redacted, and false when it holds or may hold
// secrets it cannot redact.
func redactProtoDoc(doc []byte, rules objRules) ([]byte, bool) {
	if !bytes.HasPrefix(doc, wire.ProtoMagic) {
		return nil, false
	}
	var unk runtime.Unknown
	if err := unk.Unmarshal(doc[len(wire.ProtoMagic):]); err != nil {
		return nil, false
	}
	type message interface {
		Unmarshal([]byte) error
		Marshal() ([]byte, error)
	}
	var obj message
	var edit func() bool
	switch kind := unk.Kind; {
	case kind == "Status":
		return doc, true
	case rules.secrets && kind == "Secret":
		s := &corev1.Secret{}
		obj, edit = s, func() bool { return redactSecret(s) }
	case rules.secrets && kind == "SecretList":
		l := &corev1.SecretList{}
		obj, edit = l, func() bool {
			changed := false
			for i := range l.Items {
				changed = redactSecret(&l.Items[i]) || changed
			}
			return changed
		}
	case rules.secrets && kind == "PartialObjectMetadata":
		m := &metav1.PartialObjectMetadata{}
		obj, edit = m, func() bool { return rules.secretCtx && redactAnnotation(&m.ObjectMeta) }
	case rules.secrets && kind == "PartialObjectMetadataList":
		l := &metav1.PartialObjectMetadataList{}
		obj, edit = l, func() bool {
			changed := false
			for i := range l.Items {
				changed = rules.secretCtx && redactAnnotation(&l.Items[i].ObjectMeta) || changed
			}
			return changed
		}
	case rules.tokens && kind == "TokenRequest":
		t := &authenticationv1.TokenRequest{}
		obj, edit = t, func() bool {
			if t.Status.Token == "" {
				return false
			}
			t.Status.Token = Redacted
			return true
		}
	case rules.tokens && kind == "TokenReview":
		t := &authenticationv1.TokenReview{}
		obj, edit = t, func() bool {
			if t.Spec.Token == "" {
				return false
			}
			t.Spec.Token = Redacted
			return true
		}
	case rules.secrets && rules.secretCtx, rules.tokens && rules.tokenCtx:
		// An unknown kind on a secret or token path: assume the worst.
		return nil, false
	default:
		return doc, true // another kind whose bytes merely mention "Secret"
	}
	if err := obj.Unmarshal(unk.Raw); err != nil {
		return nil, false
	}
	if !edit() {
		return doc, true
	}
	raw, err := obj.Marshal()
	if err != nil {
		return nil, false
	}
	unk.Raw = raw
	b, err := unk.Marshal()
	if err != nil {
		return nil, false
	}
	return append(append([]byte{}, wire.ProtoMagic...), b...), true
}

func redactSecret(s *corev1.Secret) bool {
	changed := redactAnnotation(&s.ObjectMeta)
	for k := range s.Data {
		s.Data[k] = []byte(Redacted)
		changed = true
	}
	for k := range s.StringData {
		s.StringData[k] = Redacted
		changed = true
	}
	return changed
}

func redactAnnotation(m *metav1.ObjectMeta) bool {
	if _, ok := m.Annotations[lastApplied]; ok {
		m.Annotations[lastApplied] = Redacted
		return true
	}
	return false
}
