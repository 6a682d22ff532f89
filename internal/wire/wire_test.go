package wire_test

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/internal/wire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func TestNegotiatePicksTheFirstEncodingTheClientListsThatKwrecServes(t *testing.T) {
	for _, tc := range []struct {
		name, accept string
		proto, ok    bool
	}{
		{"client-go's typed clients prefer protobuf", "application/vnd.kubernetes.protobuf,application/json", true, true},
		{"the dynamic client asks for JSON", "application/json", false, true},
		{"no Accept is JSON", "", false, true},
		{"kubectl's server-side printing falls through to plain JSON", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", false, true},
		{"python asks for anything", "*/*", false, true},
		{"YAML only is not served", "application/yaml", false, false},
		{"a protobuf Table only is not served", "application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io", false, false},
		{"a higher q wins over the order", "application/vnd.kubernetes.protobuf;q=0.5,application/json", false, true},
		{"a refused type is not served", "application/json;q=0", false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proto, ok := wire.Negotiate(tc.accept)
			if proto != tc.proto || ok != tc.ok {
				t.Errorf("Negotiate(%q) = %v, %v; want %v, %v", tc.accept, proto, ok, tc.proto, tc.ok)
			}
		})
	}
}

func TestAcceptsEncodingReadsQ(t *testing.T) {
	for _, tc := range []struct {
		name, ae string
		want     bool
	}{
		{"gzip named", "gzip", true},
		{"gzip among others", "deflate, gzip, br", true},
		{"gzip with a q below 1", "gzip;q=0.5", true},
		{"gzip with a q written with spaces", "gzip; q=0.25", true},
		{"gzip refused", "gzip;q=0", false},
		{"gzip refused with decimals", "gzip;q=0.000", false},
		{"any coding", "*;q=0.1", true},
		{"identity only", "identity", false},
		{"nothing", "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.AcceptsEncoding(tc.ae, "gzip"); got != tc.want {
				t.Errorf("AcceptsEncoding(%q, gzip) = %v, want %v", tc.ae, got, tc.want)
			}
		})
	}
}

func TestAcceptsSkipsTransformsAndRefusals(t *testing.T) {
	for _, tc := range []struct {
		name, accept, ct string
		want             bool
	}{
		{"the type named", "application/json", "application/json", true},
		{"a wildcard subtype", "application/*", "application/json", true},
		{"anything", "*/*", "application/vnd.kubernetes.protobuf", true},
		{"a Table is a transform", "application/json;as=Table;v=v1;g=meta.k8s.io", "application/json", false},
		{"a type refused with q=0", "application/json;q=0,application/yaml", "application/json", false},
		{"another type only", "application/yaml", "application/json", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.Accepts(tc.accept, tc.ct); got != tc.want {
				t.Errorf("Accepts(%q, %q) = %v, want %v", tc.accept, tc.ct, got, tc.want)
			}
		})
	}
}

// cmProto is a ConfigMap as the API server encodes it in protobuf.
func cmProto(t *testing.T) (*corev1.ConfigMap, []byte) {
	t.Helper()
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "42", Labels: map[string]string{"app": "x", "tier": "db"},
			Annotations: map[string]string{wire.InitialEventsEnd: "true"}},
		Data: map[string]string{"k": "v"}}
	b, err := runtime.Encode(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), cm)
	if err != nil {
		t.Fatal(err)
	}
	return cm, b
}

func TestAProtobufObjectIsReadWithoutAScheme(t *testing.T) {
	cm, body := cmProto(t)
	av, kind, start, end, ok := wire.Unenvelope(body)
	if !ok || av != "v1" || kind != "ConfigMap" {
		t.Fatalf("Unenvelope = %q %q %v", av, kind, ok)
	}
	m, err := wire.MetaProto(body[start:end])
	if err != nil {
		t.Fatal(err)
	}
	want := wire.Meta{Name: "a", Namespace: "ns", ResourceVersion: "42", Labels: "app=x,tier=db", InitialEventsEnd: true}
	if d := cmp.Diff(want, m); d != "" {
		t.Errorf("MetaProto (-want +got):\n%s", d)
	}
	// Enveloping the message again gives the server's bytes.
	if again := wire.Envelope("v1", "ConfigMap", body[start:end]); !bytes.Equal(again, body) {
		t.Errorf("Envelope does not give back the encoded body")
	}
	// A watch frame around it splits back to the same object.
	frame := wire.WatchEventProto("MODIFIED", body)
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(frame[4:]); err != nil || ev.Type != "MODIFIED" || !bytes.Equal(ev.Object.Raw, body) {
		t.Fatalf("WatchEventProto does not decode as a metav1.WatchEvent: %v %q", err, ev.Type)
	}
	typ, s, e, ok := wire.SplitWatchEventProto(frame)
	if !ok || typ != "MODIFIED" || !bytes.Equal(frame[s:e], body) {
		t.Errorf("SplitWatchEventProto = %q %v", typ, ok)
	}
	var back corev1.ConfigMap
	if err := back.Unmarshal(body[start:end]); err != nil || back.Name != cm.Name || back.Data["k"] != "v" {
		t.Errorf("the message is not the ConfigMap: %v", err)
	}
}

func TestBrokenProtobufIsRefusedNotMisread(t *testing.T) {
	_, body := cmProto(t)
	frame := wire.WatchEventProto("ADDED", body)
	for _, tc := range []struct {
		name string
		ok   func() bool
	}{
		{"a frame with a wrong length", func() bool { _, _, _, ok := wire.SplitWatchEventProto(frame[:len(frame)-1]); return ok }},
		{"a body without the k8s magic", func() bool { _, _, _, _, ok := wire.Unenvelope(body[1:]); return ok }},
		{"a body cut mid-field", func() bool { _, _, _, _, ok := wire.Unenvelope(body[:10]); return ok }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.ok() {
				t.Error("accepted")
			}
		})
	}
}

func TestStatusBodiesAreTheAPIServers(t *testing.T) {
	st := wire.Status(410, "", "too old resource version: 1 (2)", 0)
	want := `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (2)","reason":"Expired","code":410}` + "\n"
	if got := string(wire.StatusJSON(st)); got != want {
		t.Errorf("StatusJSON = %s, want %s", got, want)
	}
	st = wire.Status(503, "", "busy", 1)
	if got := string(wire.StatusJSON(st)); got != `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"busy","reason":"ServiceUnavailable","details":{"retryAfterSeconds":1},"code":503}`+"\n" {
		t.Errorf("StatusJSON with Retry-After = %s", got)
	}
	_, kind, s, e, ok := wire.Unenvelope(wire.StatusProto(st))
	var back metav1.Status
	if !ok || kind != "Status" || back.Unmarshal(wire.StatusProto(st)[s:e]) != nil || back.Code != 503 {
		t.Errorf("StatusProto does not decode: %v %v", kind, back)
	}
}

func TestAcceptsAsFindsAConversionInAnyElementTheClientTakes(t *testing.T) {
	for _, tc := range []struct {
		name, accept, as string
		want             bool
	}{
		{"client-go's discovery asks for the aggregated list first",
			"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", "APIGroupDiscoveryList", true},
		{"kubectl's server-side printing asks for a Table",
			"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", "Table", true},
		{"a plain JSON client asks for no conversion", "application/json", "Table", false},
		{"an element refused with q=0 does not count", "application/json;as=Table;v=v1;g=meta.k8s.io;q=0,application/json", "Table", false},
		{"a conversion named inside another parameter's value is not one", "application/json;profile=as=Table", "Table", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := wire.AcceptsAs(tc.accept, tc.as); got != tc.want {
				t.Errorf("AcceptsAs(%q, %q) = %v, want %v", tc.accept, tc.as, got, tc.want)
			}
		})
	}
}
