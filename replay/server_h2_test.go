package replay_test

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

func TestTheServerSpeaksHTTP2AndClientGoMultiplexesItsWatches(t *testing.T) {
	r := fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
	kc := startServer(t, &replay.Server{Replayer: r})
	cfg, err := clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		t.Fatal(err)
	}
	var dials atomic.Int32
	d := &net.Dialer{}
	cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
		dials.Add(1)
		return d.DialContext(ctx, network, addr)
	}
	var mu sync.Mutex
	protos := map[string]int{}
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return rtFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil {
				mu.Lock()
				protos[resp.Proto]++
				mu.Unlock()
			}
			return resp, err
		})
	}
	cfg.QPS, cfg.Burst = -1, -1
	cs := kubernetes.NewForConfigOrDie(cfg)
	// One request first, as any client's discovery is: Go's transport
	// dials once per request still waiting when the first connection is
	// not up yet, whatever the protocol.
	if _, err := cs.CoreV1().ConfigMaps("default").List(ctxT(t), metav1.ListOptions{Limit: 500, ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}
	// More than x/net's default of 250 streams a connection, fewer than
	// the API server's (and the replay server's) 1,000.
	const n = 400
	ws := make([]watch.Interface, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w, err := cs.CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
			if err != nil {
				errs <- err
				return
			}
			ws[i] = w
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, w := range ws {
		recv(t, w, 4)
		w.Stop()
	}
	if protos["HTTP/2.0"] != n+1 || len(protos) != 1 {
		t.Errorf("responses by protocol %v; want all %d over HTTP/2.0", protos, n+1)
	}
	if got := dials.Load(); got != 1 {
		t.Errorf("%d connections for %d concurrent watches; want 1", got, n)
	}
}
