package replay_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/replay"
)

// TestNoOverlayRequestOutlivesItsClientsTimeout sends one request of each
// verb, subresource and view to an overlay replay with the recorded
// changes held back (the replay never runs out by itself), each with a
// client deadline: every one must answer (and a watch with timeoutSeconds
// end) before it. A hang fails with the request named. At speed 100 a
// watch's timeoutSeconds=1 lasts 10 ms.
func TestNoOverlayRequestOutlivesItsClientsTimeout(t *testing.T) {
	const (
		cms  = "/api/v1/namespaces/default/configmaps"
		deps = "/apis/apps/v1/namespaces/default/deployments"
		pods = "/api/v1/namespaces/default/pods"
		meta = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
		list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	)
	deployment := `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	steps := []struct {
		name, method, path, ct, accept, body string
	}{
		{"get", "GET", cms + "/a", "", "", ""},
		{"get of a missing object", "GET", cms + "/nope", "", "", ""},
		{"list", "GET", cms, "", "", ""},
		{"list across namespaces", "GET", "/api/v1/configmaps", "", "", ""},
		{"list at a resourceVersion never recorded", "GET", cms + "?resourceVersion=999999999&resourceVersionMatch=NotOlderThan", "", "", ""},
		{"paged list", "GET", cms + "?limit=1", "", "", ""},
		{"metadata-only get", "GET", cms + "/a", "", meta, ""},
		{"metadata-only list", "GET", cms, "", list, ""},
		{"watch with timeoutSeconds", "GET", cms + "?watch=true&timeoutSeconds=1", "", "", ""},
		{"watch across namespaces with timeoutSeconds", "GET", "/api/v1/configmaps?watch=true&timeoutSeconds=1", "", "", ""},
		{"metadata-only watch with timeoutSeconds", "GET", cms + "?watch=true&timeoutSeconds=1", "", meta, ""},
		{"streaming list with timeoutSeconds", "GET", cms + "?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1", "", "", ""},
		{"watch of a resource never recorded", "GET", deps + "?watch=true&timeoutSeconds=1", "", "", ""},
		{"create", "POST", cms, "application/json", "", `{"metadata":{"name":"n"}}`},
		{"update", "PUT", cms + "/n", "application/json", "", `{"metadata":{"name":"n"},"data":{"k":"v"}}`},
		{"merge patch", "PATCH", cms + "/n", "application/merge-patch+json", "", `{"data":{"x":"1"}}`},
		{"apply", "PATCH", cms + "/n?fieldManager=t", "application/apply-patch+yaml", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: n\n"},
		{"delete", "DELETE", cms + "/n", "", "", ""},
		{"deletecollection", "DELETE", cms + "?labelSelector=none%3Dx", "", "", ""},
		{"create of a Deployment", "POST", deps, "application/json", "", deployment},
		{"get of a scale", "GET", deps + "/d/scale", "", "", ""},
		{"patch of a scale", "PATCH", deps + "/d/scale", "application/merge-patch+json", "", `{"spec":{"replicas":2}}`},
		{"status patch", "PATCH", deps + "/d/status", "application/merge-patch+json", "", `{"status":{"replicas":1}}`},
		{"create of a Pod", "POST", pods, "application/json", "", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		{"binding", "POST", pods + "/p/binding", "application/json", "", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"name":"n1"}}`},
		{"eviction", "POST", pods + "/p/eviction", "application/json", "", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`},
		{"token of a missing ServiceAccount", "POST", "/api/v1/namespaces/default/serviceaccounts/sa/token", "application/json", "", `{"spec":{}}`},
		{"a subresource not simulated", "POST", pods + "/p/exec", "application/json", "", `{}`},
		{"a foreground delete with dependents to collect", "DELETE", deps + "/d", "application/json", "", `{"propagationPolicy":"Foreground"}`},
	}
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, Speed: 100, Hold: true})
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				req, err := http.NewRequestWithContext(ctx, s.method, "https://x"+s.path, strings.NewReader(s.body))
				if err != nil {
					t.Fatal(err)
				}
				if s.ct != "" {
					req.Header.Set("Content-Type", s.ct)
				}
				req.Header.Set("Accept", "application/json")
				if s.accept != "" {
					req.Header.Set("Accept", s.accept)
				}
				start := time.Now()
				resp, err := r.RoundTrip(req)
				if err == nil {
					_, err = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
					t.Fatalf("%s %s: no answer within the client's 10s (%v after %v)", s.method, s.path, err, time.Since(start))
				}
				if err != nil {
					t.Fatalf("%s %s: %v", s.method, s.path, err)
				}
			})
		}
	})
}
