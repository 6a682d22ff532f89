package recorder_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/recorder"
)

// A watch is framed the same over HTTP/2 and over HTTP/1.1 chunked
// encoding, whatever chunks each protocol delivers.
func TestAWatchIsFramedTheSameOverHTTP1AndHTTP2(t *testing.T) {
	var events []string
	for i := range 5 {
		events = append(events, fmt.Sprintf(`{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"c%d","resourceVersion":"%d"}}}`+"\n", i, 10+i))
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fl := w.(http.Flusher)
		for _, ev := range events {
			// split each event across two writes, as the API server's
			// 2048-byte chunks split objects
			io.WriteString(w, ev[:7])
			fl.Flush()
			io.WriteString(w, ev[7:])
			fl.Flush()
		}
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	t.Cleanup(srv.Close)

	h2 := srv.Client().Transport.(*http.Transport).Clone()
	h1 := srv.Client().Transport.(*http.Transport).Clone()
	h1.ForceAttemptHTTP2 = false
	h1.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
	h1.TLSClientConfig.NextProtos = []string{"http/1.1"}

	for _, tt := range []struct {
		name  string
		rt    *http.Transport
		major int
	}{{"HTTP/2", h2, 2}, {"HTTP/1.1", h1, 1}} {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, recorder.Options{})
			c := &http.Client{Transport: s.rec.Wrap(tt.rt)}
			resp, err := c.Get(srv.URL + "/api/v1/namespaces/default/configmaps?watch=true")
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != tt.major {
				t.Fatalf("spoke %s, want HTTP/%d", resp.Proto, tt.major)
			}
			if _, err := io.ReadAll(resp.Body); err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cas := s.finish()
			if diff := cmp.Diff(events, frameStrings(cas.Interactions[0])); diff != "" {
				t.Errorf("frames over %s (-sent +recorded):\n%s", tt.name, diff)
			}
		})
	}
}
