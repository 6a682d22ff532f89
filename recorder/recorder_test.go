package recorder_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
)

func event(typ string, i int) string {
	return fmt.Sprintf(`{"type":%q,"object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","resourceVersion":"%d"},"data":{"k":"line\n}{\"x"}}}`, typ, i, 100+i) + "\n"
}

// chunkServer serves body in chunks of the given size, flushing each, with
// the given content type.
func chunkServer(t *testing.T, contentType string, body []byte, chunk int) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(200)
		for b := body; len(b) > 0; {
			n := min(chunk, len(b))
			w.Write(b[:n])
			w.(http.Flusher).Flush()
			b = b[n:]
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func get(t *testing.T, c *http.Client, url string, hdr ...string) []byte {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body: %v", err)
	}
	return b
}

func TestFramesFollowTheContent(t *testing.T) {
	var events []string
	for i := range 30 {
		events = append(events, event("ADDED", i))
	}
	watchBody := strings.Join(events, "")
	list := `{"kind":"ConfigMapList","items":[` + strings.Repeat(`{"a":"b"},`, 500) + `{}]}` + "\n"
	var protoBody []byte
	var protoFrames []string
	for i := range 20 {
		msg := bytes.Repeat([]byte{byte(i), 0, '\n', 0xff}, i*50)
		f := binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
		f = append(f, msg...)
		protoFrames = append(protoFrames, string(f))
		protoBody = append(protoBody, f...)
	}
	tests := []struct {
		name        string
		contentType string
		query       string
		body        []byte
		chunk       int
		want        []string
	}{
		{"a JSON watch in 2048-byte chunks is one frame per event", "application/json", "?watch=true", []byte(watchBody), 2048, events},
		{"a JSON watch in 7-byte chunks is one frame per event", "application/json", "?watch=1", []byte(watchBody), 7, events},
		{"a JSON watch in one chunk is one frame per event", "application/json", "?watch=true", []byte(watchBody), 1 << 20, events},
		{"a JSON list in chunks is one frame", "application/json", "", []byte(list), 100, []string{list}},
		{"a protobuf watch is one frame per length-prefixed event, bytes exact", "application/vnd.kubernetes.protobuf;stream=watch", "?watch=true", protoBody, 333, protoFrames},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, recorder.Options{})
			srv := chunkServer(t, tt.contentType, tt.body, tt.chunk)
			got := get(t, s.client(), srv.URL+"/api/v1/configmaps"+tt.query)
			if !bytes.Equal(got, tt.body) {
				t.Errorf("the client got %d bytes, not the %d the server sent", len(got), len(tt.body))
			}
			c := s.finish()
			if len(c.Interactions) != 1 {
				t.Fatalf("%d interactions, want 1", len(c.Interactions))
			}
			in := c.Interactions[0]
			if diff := cmp.Diff(tt.want, frameStrings(in)); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if in.End == nil || in.End.Reason != cassettes.EndEOF {
				t.Errorf("end = %+v, want eof", in.End)
			}
		})
	}
}

func TestOtherBodiesAreRecordedInChunksAsRead(t *testing.T) {
	s := newSession(t, recorder.Options{})
	up := rtFunc(func(r *http.Request) (*http.Response, error) {
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"text/plain"}},
			Body: io.NopCloser(io.MultiReader(strings.NewReader("abc"), strings.NewReader("defg")))}, nil
	})
	c := &http.Client{Transport: s.rec.Wrap(up)}
	if got := string(get(t, c, "http://x/logs")); got != "abcdefg" {
		t.Fatalf("body %q", got)
	}
	cs := s.finish()
	if diff := cmp.Diff([]string{"abc", "defg"}, frameStrings(cs.Interactions[0])); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
}

// steppingBody returns one chunk per Read, stepping the fake clock by one
// second before each, so each chunk's arrival time is known. It closes
// drained when it returns EOF.
type steppingBody struct {
	clk     *clocktesting.FakeClock
	chunks  []string
	drained chan struct{}
}

func (b *steppingBody) Read(p []byte) (int, error) {
	if len(b.chunks) == 0 {
		close(b.drained)
		return 0, io.EOF
	}
	b.clk.Step(time.Second)
	n := copy(p, b.chunks[0])
	b.chunks = b.chunks[1:]
	return n, nil
}
func (b *steppingBody) Close() error { return nil }

func TestFramesAreTimestampedOnArrivalNotWhenTheClientReads(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	s := newSession(t, recorder.Options{Clock: clk})
	e1, e2 := event("ADDED", 1), event("MODIFIED", 2)
	body := &steppingBody{clk: clk, chunks: []string{e1[:10], e1[10:] + e2[:5], e2[5:]}, drained: make(chan struct{})}
	up := rtFunc(func(r *http.Request) (*http.Response, error) {
		clk.Step(500 * time.Millisecond) // latency
		return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: body}, nil
	})
	clk.Step(3 * time.Second) // the request starts 3s into the cassette
	resp, err := (&http.Client{Transport: s.rec.Wrap(up)}).Get("http://x/api/v1/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	<-body.drained
	clk.Step(time.Hour) // the client reads an hour later
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != e1+e2 {
		t.Fatalf("body %q, %v", b, err)
	}
	resp.Body.Close()
	c := s.finish()
	in := c.Interactions[0]
	want := []cassettes.Frame{{At: 2 * time.Second, Data: []byte(e1)}, {At: 3 * time.Second, Data: []byte(e2)}}
	if diff := cmp.Diff(want, in.Frames); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if in.At != 3*time.Second || in.Response.Latency != 500*time.Millisecond {
		t.Errorf("interaction at %v, latency %v; want 3s, 500ms", in.At, in.Response.Latency)
	}
}

func gzipServer(t *testing.T, body string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding %q, want gzip", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Encoding", "gzip")
		zw := gzip.NewWriter(w)
		for _, line := range strings.SplitAfter(body, "\n") {
			zw.Write([]byte(line))
			zw.Flush()
			w.(http.Flusher).Flush()
		}
		zw.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestGzipIsRecordedDecoded(t *testing.T) {
	events := []string{event("ADDED", 1), event("MODIFIED", 2), event("DELETED", 3)}
	body := strings.Join(events, "")
	for _, explicit := range []bool{false, true} {
		t.Run(fmt.Sprintf("client asked for gzip itself: %v", explicit), func(t *testing.T) {
			s := newSession(t, recorder.Options{})
			srv := gzipServer(t, body)
			var hdr []string
			if explicit {
				hdr = []string{"Accept-Encoding", "gzip"}
			}
			got := get(t, s.client(), srv.URL+"/api/v1/configmaps?watch=true", hdr...)
			if explicit {
				// The caller asked for gzip and must get gzip.
				zr, err := gzip.NewReader(bytes.NewReader(got))
				if err != nil {
					t.Fatalf("the client did not get gzip: %v", err)
				}
				got, _ = io.ReadAll(zr)
			}
			if string(got) != body {
				t.Errorf("client body %q, want %q", got, body)
			}
			c := s.finish()
			in := c.Interactions[0]
			if diff := cmp.Diff(events, frameStrings(in)); diff != "" {
				t.Errorf("frames (-want +got):\n%s", diff)
			}
			if in.Response.Encoding != "gzip" || in.Response.Header.Get("Content-Encoding") != "" {
				t.Errorf("encoding %q, Content-Encoding header %q; want gzip and none", in.Response.Encoding, in.Response.Header.Get("Content-Encoding"))
			}
		})
	}
}

// hijackServer sends a chunked watch response head and the given bytes,
// then cuts the connection.
func hijackServer(t *testing.T, sent string) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Error(err)
			return
		}
		fmt.Fprintf(buf, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n%s\r\n", len(sent), sent)
		buf.Flush()
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestAConnectionCutMidStreamEndsWithReset(t *testing.T) {
	s := newSession(t, recorder.Options{})
	e1 := event("ADDED", 1)
	srv := hijackServer(t, e1+`{"type":"MODI`)
	resp, err := s.client().Get(srv.URL + "/api/v1/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("reading a cut body: %v, want unexpected EOF", err)
	}
	if string(b) != e1+`{"type":"MODI` {
		t.Errorf("client got %q", b)
	}
	resp.Body.Close()
	in := s.finish().Interactions[0]
	if diff := cmp.Diff([]string{e1, `{"type":"MODI`}, frameStrings(in)); diff != "" {
		t.Errorf("frames (-want +got):\n%s", diff)
	}
	if in.End.Reason != cassettes.EndReset || in.End.Error == "" {
		t.Errorf("end %+v, want reset with the error", in.End)
	}
}

func TestTransportErrorsBeforeTheHeaders(t *testing.T) {
	tests := []struct {
		name string
		ctx  func() (context.Context, context.CancelFunc)
		err  error
		want cassettes.EndReason
	}{
		{"a transport error is a reset", func() (context.Context, context.CancelFunc) { return context.WithCancel(context.Background()) }, errors.New("connection refused"), cassettes.EndReset},
		{"a passed deadline is a timeout", func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), -time.Second)
		}, context.DeadlineExceeded, cassettes.EndTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSession(t, recorder.Options{})
			rt := s.rec.Wrap(rtFunc(func(*http.Request) (*http.Response, error) { return nil, tt.err }))
			ctx, cancel := tt.ctx()
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/api/v1/pods", nil)
			if _, err := rt.RoundTrip(req); !errors.Is(err, tt.err) {
				t.Fatalf("RoundTrip error %v, want %v", err, tt.err)
			}
			in := s.finish().Interactions[0]
			if in.Response != nil || in.End.Reason != tt.want || in.End.Error != tt.err.Error() {
				t.Errorf("response %v, end %+v; want none and %s with %q", in.Response, in.End, tt.want, tt.err)
			}
		})
	}
}

func TestACleanEndAtTimeoutSecondsIsATimeout(t *testing.T) {
	for _, tt := range []struct {
		name    string
		elapsed time.Duration
		want    cassettes.EndReason
	}{
		{"ending at timeoutSeconds", 5 * time.Second, cassettes.EndTimeout},
		{"ending early", 2 * time.Second, cassettes.EndEOF},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Now())
			s := newSession(t, recorder.Options{Clock: clk})
			rt := s.rec.Wrap(rtFunc(func(*http.Request) (*http.Response, error) {
				clk.Step(tt.elapsed)
				return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(""))}, nil
			}))
			c := &http.Client{Transport: rt}
			get(t, c, "http://x/api/v1/pods?watch=true&timeoutSeconds=5")
			if in := s.finish().Interactions[0]; in.End.Reason != tt.want {
				t.Errorf("end %+v, want %s", in.End, tt.want)
			}
		})
	}
}

// blockingServer sends one event, then holds the watch open until the
// client goes away or the test ends.
func blockingServer(t *testing.T, first string) *httptest.Server {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(first))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	t.Cleanup(func() { close(stop); srv.Close() })
	return srv
}

func TestStreamsStop(t *testing.T) {
	e1 := event("ADDED", 1)
	t.Run("when the client closes the body", func(t *testing.T) {
		s := newSession(t, recorder.Options{})
		srv := blockingServer(t, e1)
		resp, err := s.client().Get(srv.URL + "/api/v1/configmaps?watch=true")
		if err != nil {
			t.Fatal(err)
		}
		line, err := bufio.NewReader(resp.Body).ReadString('\n')
		if err != nil || line != e1 {
			t.Fatalf("first event %q, %v", line, err)
		}
		resp.Body.Close()
		if _, err := resp.Body.Read(make([]byte, 1)); err == nil || err.Error() != "http: read on closed response body" {
			t.Errorf("Read after Close: %v, want net/http's read on closed response body", err)
		}
		in := s.finish().Interactions[0]
		if in.End.Reason != cassettes.EndStopped || len(in.Frames) != 1 {
			t.Errorf("end %+v with %d frames, want stopped with 1", in.End, len(in.Frames))
		}
	})
	t.Run("when the recorder is closed", func(t *testing.T) {
		s := newSession(t, recorder.Options{})
		srv := blockingServer(t, e1)
		resp, err := s.client().Get(srv.URL + "/api/v1/configmaps?watch=true")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if line, err := br.ReadString('\n'); err != nil || line != e1 {
			t.Fatalf("first event %q, %v", line, err)
		}
		readErr := make(chan error, 1)
		go func() { _, err := br.ReadString('\n'); readErr <- err }()
		in := s.finish().Interactions[0]
		if err := <-readErr; !errors.Is(err, recorder.ErrStopped) {
			t.Errorf("the blocked client read %v, want ErrStopped", err)
		}
		if in.End.Reason != cassettes.EndStopped {
			t.Errorf("end %+v, want stopped", in.End)
		}
		if _, err := s.client().Get(srv.URL); !errors.Is(err, recorder.ErrClosed) {
			t.Errorf("a request after Close: %v, want ErrClosed", err)
		}
	})
	t.Run("when the request's context is cancelled while the client waits", func(t *testing.T) {
		s := newSession(t, recorder.Options{})
		pr, pw := io.Pipe()
		defer pw.Close()
		rt := s.rec.Wrap(rtFunc(func(*http.Request) (*http.Response, error) {
			// An upstream body that ignores the context: the recorder
			// must still return.
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}}, Body: pr}, nil
		}))
		ctx, cancel := context.WithCancel(context.Background())
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://x/api/v1/pods?watch=true", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		time.AfterFunc(10*time.Millisecond, cancel)
		if _, err := resp.Body.Read(make([]byte, 10)); !errors.Is(err, context.Canceled) {
			t.Errorf("Read after cancel: %v, want context.Canceled", err)
		}
		resp.Body.Close()
		if in := s.finish().Interactions[0]; in.End.Reason != cassettes.EndStopped {
			t.Errorf("end %+v, want stopped", in.End)
		}
	})
}

func TestRequestBodiesAreRecordedAndSent(t *testing.T) {
	var got string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got = string(b)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		w.Write([]byte("{}\n"))
	}))
	defer srv.Close()
	s := newSession(t, recorder.Options{})
	body := `{"kind":"ConfigMap","metadata":{"name":"a"}}`
	resp, err := s.client().Post(srv.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if got != body {
		t.Errorf("server got %q", got)
	}
	in := s.finish().Interactions[0]
	if string(in.Request.Body) != body || in.Request.Method != "POST" || in.Response.Status != 201 {
		t.Errorf("recorded %s %q -> %d", in.Request.Method, in.Request.Body, in.Response.Status)
	}
}

func TestManyConcurrentStreams(t *testing.T) {
	const streams, events = 40, 50
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := range events {
			fmt.Fprintf(w, `{"type":"ADDED","object":{"stream":%q,"i":%d}}`+"\n", r.URL.Query().Get("s"), i)
			if i%7 == 0 {
				w.(http.Flusher).Flush()
			}
		}
	}))
	defer srv.Close()
	s := newSession(t, recorder.Options{})
	c := s.client()
	var wg sync.WaitGroup
	for i := range streams {
		wg.Go(func() {
			resp, err := c.Get(fmt.Sprintf("%s/api/v1/pods?watch=true&s=%d", srv.URL, i))
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	cs := s.finish()
	if len(cs.Interactions) != streams {
		t.Fatalf("%d interactions, want %d", len(cs.Interactions), streams)
	}
	for _, in := range cs.Interactions {
		stream := strings.TrimPrefix(in.Request.URL[strings.Index(in.Request.URL, "s="):], "s=")
		if len(in.Frames) != events {
			t.Errorf("stream %s: %d frames, want %d", stream, len(in.Frames), events)
			continue
		}
		for i, f := range in.Frames {
			if want := fmt.Sprintf(`{"type":"ADDED","object":{"stream":%q,"i":%d}}`+"\n", stream, i); string(f.Data) != want {
				t.Errorf("stream %s frame %d = %q, want %q", stream, i, f.Data, want)
			}
		}
	}
}

func TestNewRefusesANilWriter(t *testing.T) {
	if _, err := recorder.New(nil, recorder.Options{}); err == nil || err.Error() != "recorder: nil cassette writer; create one with cassettes.Create" {
		t.Errorf("New without a writer: %v, want the nil-writer error", err)
	}
}
