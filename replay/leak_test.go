package replay_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	"go.uber.org/goleak"
)

// TestAReplayLeavesNoGoroutine serves a recorded watch that ends in each
// way a stream ends, in process and through the server, then closes the
// replay: no goroutine of the replay (read-ahead, linger, server
// handlers) is left.
func TestAReplayLeavesNoGoroutine(t *testing.T) {
	ends := []struct {
		name string
		// rec is how the recorded stream ends: eof ends it, stopped
		// leaves it idle like a live watch.
		rec cassettes.EndReason
		end func(cancel context.CancelFunc, body io.ReadCloser) error
	}{
		{"a stream served to its recorded end", cassettes.EndEOF, func(_ context.CancelFunc, b io.ReadCloser) error {
			_, err := io.Copy(io.Discard, b)
			return err
		}},
		{"a request cancelled mid-stream", cassettes.EndStopped, func(cancel context.CancelFunc, b io.ReadCloser) error {
			cancel()
			_, err := io.Copy(io.Discard, b)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		}},
		{"a client that closes the body mid-stream", cassettes.EndStopped, func(_ context.CancelFunc, b io.ReadCloser) error {
			return b.Close()
		}},
	}
	forEachSource(t, func(t *testing.T, src source) {
		for _, through := range []string{"in process", "through the server"} {
			for _, tt := range ends {
				t.Run(through+"/"+tt.name, func(t *testing.T) {
					defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
					c := watchCassette(tt.rec, eventFrame(0, "ADDED", cmJSON("a", 101, "1")), eventFrame(0, "MODIFIED", cmJSON("a", 102, "2")))
					r := src.replayer(t, c, replay.Options{Linger: 1})
					var rt http.RoundTripper = r
					var srv *replay.Server
					var tr *http.Transport
					if through == "through the server" {
						srv = &replay.Server{Replayer: r, PlainHTTP: true}
						if err := srv.Start(); err != nil {
							t.Fatal(err)
						}
						tr = &http.Transport{}
						rt = tr
					}
					base := "https://x"
					if srv != nil {
						base = srv.URL()
					}
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					req, _ := http.NewRequestWithContext(ctx, "GET", base+cmPath+"?resourceVersion=100&watch=true", nil)
					req.Header.Set("Accept", "application/json")
					resp, err := rt.RoundTrip(req)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := resp.Body.Read(make([]byte, 1)); err != nil {
						t.Fatal(err)
					}
					if err := tt.end(cancel, resp.Body); err != nil {
						t.Errorf("ending the stream: %v", err)
					}
					resp.Body.Close()
					if srv != nil {
						tr.CloseIdleConnections()
						if err := srv.Close(); err != nil {
							t.Errorf("Server.Close: %v", err)
						}
					}
					if err := r.Close(); err != nil {
						t.Errorf("Replayer.Close: %v", err)
					}
				})
			}
		}
	})
}
