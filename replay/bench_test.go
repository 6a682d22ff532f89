package replay_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// benchEvents is a watch of n ConfigMaps of about 1 KB each.
func benchEvents(n int) *cassettes.Cassette {
	pad := strings.Repeat("x", 900)
	frames := make([]cassettes.Frame, n)
	for i := range frames {
		frames[i] = eventFrame(time.Duration(i)*time.Millisecond, "ADDED", cmJSON(fmt.Sprint("cm", i), 101+i, pad))
	}
	return watchCassette("eof", frames...)
}

// bareTransport serves a fixed body: the client's own decode limit.
type bareTransport struct{ body []byte }

func (b bareTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Status: "200 OK", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
		Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(b.body)),
		ContentLength: -1, Request: req}, nil
}

func benchWatch(b *testing.B, n int, cfg func() *rest.Config) {
	b.ReportAllocs()
	for b.Loop() {
		w, err := clientset(b, cfg()).CoreV1().ConfigMaps("default").Watch(ctxT(b), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			b.Fatal(err)
		}
		count := 0
		for range w.ResultChan() {
			count++
		}
		if count != n {
			b.Fatalf("%d events, want %d", count, n)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkTypedWatch compares replay at speed 0 with the same bytes from a
// bare in-memory RoundTripper.
func BenchmarkTypedWatch(b *testing.B) {
	const n = 5000
	c := benchEvents(n)
	b.Run("replay", func(b *testing.B) {
		benchWatch(b, n, func() *rest.Config {
			r, err := replay.New(c, replay.Options{Strict: true})
			if err != nil {
				b.Fatal(err)
			}
			return r.Config()
		})
	})
	b.Run("bare", func(b *testing.B) {
		body := c.Interactions[0].Body()
		benchWatch(b, n, func() *rest.Config {
			return &rest.Config{Host: "https://bare.invalid", Transport: bareTransport{body}, QPS: -1}
		})
	})
}
