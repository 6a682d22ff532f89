package wire_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetRVJSONChangesOnlyTheResourceVersion(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"a recorded object", `{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12","labels":{"x":"y"}},"data":{"resourceVersion":"no"}}`,
			`{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"12000","labels":{"x":"y"}},"data":{"resourceVersion":"no"}}`},
		{"spaces around the colon", `{"metadata": {"resourceVersion" : "7"}}`, `{"metadata": {"resourceVersion" : "12000"}}`},
		{"metadata without one", `{"metadata":{"name":"a"}}`, `{"metadata":{"resourceVersion":"12000","name":"a"}}`},
		{"empty metadata", `{"metadata":{}}`, `{"metadata":{"resourceVersion":"12000"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := wire.SetRVJSON([]byte(tt.in), "12000")
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
	for _, bad := range []string{`[]`, `{"kind":"X"}`, `{"metadata":[]}`, `{"metadata":{"resourceVersion":5}}`, `{"metadata":{"a":`} {
		if _, err := wire.SetRVJSON([]byte(bad), "1"); err == nil {
			t.Errorf("SetRVJSON(%s) = nil error", bad)
		}
	}
}

func TestSetRVProtoChangesOnlyTheResourceVersion(t *testing.T) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "12", Labels: map[string]string{"x": "y"}}, Data: map[string]string{"k": "v"}}
	msg, err := cm.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := wire.SetRVProto(msg, "12000")
	if err != nil {
		t.Fatal(err)
	}
	var back corev1.ConfigMap
	if err := back.Unmarshal(got); err != nil {
		t.Fatal(err)
	}
	want := cm.DeepCopy()
	want.ResourceVersion = "12000"
	if back.String() != want.String() {
		t.Errorf("got %v\nwant %v", back.String(), want.String())
	}
	if _, err := wire.SetRVProto([]byte{0xff}, "1"); err == nil {
		t.Error("garbage: nil error")
	}
}
