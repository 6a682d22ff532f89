package recorder_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"go.uber.org/goleak"

	"github.com/kwrec/kwrec/recorder"
)

// TestARecordingLeavesNoGoroutine records a watch that ends in each way a
// stream ends, then closes the recorder and its cassette: no goroutine of
// the recorder, the writer or the stream is left.
func TestARecordingLeavesNoGoroutine(t *testing.T) {
	tests := []struct {
		name string
		// end ends the client's side after the first event: it returns
		// the body read's error, or nil when it read to the end.
		end func(cancel context.CancelFunc, body io.ReadCloser) error
		// serverEnds says the upstream ends the stream itself.
		serverEnds bool
	}{
		{"a stream the server ends", func(_ context.CancelFunc, b io.ReadCloser) error {
			_, err := io.Copy(io.Discard, b)
			return err
		}, true},
		{"a request cancelled mid-stream", func(cancel context.CancelFunc, b io.ReadCloser) error {
			cancel()
			_, err := io.Copy(io.Discard, b)
			return err
		}, false},
		{"a client that closes the body mid-stream", func(_ context.CancelFunc, b io.ReadCloser) error {
			return b.Close()
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"d","resourceVersion":"1"}}}` + "\n"))
				w.(http.Flusher).Flush()
				if !tt.serverEnds {
					<-r.Context().Done()
				}
			}))
			s := newSession(t, recorder.Options{})
			tr := &http.Transport{}
			client := &http.Client{Transport: s.rec.Wrap(tr)}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", upstream.URL+"/api/v1/namespaces/d/configmaps?watch=true", nil)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 1)
			if _, err := resp.Body.Read(line); err != nil {
				t.Fatal(err)
			}
			err = tt.end(cancel, resp.Body)
			if tt.serverEnds && err != nil {
				t.Errorf("reading to the end: %v", err)
			}
			resp.Body.Close()
			s.finish()
			tr.CloseIdleConnections()
			upstream.Close()
		})
	}
}
