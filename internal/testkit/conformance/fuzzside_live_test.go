package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// fuzzSide is one of the two answerers of a sequence (the server or the
// overlay): its client, and the continue token of its last list of each
// collection, which contToken resolves to.
type fuzzSide struct {
	hc   *http.Client
	host string
	cont map[string]string
}

// sides returns the server's side and the overlay's, with no continue
// tokens yet.
func (w *world) sides() (live, over *fuzzSide) {
	return &fuzzSide{hc: w.live, host: w.liveHost, cont: map[string]string{}},
		&fuzzSide{hc: w.overlay, host: w.oHost, cont: map[string]string{}}
}

// send resolves r's tokens for s, sends it, keeps the continue token a
// list answered, and returns the answer, r as sent, and how long the
// answer took (the tokens' resolution aside).
func (w *world) send(t *testing.T, s *fuzzSide, r row) (answer, row, time.Duration) {
	t.Helper()
	r = w.resolveRV(t, s.hc, s.host, r)
	collection, _, _ := strings.Cut(r.path, "?")
	r.path = strings.ReplaceAll(r.path, contToken, url.QueryEscape(s.cont[collection]))
	t0 := time.Now()
	a := w.do(t, s.hc, s.host, r)
	took := time.Since(t0)
	if r.method == http.MethodGet {
		s.cont[collection] = a.cont
	}
	return a, r, took
}

// fuzzWatched are the collections of a seed's namespace (%s) a watch
// follows through the seed, each with the object created at its end,
// whose ADDED event tells the watch has seen everything before it.
var fuzzWatched = []struct{ path, end string }{
	{"/api/v1/namespaces/%s/configmaps", `{"metadata":{"name":"zz-end"}}`},
	{"/api/v1/namespaces/%s/secrets", `{"metadata":{"name":"zz-end"}}`},
	{"/api/v1/namespaces/%s/pods", pod("zz-end")},
	{"/apis/apps/v1/namespaces/%s/deployments", deployment("zz-end", 0)},
	{"/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles", `{"metadata":{"name":"zz-end"}}`},
	{"/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings", `{"metadata":{"name":"zz-end"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"zz-end"}}`},
	{"/apis/example.com/v1/namespaces/%s/widgets", widget("zz-end", `{"size":1}`)},
}

// fuzzWatch is one open watch: the events its reader passes on.
type fuzzWatch struct {
	cancel context.CancelFunc
	events chan map[string]any
}

// watchAll opens a watch of each of fuzzWatched's collections in ns on s,
// from the seed's start: on the server the resourceVersion of one list
// (etcd's revision, which every collection shares), on the overlay the
// one a list of each collection answers (its versions are counted per
// collection).
func (w *world) watchAll(t *testing.T, s *fuzzSide, ns string) []*fuzzWatch {
	t.Helper()
	ws := make([]*fuzzWatch, len(fuzzWatched))
	var start string
	for i, c := range fuzzWatched {
		path := fmt.Sprintf(c.path, ns)
		if start == "" || s.hc == w.overlay {
			start = w.listRV(t, s, path)
		}
		ws[i] = w.watch(t, s, path, start)
	}
	return ws
}

// listRV returns the resourceVersion of a one-item list of path on s.
func (w *world) listRV(t *testing.T, s *fuzzSide, path string) string {
	t.Helper()
	a := w.do(t, s.hc, s.host, row{method: "GET", path: path + "?limit=1"})
	if a.Code != http.StatusOK || a.rv == "" {
		t.Fatalf("list %s on %s: %d %v", path, s.host, a.Code, a.Body)
	}
	return a.rv
}

// watch opens a watch of path on s from rv; a goroutine passes its events
// on until the watch is cancelled.
func (w *world) watch(t *testing.T, s *fuzzSide, path, rv string) *fuzzWatch {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", s.host+path+"?watch=true&resourceVersion="+rv, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := s.hc.Do(req)
	if err != nil {
		cancel()
		t.Fatalf("watch %s on %s: %v", path, s.host, err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		t.Fatalf("watch %s on %s: %s", path, s.host, resp.Status)
	}
	fw := &fuzzWatch{cancel: cancel, events: make(chan map[string]any, 1<<12)}
	go func() {
		defer resp.Body.Close()
		defer close(fw.events)
		dec := json.NewDecoder(resp.Body)
		for {
			var ev map[string]any
			if dec.Decode(&ev) != nil {
				return
			}
			fw.events <- ev
		}
	}()
	return fw
}

// endWatches creates each watched collection's end object in ns on s,
// reads each watch up to its ADDED event, closes the watches, and returns
// the events they saw, normalized, the collections' in fuzzWatched's
// order.
func (w *world) endWatches(t *testing.T, s *fuzzSide, ns string, ws []*fuzzWatch) []any {
	t.Helper()
	var all []any
	for i, c := range fuzzWatched {
		path := fmt.Sprintf(c.path, ns)
		if a := w.do(t, s.hc, s.host, row{method: "POST", path: path, body: c.end}); a.Code != http.StatusCreated {
			t.Fatalf("the end of the watch of %s on %s: %d %v", path, s.host, a.Code, a.Body)
		}
		all = append(all, readToEnd(ws[i], path))
		ws[i].cancel()
	}
	return all
}

// readToEnd returns the events of fw up to the end object's ADDED event,
// with what stopped it short if something did.
func readToEnd(fw *fuzzWatch, path string) []any {
	events := []any{path}
	timeout := time.NewTimer(requestTimeout)
	defer timeout.Stop()
	for {
		select {
		case ev, ok := <-fw.events:
			if !ok {
				return append(events, "the watch ended before its end object")
			}
			obj, _ := ev["object"].(map[string]any)
			md, _ := obj["metadata"].(map[string]any)
			if ev["type"] == "ADDED" && md["name"] == "zz-end" {
				return events
			}
			events = append(events, normalize(ev))
		case <-timeout.C:
			return append(events, "no end object within the request timeout")
		}
	}
}
