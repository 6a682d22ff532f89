package replay_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// labelledCM is a ConfigMap of default with labels (a JSON object, ""
// for none).
func labelledCM(name string, rv int, value, labels string) string {
	l := ""
	if labels != "" {
		l = `,"labels":` + labels
	}
	return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","uid":"u-%s","resourceVersion":"%d"%s},"data":{"k":%q}}`, name, name, rv, l, value)
}

func TestAWatchWithASelectorSeesObjectsMoveInAndOut(t *testing.T) {
	demo := `{"app":"demo"}`
	c := watchCassette(cassettes.EndStopped,
		eventFrame(1*time.Millisecond, "ADDED", labelledCM("a", 101, "1", demo)),
		eventFrame(2*time.Millisecond, "ADDED", labelledCM("b", 102, "1", "")),
		eventFrame(3*time.Millisecond, "MODIFIED", labelledCM("b", 103, "2", demo)), // b moves in
		eventFrame(4*time.Millisecond, "MODIFIED", labelledCM("a", 104, "3", "")),   // a moves out
		eventFrame(5*time.Millisecond, "MODIFIED", labelledCM("a", 105, "4", "")),   // a stays out
		eventFrame(6*time.Millisecond, "DELETED", labelledCM("b", 106, "2", demo)),
	)
	// As kube-apiserver's watch sends them: b's move in is ADDED; a's
	// move out is DELETED with the last version that matched (k=1) at
	// the change's resourceVersion; a's later change is not sent.
	want := []got{{"ADDED", "a", "101", "1"}, {"ADDED", "b", "103", "2"}, {"DELETED", "a", "104", "1"}, {"DELETED", "b", "106", "2"}}
	for _, proto := range []bool{false, true} {
		t.Run(fmt.Sprintf("protobuf=%v", proto), func(t *testing.T) {
			r := fromFile.replayer(t, c, replay.Options{})
			cfg := r.Config()
			if proto {
				cfg.ContentType = "application/vnd.kubernetes.protobuf"
				cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			}
			w, err := clientset(t, cfg).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100", LabelSelector: "app=demo"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if d := cmp.Diff(want, recv(t, w, len(want))); d != "" {
				t.Errorf("events (-want +got):\n%s", d)
			}
		})
	}
}

func TestAWriteMovesAnObjectOutOfAWatchsSelection(t *testing.T) {
	for _, proto := range []bool{false, true} {
		t.Run(fmt.Sprintf("protobuf=%v", proto), func(t *testing.T) {
			// Hold: the recorded changes stay back, the write alone moves the world.
			r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, Hold: true})
			cfg := r.Config()
			if proto {
				cfg.ContentType = "application/vnd.kubernetes.protobuf"
				cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
			}
			cms := clientset(t, cfg).CoreV1().ConfigMaps("default")
			w, err := cms.Watch(ctxT(t), metav1.ListOptions{LabelSelector: "app=demo"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if got := recv(t, w, 1)[0]; got.Type != "ADDED" || got.Name != "a" {
				t.Fatalf("first event %v, want a ADDED (it carries app=demo)", got)
			}
			a, err := cms.Get(ctxT(t), "a", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			a.Labels = nil
			a.Data = map[string]string{"k": "unlabelled"}
			updated, err := cms.Update(ctxT(t), a, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// DELETED, with what the watch last saw of a, at the update's
			// resourceVersion.
			want := got{"DELETED", "a", updated.ResourceVersion, "1"}
			if d := cmp.Diff(want, recv(t, w, 1)[0]); d != "" {
				t.Errorf("the update's event (-want +got):\n%s", d)
			}
		})
	}
}

func TestAMoveOutAfterTheRecordingIsOutCarriesTheRecordedVersion(t *testing.T) {
	// A list-only recording: the watch has sent every recorded change (none)
	// before the writes come, and reads the version it last sent of "in"
	// from the recorded list.
	list := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + labelledCM("in", 90, "1", `{"app":"demo"}`) + `,` + labelledCM("out", 95, "1", "") + `]}`
	c := &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{{
		ID:       1,
		Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443" + cmPath, Header: http.Header{"Accept": {"application/json"}}},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/json"}}},
		Frames:   []cassettes.Frame{{Data: []byte(list)}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}}}
	r := fromFile.replayer(t, c, replay.Options{Writes: replay.WritesOverlay})
	cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
	w, err := cms.Watch(ctxT(t), metav1.ListOptions{LabelSelector: "app=demo", ResourceVersion: "100000"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	in, err := cms.Get(ctxT(t), "in", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	in.Labels, in.Data = nil, map[string]string{"k": "2"}
	updated, err := cms.Update(ctxT(t), in, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := got{"DELETED", "in", updated.ResourceVersion, "1"}
	if d := cmp.Diff(want, recv(t, w, 1)[0]); d != "" {
		t.Errorf("the update's event (-want +got):\n%s", d)
	}
}

func TestKubectlsTableWatchWithASelectorSeesAWriteMoveAnObjectOut(t *testing.T) {
	// A real recording with kubectl's Table form, in overlay mode: kubectl
	// get -w -l sends this Accept, and gets rows.
	r, err := replay.Open("../internal/testkit/benchmarks/testdata/recorded-2000cm.kwrec.zst", replay.Options{Writes: replay.WritesOverlay, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctxT(t), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "moving", Labels: map[string]string{"app": "demo"}}, Data: map[string]string{"k": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	req := rawRequest(cmPath + "?watch=true&labelSelector=app%3Ddemo&resourceVersion=" + cm.ResourceVersion)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
	resp, err := r.RoundTrip(req.Clone(ctxT(t)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cm.Labels = nil
	if _, err := cms.Update(ctxT(t), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string
		Object struct {
			Kind string
			Rows []struct{ Cells []any }
		}
	}
	if err := json.Unmarshal(line, &ev); err != nil {
		t.Fatalf("%v: %s", err, line)
	}
	if ev.Type != "DELETED" || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || len(ev.Object.Rows[0].Cells) == 0 || ev.Object.Rows[0].Cells[0] != "moving" {
		t.Errorf("the update's event: %s, want a DELETED Table row of moving", line)
	}
}
