package push_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
)

// TestRunRetriesA429 checks that client-go, not the push, retries a
// 429: the target answers the first try of each write with 429 and
// Retry-After: 0, as an overloaded API server's priority and fairness
// does, and every write is then taken once, none refused.
func TestRunRetriesA429(t *testing.T) {
	var mu sync.Mutex
	tries := map[string]int{}
	var taken []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		k := r.Method + " " + r.URL.Path
		tries[k]++
		if tries[k] == 1 {
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"TooManyRequests","code":429,"message":"too many requests, please try again later"}`)
			return
		}
		taken = append(taken, k)
		w.Header().Set("Content-Type", "application/json")
		if r.Method == http.MethodPost {
			w.WriteHeader(http.StatusCreated)
		}
		w.Write(body)
	}))
	defer srv.Close()
	dyn, err := dynamic.NewForConfig(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	p := plan(t, push.Roots)
	p.Changes = nil
	res, err := push.Run(t.Context(), p, push.Config{Client: dyn, Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /api/v1/namespaces", "POST /api/v1/namespaces/shop/secrets", "POST /api/v1/namespaces/shop/configmaps",
		"POST /api/v1/namespaces/shop/services", "POST /apis/apps/v1/namespaces/shop/deployments",
	}
	if d := cmp.Diff(want, taken); d != "" {
		t.Errorf("the writes taken (-want +got):\n%s", d)
	}
	if res.Pushed != 5 || len(res.Errors) != 0 {
		t.Errorf("pushed %d, errors %s; want 5, none", res.Pushed, res.ErrorSummary())
	}
}
