package e2e_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// TestLiveServeCarriesManyWatchesOnOneHTTP2Connection checks that client-go
// negotiates HTTP/2 with kwrec serve, as with the real API server, and that
// 200 concurrent watches share one TCP connection.
func TestLiveServeCarriesManyWatchesOnOneHTTP2Connection(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	cfg := serve(t, fx, rec.Cassette).Config(t)
	var dials atomic.Int32
	var d net.Dialer
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: 200 watches at once
	var w wire
	w.wrap(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().ConfigMaps(rec.Namespace).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("list: %v", err)
	}
	last := rec.Events[len(rec.Events)-1].RV
	const n = 200
	watches := make([]watch.Interface, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			timeout := int64(30)
			watches[i], errs[i] = cs.CoreV1().ConfigMaps(rec.Namespace).Watch(ctx, metav1.ListOptions{ResourceVersion: last, TimeoutSeconds: &timeout})
		})
	}
	start := time.Now()
	wg.Wait()
	t.Logf("%d watches started in %v", n, time.Since(start))
	defer func() {
		cancel() // first: an HTTP/1.1 watch can take its time to stop
		for _, w := range watches {
			if w != nil {
				w.Stop()
			}
		}
	}()
	for i := range n {
		if errs[i] != nil {
			t.Errorf("watch %d: %v", i, errs[i])
		}
	}
	log := w.log()
	if len(log) != n+1 {
		t.Errorf("%d responses, want %d (the list and %d watches)", len(log), n+1, n)
	}
	for _, x := range log {
		if x.Proto != "HTTP/2.0" {
			t.Errorf("%s: not HTTP/2.0", x)
			break
		}
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("%d TCP connections for a list and %d concurrent watches, want 1", got, n)
	}
}

// TestLiveServeWarnsAboutAnEditThatDidNotFire checks that kwrec serve,
// stopped with SIGTERM, names on stderr every edit no client reached.
func TestLiveServeWarnsAboutAnEditThatDidNotFire(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	for _, tc := range []struct{ name, edit string }{
		{"an edit on a collection no client reads", "watch-error:resource=secrets,rv=1,code=410"},
		{"an edit on the recorded watch when the client only lists", fmt.Sprintf("watch-error:request=%d,after=1,code=410", rec.WatchID)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, fx, rec.Cassette, "--edit", tc.edit)
			cs, err := kubernetes.NewForConfig(s.Config(t))
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().ConfigMaps(rec.Namespace).List(t.Context(), metav1.ListOptions{Limit: 500}); err != nil {
				t.Fatalf("list: %v", err)
			}
			stderr := s.Stop(t)
			warned := false
			for _, line := range strings.Split(stderr, "\n") {
				if strings.Contains(line, tc.edit) && strings.Contains(line, "did not fire") {
					warned = true
				}
			}
			if !warned {
				t.Errorf("kwrec serve stderr has no line with %q and \"did not fire\"; stderr:\n%s", tc.edit, stderr)
			}
		})
	}
}
