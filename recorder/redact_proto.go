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
	if unk.Kind == "Status" {
		return doc, true
	}
	obj := protoMessageOf(unk.Kind, rules)
	if obj == nil {
		if rules.secrets && rules.secretCtx || rules.tokens && rules.tokenCtx {
			// An unknown kind on a secret or token path: assume the worst.
			return nil, false
		}
		return doc, true // another kind whose bytes merely mention "Secret"
	}
	if err := obj.Unmarshal(unk.Raw); err != nil {
		return nil, false
	}
	if !redactProtoMessage(obj, rules) {
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

// protoMessage is a protobuf message of a kind [redactProtoDoc] redacts.
type protoMessage interface {
	Unmarshal([]byte) error
	Marshal() ([]byte, error)
}

// protoMessageOf returns an empty message of kind, to decode and redact,
// or nil when rules redact nothing of that kind.
func protoMessageOf(kind string, rules objRules) protoMessage {
	switch {
	case rules.secrets && kind == "Secret":
		return &corev1.Secret{}
	case rules.secrets && kind == "SecretList":
		return &corev1.SecretList{}
	case rules.secrets && kind == "PartialObjectMetadata":
		return &metav1.PartialObjectMetadata{}
	case rules.secrets && kind == "PartialObjectMetadataList":
		return &metav1.PartialObjectMetadataList{}
	case rules.tokens && kind == "TokenRequest":
		return &authenticationv1.TokenRequest{}
	case rules.tokens && kind == "TokenReview":
		return &authenticationv1.TokenReview{}
	}
	return nil
}

// redactProtoMessage redacts obj, a decoded message [protoMessageOf]
// returned, and reports whether it changed it.
func redactProtoMessage(obj protoMessage, rules objRules) bool {
	switch o := obj.(type) {
	case *corev1.Secret:
		return redactSecret(o)
	case *corev1.SecretList:
		changed := false
		for i := range o.Items {
			changed = redactSecret(&o.Items[i]) || changed
		}
		return changed
	case *metav1.PartialObjectMetadata:
		return rules.secretCtx && redactAnnotation(&o.ObjectMeta)
	case *metav1.PartialObjectMetadataList:
		changed := false
		for i := range o.Items {
			changed = rules.secretCtx && redactAnnotation(&o.Items[i].ObjectMeta) || changed
		}
		return changed
	case *authenticationv1.TokenRequest:
		if o.Status.Token == "" {
			return false
		}
		o.Status.Token = Redacted
		return true
	case *authenticationv1.TokenReview:
		if o.Spec.Token == "" {
			return false
		}
		o.Spec.Token = Redacted
		return true
	}
	return false
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
