package write

import (
	"errors"
	"net/url"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// FuzzApply feeds arbitrary verbs, media types, bodies and current objects:
// Apply must never panic and every error must be a *StatusError.
func FuzzApply(f *testing.F) {
	f.Add("create", "application/json", []byte(`{"metadata":{"generateName":"g-"}}`), []byte(nil), false)
	f.Add("update", "application/json", []byte(`{"metadata":{"name":"x"},"data":{"a":"2"}}`), []byte(stored), false)
	f.Add("patch", "application/merge-patch+json", []byte(`{"data":{"b":null}}`), []byte(stored), false)
	f.Add("patch", "application/strategic-merge-patch+json", []byte(`{"data":{"$patch":"replace"}}`), []byte(stored), false)
	f.Add("patch", "application/json-patch+json", []byte(`[{"op":"remove","path":"/data"}]`), []byte(stored), false)
	f.Add("patch", "application/apply-patch+yaml", []byte("metadata:\n  name: x\ndata:\n  a: b\n"), []byte(stored), true)
	f.Add("delete", "", []byte(`{"preconditions":{"uid":"u"}}`), []byte(stored), false)
	f.Fuzz(func(t *testing.T, verb, ct string, body, cur []byte, crd bool) {
		req := cm(verb, "x")
		if crd {
			req = widget(verb, "x")
		}
		req.ContentType = ct
		req.Body = body
		req.Query = url.Values{"fieldManager": {"fz"}}
		var e Engine
		_, err := e.Apply(req, cur, stamp("9"))
		var se *apierrors.StatusError
		if err != nil && !errors.As(err, &se) {
			t.Fatalf("error %T %v is not a *StatusError", err, err)
		}
	})
}
