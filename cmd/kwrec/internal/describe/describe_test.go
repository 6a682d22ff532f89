package describe_test

import (
	"encoding/binary"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/describe"
)

func protoWatchFrame(t *testing.T, typ string, obj runtime.Object) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		t.Fatal("no protobuf serializer")
	}
	raw, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatal(err)
	}
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}

func TestFramesAreSummarisedForPeople(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", ResourceVersion: "201"}}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"a JSON watch event", []byte(`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"201"}}}` + "\n"),
			"MODIFIED ConfigMap default/a rv=201"},
		{"the bookmark ending a streaming list", []byte(`{"type":"BOOKMARK","object":{"kind":"ConfigMap","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}}`),
			"BOOKMARK ConfigMap rv=9 (initial-events-end)"},
		{"a 410 ERROR event", []byte(`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}}`),
			"ERROR Status 410 Expired: too old resource version: 1 (5)"},
		{"a JSON list with a continue token", []byte(`{"kind":"ConfigMapList","metadata":{"resourceVersion":"7","continue":"xyz"},"items":[{},{}]}`),
			"ConfigMapList rv=7 items=2 continue=…"},
		{"a protobuf watch event", protoWatchFrame(t, "ADDED", cm), "ADDED ConfigMap default/a rv=201 (protobuf)"},
		{"a protobuf ERROR event", protoWatchFrame(t, "ERROR", &metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired, Message: "gone"}), "ERROR Status 410 Expired: gone (protobuf)"},
		{"a kubectl table watch event", []byte(`{"type":"ADDED","object":{"kind":"Table","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"220"},"rows":[{"cells":["two",1,"0s"],"object":{"kind":"PartialObjectMetadata","metadata":{"name":"two","namespace":"prox"}}}]}}`),
			"ADDED Table prox/two rv=220"},
		{"plain bytes", []byte("hello"), "5 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe.Frame(tt.data).String(); got != tt.want {
				t.Errorf("got  %q\nwant %q", got, tt.want)
			}
		})
	}
}
