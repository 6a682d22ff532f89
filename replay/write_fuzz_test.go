package replay_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzWrite sends any write (method, path under the recorded namespace,
// query, Content-Type, body) to an Overlay replay: it never panics or
// hangs, and every answer is a JSON object: a metav1.Status for a failure,
// the written object or a Success Status otherwise.
func FuzzWrite(f *testing.F) {
	for _, s := range []struct{ method, path, ct, body string }{
		{"POST", "configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`},
		{"POST", "configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-"}}`},
		{"POST", "configmaps", "application/json", `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`},
		{"POST", "configmaps", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`},
		{"POST", "configmaps", "application/json", `{not json`},
		{"PUT", "configmaps/a", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"1"}}`},
		{"PATCH", "configmaps/a", "application/merge-patch+json", `{"data":{"k":"v"}}`},
		{"PATCH", "configmaps/a", "application/strategic-merge-patch+json", `{"data":{"k":null}}`},
		{"PATCH", "configmaps/a", "application/json-patch+json", `[{"op":"remove","path":"/data"}]`},
		{"PATCH", "configmaps/a?fieldManager=m&force=true", "application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"},
		{"PATCH", "configmaps/a", "text/plain", `x`},
		{"PATCH", "configmaps/a/status", "application/merge-patch+json", `{}`},
		{"DELETE", "configmaps/a", "application/json", `{"preconditions":{"resourceVersion":"1"}}`},
		{"DELETE", "configmaps/a?dryRun=All", "", ``},
		{"DELETE", "configmaps", "", ``},
		{"POST", "pods/p/eviction", "application/json", `{}`},
		{"POST", "widgets", "application/json", `{}`},
	} {
		f.Add(s.method, s.path, s.ct, []byte(s.body))
	}
	c := fixture(f, "configmaps.kwrec")
	f.Fuzz(func(t *testing.T, method, path, ct string, body []byte) {
		switch method {
		case "POST", "PUT", "PATCH", "DELETE":
		default:
			return
		}
		r, err := replay.New(c, replay.Options{Writes: replay.WritesOverlay})
		if err != nil {
			t.Fatal(err)
		}
		req, err := http.NewRequest(method, "https://x/api/v1/namespaces/default/"+path, bytes.NewReader(body))
		if err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req = req.WithContext(ctx)
		req.Header.Set("Content-Type", ct)
		req.Header.Set("Accept", "application/json")
		resp, err := r.RoundTrip(req)
		if err != nil {
			if !replay.IsNoMatch(err) {
				t.Fatalf("%s %s: %v, want an answer or ErrNoMatch", method, path, err)
			}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("%s %s: reading the answer: %v", method, path, err)
		}
		var tm metav1.TypeMeta
		if err := json.Unmarshal(b, &tm); err != nil || tm.Kind == "" {
			t.Fatalf("%s %s: %d answer %q is not a typed JSON object (%v)", method, path, resp.StatusCode, b, err)
		}
		if resp.StatusCode >= 300 && tm.Kind != "Status" {
			t.Fatalf("%s %s: %d answer is a %s, want a Status", method, path, resp.StatusCode, tm.Kind)
		}
	})
}
