package replay_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// loadCassette is a list of two ConfigMaps at resourceVersion 100, then a
// watch from 100 of n events (creates and updates), ended cleanly; want is
// the sequence every watch client must receive.
func loadCassette(n int) (c *cassettes.Cassette, list []string, want []string) {
	const host = "https://127.0.0.1:6443"
	cm := func(name string, rv int, v string) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","uid":"uid-%s","resourceVersion":"%d"},"data":{"k":%q}}`, name, name, rv, v)
	}
	items := []string{cm("a", 98, "a0"), cm("b", 99, "b0")}
	list = []string{"a@98=a0", "b@99=b0"}
	listBody := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + strings.Join(items, ",") + "]}\n"
	jsonHeader := http.Header{"Content-Type": {"application/json"}}
	accept := http.Header{"Accept": {"application/json"}}
	var frames []cassettes.Frame
	for i := range n {
		typ, name, v := "ADDED", fmt.Sprintf("cm-%03d", i/2), fmt.Sprintf("v%d", i)
		if i%2 == 1 {
			typ = "MODIFIED"
		}
		rv := 101 + i
		frames = append(frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond,
			Data: []byte(`{"type":"` + typ + `","object":` + cm(name, rv, v) + "}\n")})
		want = append(want, fmt.Sprintf("%s %s@%d=%s", typ, name, rv, v))
	}
	c = &cassettes.Cassette{Header: cassettes.Header{Version: 1, Server: "v1.37.2"}, Interactions: []*cassettes.Interaction{
		{ID: 1, Request: cassettes.Request{Method: "GET", URL: host + "/api/v1/namespaces/default/configmaps?resourceVersion=100&resourceVersionMatch=Exact", Header: accept},
			Response: &cassettes.Response{Status: 200, Header: jsonHeader, Latency: time.Millisecond},
			Frames:   []cassettes.Frame{{Data: []byte(listBody)}}, End: &cassettes.End{Reason: cassettes.EndEOF}},
		{ID: 2, At: 5 * time.Millisecond, Request: cassettes.Request{Method: "GET", URL: host + "/api/v1/namespaces/default/configmaps?resourceVersion=100&watch=true", Header: accept},
			Response: &cassettes.Response{Status: 200, Header: jsonHeader, Latency: time.Millisecond},
			Frames:   frames, End: &cassettes.End{At: frames[len(frames)-1].At, Reason: cassettes.EndEOF}},
	}}
	return c, list, want
}

// TestTheServerServesTwoHundredConcurrentWatchClients starts one HTTPS
// replay server and 200 client-go clients at once, each with the server's
// token: each lists at resourceVersion 100 and watches from there, and must
// get the recorded list and every recorded event, in order, nothing more.
// The first client to ask is served the recording; the others the same
// sequence from the recorded timeline.
func TestTheServerServesTwoHundredConcurrentWatchClients(t *testing.T) {
	const (
		clients = 200
		events  = 40
	)
	c, wantList, wantEvents := loadCassette(events)
	// Not ErrorWhenExhausted: the first client to finish would end the
	// replay for the others. Each client stops after the full sequence.
	r, err := replay.New(c, replay.Options{})
	if err != nil {
		t.Fatal(err)
	}
	srv := &replay.Server{Replayer: r}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if !strings.HasPrefix(srv.URL(), "https://127.0.0.1:") {
		t.Fatalf("server at %s, want loopback HTTPS", srv.URL())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()

	cfg := srv.Config()
	cfg.QPS, cfg.Burst = -1, 0 // no client-side rate limit: all at once
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	start := make(chan struct{})
	results := make([][]string, clients)
	errs := make([]error, clients)
	var wg sync.WaitGroup
	for i := range clients {
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i], errs[i] = listAndWatch(ctx, cs, len(wantList)+len(wantEvents))
		}()
	}
	began := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(began)

	want := append(append([]string{}, wantList...), wantEvents...)
	served := 0
	for i := range clients {
		if errs[i] != nil {
			t.Errorf("client %d: %v (after %d of %d items and events)", i, errs[i], len(results[i]), len(want))
			continue
		}
		if d := cmp.Diff(want, results[i]); d != "" {
			t.Errorf("client %d received another sequence (-recorded +received):\n%s", i, d)
			continue
		}
		served++
	}
	t.Logf("%d of %d clients served the full sequence (%d list items and %d events each) in %v", served, clients, len(wantList), len(wantEvents), elapsed.Round(time.Millisecond))
	select {
	case <-r.Done():
	default:
		t.Error("Replayer.Done() is not closed after every client consumed the cassette")
	}
}

// listAndWatch lists at resourceVersion 100 exactly, then watches from it
// until it has n items and events (or the stream ends), returning them.
func listAndWatch(ctx context.Context, cs kubernetes.Interface, n int) ([]string, error) {
	cms := cs.CoreV1().ConfigMaps("default")
	l, err := cms.List(ctx, metav1.ListOptions{ResourceVersion: "100", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	var out []string
	for _, cm := range l.Items {
		out = append(out, cm.Name+"@"+cm.ResourceVersion+"="+cm.Data["k"])
	}
	if l.ResourceVersion != "100" {
		return out, fmt.Errorf("list at resourceVersion %q, want 100", l.ResourceVersion)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100"})
	if err != nil {
		return out, fmt.Errorf("watch: %w", err)
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return out, nil
			}
			cm, isCM := ev.Object.(*corev1.ConfigMap)
			if ev.Type == watch.Error || !isCM {
				return out, fmt.Errorf("unexpected %s event %v", ev.Type, ev.Object)
			}
			out = append(out, fmt.Sprintf("%s %s@%s=%s", ev.Type, cm.Name, cm.ResourceVersion, cm.Data["k"]))
			if len(out) == n {
				return out, nil
			}
		case <-ctx.Done():
			return out, fmt.Errorf("watch not ended by the replay: %w", ctx.Err())
		}
	}
}
