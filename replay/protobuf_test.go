package replay_test

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
)

// protoFrame is a watch event as the API server streams it in protobuf: a
// 4-byte big-endian length, then a metav1.WatchEvent whose object is the
// protobuf-serialized object ("k8s\x00" + runtime.Unknown).
func protoFrame(t testing.TB, at time.Duration, typ string, cm *corev1.ConfigMap) cassettes.Frame {
	t.Helper()
	cm.APIVersion, cm.Kind = "v1", "ConfigMap"
	obj, err := runtime.Encode(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), cm)
	if err != nil {
		t.Fatal(err)
	}
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	data := binary.BigEndian.AppendUint32(nil, uint32(len(b)))
	return cassettes.Frame{At: at, Data: append(data, b...)}
}

func protoCassette(t testing.TB, n int) *cassettes.Cassette {
	var frames []cassettes.Frame
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprint("p", i), Namespace: "default", ResourceVersion: fmt.Sprint(101 + i)}, Data: map[string]string{"k": "v"}}
		frames = append(frames, protoFrame(t, time.Duration(i)*time.Millisecond, "ADDED", cm))
	}
	c := watchCassette("stopped", frames...)
	in := c.Interactions[0]
	in.Request.Header = http.Header{"Accept": {"application/vnd.kubernetes.protobuf,application/json"}}
	in.Response.Header = http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf;stream=watch"}}
	return c
}

func TestProtobufWatchReplaysExactFramesAndInjectsProtobufErrors(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		t.Run("the typed client's protobuf watch decodes every recorded frame", func(t *testing.T) {
			r := src.replayer(t, protoCassette(t, 3), replay.Options{})
			w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			want := []got{{"ADDED", "p0", "101", "v"}, {"ADDED", "p1", "102", "v"}, {"ADDED", "p2", "103", "v"}}
			if d := cmp.Diff(want, recv(t, w, 3)); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
		t.Run("a watch-error edit is encoded as a protobuf ERROR event", func(t *testing.T) {
			r := src.replayer(t, protoCassette(t, 3), replay.Options{Edits: edits(t, "watch-error:request=1,after=1,code=410")})
			w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
			if err != nil {
				t.Fatal(err)
			}
			var evs []watch.Event
			for ev := range w.ResultChan() {
				evs = append(evs, ev)
			}
			if len(evs) != 2 || evs[1].Type != watch.Error || !apierrors.IsResourceExpired(apierrors.FromObject(evs[1].Object)) {
				t.Errorf("events %v; want one event then a 410 Expired ERROR", evs)
			}
		})
		t.Run("a JSON-only client is served the protobuf recording converted to JSON", func(t *testing.T) {
			r := src.replayer(t, protoCassette(t, 2), replay.Options{})
			resp, err := r.RoundTrip(rawRequest("/api/v1/namespaces/default/configmaps?resourceVersion=100&watch=true"))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q, want application/json", ct)
			}
			var lines []string
			sc := bufio.NewScanner(resp.Body)
			for len(lines) < 2 && sc.Scan() {
				lines = append(lines, sc.Text())
			}
			want := []string{
				`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"p0","namespace":"default","resourceVersion":"101"},"data":{"k":"v"}}}`,
				`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"p1","namespace":"default","resourceVersion":"102"},"data":{"k":"v"}}}`,
			}
			if d := cmp.Diff(want, lines); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	})
}
