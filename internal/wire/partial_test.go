package wire_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/wire"
)

func TestPartialMetadataKeepsOnlyTheMetadata(t *testing.T) {
	tests := []struct {
		name  string
		in    string
		shape wire.Shape
		want  string
	}{
		{"an object", `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","resourceVersion":"5"},"data":{"k":"v"}}` + "\n", wire.ShapeObject,
			`{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a","resourceVersion":"5"}}` + "\n"},
		{"a list", `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"},"data":{}},{"metadata":{"name":"b"}}]}` + "\n", wire.ShapeList,
			`{"kind":"PartialObjectMetadataList","apiVersion":"meta.k8s.io/v1","metadata":{"resourceVersion":"9"},"items":[{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}},{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"b"}}]}` + "\n"},
		{"a watch event", `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}}` + "\n", wire.ShapeWatch,
			`{"type":"ADDED","object":{"kind":"PartialObjectMetadata","apiVersion":"meta.k8s.io/v1","metadata":{"name":"a"}}}` + "\n"},
		{"a watch ERROR event, left as it is", `{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410}}` + "\n", wire.ShapeWatch,
			`{"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","code":410}}` + "\n"},
		{"a Status, left as it is", `{"kind":"Status","apiVersion":"v1","code":404}`, wire.ShapeObject, `{"kind":"Status","apiVersion":"v1","code":404}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.PartialMetadata([]byte(tt.in), tt.shape, false)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}

func TestPartialMetadataOfAProtobufObjectIsItsObjectMeta(t *testing.T) {
	meta := wire.AppendBytesField(nil, 1, []byte("a")) // ObjectMeta{name: "a"}
	msg := wire.AppendBytesField(wire.AppendBytesField(nil, 1, meta), 2, []byte("data"))
	got, err := wire.PartialMetadata(wire.Envelope("v1", "ConfigMap", msg), wire.ShapeObject, true)
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Envelope("meta.k8s.io/v1", "PartialObjectMetadata", wire.AppendBytesField(nil, 1, meta))
	if string(got) != string(want) {
		t.Errorf("got %x, want %x", got, want)
	}
}

func TestAcceptsPartialReadsTheFirstTypeServed(t *testing.T) {
	tests := []struct {
		accept         string
		partial, proto bool
	}{
		{"application/json", false, false},
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json", true, false},
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", true, true},
		{"application/json;as=Table;g=meta.k8s.io;v=v1,application/json", false, false},
		{"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1,application/json", false, false},
	}
	for _, tt := range tests {
		partial, proto := wire.AcceptsPartial(tt.accept)
		if partial != tt.partial || proto != tt.proto {
			t.Errorf("AcceptsPartial(%q) = %v, %v; want %v, %v", tt.accept, partial, proto, tt.partial, tt.proto)
		}
	}
}
