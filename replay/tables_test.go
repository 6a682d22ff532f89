package replay_test

import (
	"encoding/json"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/replay"
)

// TestKubectlsTableOfAWrittenBuiltinKindHasTheServersColumns writes
// objects of built-in kinds the recording never saw through the overlay
// and lists them in kubectl's Table form: their rows are printed by the
// ported printers, every column of the server's (the live tests compare
// them with kube-apiserver's), not NAME and AGE alone.
func TestKubectlsTableOfAWrittenBuiltinKindHasTheServersColumns(t *testing.T) {
	r, err := replay.Open("../internal/testkit/benchmarks/testdata/recorded-2000cm.kwrec.zst", replay.Options{Writes: replay.WritesOverlay, Hold: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cs := clientset(t, r.Config())
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP,
		ClusterIP: "None", ClusterIPs: []string{"None"}, Selector: map[string]string{"app": "web"},
		Ports: []corev1.ServicePort{{Port: 80, Protocol: corev1.ProtocolTCP}}}}
	if _, err := cs.CoreV1().Services("default").Create(ctxT(t), svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	two := int32(2)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{Replicas: &two,
		Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}}}
	if _, err := cs.AppsV1().Deployments("default").Create(ctxT(t), dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		columns    []string
		cells      []any // the Age cell left out
	}{
		{name: "a Service prints its type, cluster IP, external IP, ports and selector",
			path:    "/api/v1/namespaces/default/services",
			columns: []string{"Name", "Type", "Cluster-IP", "External-IP", "Port(s)", "Age", "Selector"},
			cells:   []any{"web", "ClusterIP", "None", "<none>", "80/TCP", "app=web"}},
		{name: "a Deployment prints its replicas, containers, images and selector",
			path:    "/apis/apps/v1/namespaces/default/deployments",
			columns: []string{"Name", "Ready", "Up-to-date", "Available", "Age", "Containers", "Images", "Selector"},
			cells:   []any{"web", "0/2", 0.0, 0.0, "c", "busybox", "app=web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := rawRequest(tc.path)
			req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")
			resp, err := r.RoundTrip(req.Clone(ctxT(t)))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			var tab struct {
				Kind              string
				ColumnDefinitions []struct{ Name string }
				Rows              []struct{ Cells []any }
			}
			if err := json.Unmarshal(body, &tab); err != nil || tab.Kind != "Table" || len(tab.Rows) != 1 {
				t.Fatalf("GET %s: %v, want a Table of one row: %s", tc.path, err, body)
			}
			var columns []string
			for _, c := range tab.ColumnDefinitions {
				columns = append(columns, c.Name)
			}
			if d := cmp.Diff(tc.columns, columns); d != "" {
				t.Errorf("columns (-want +got):\n%s", d)
			}
			age := 0
			for i, c := range columns {
				if c == "Age" {
					age = i
				}
			}
			cells := tab.Rows[0].Cells
			if len(cells) != len(columns) {
				t.Fatalf("%d cells %v for %d columns", len(cells), cells, len(columns))
			}
			if d := cmp.Diff(tc.cells, append(cells[:age:age], cells[age+1:]...)); d != "" {
				t.Errorf("cells but Age (-want +got):\n%s", d)
			}
		})
	}
}
