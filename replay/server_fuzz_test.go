package replay_test

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// fuzzRequest parses method, target, header lines and body as the server
// would read them off the wire; nil when the server would refuse them
// before its handler.
func fuzzRequest(method, target, header string, body []byte) *http.Request {
	var raw strings.Builder
	raw.WriteString(method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	for l := range strings.SplitSeq(header, "\n") {
		if l = strings.TrimRight(l, "\r"); l != "" {
			raw.WriteString(l + "\r\n")
		}
	}
	fmt.Fprintf(&raw, "Content-Length: %d\r\n\r\n", len(body))
	raw.Write(body)
	req, err := http.ReadRequest(bufio.NewReader(strings.NewReader(raw.String())))
	if err != nil || req.Host == "" {
		return nil
	}
	return req
}

// serveBounded runs s.ServeHTTP(w, req), returning what it panicked with,
// or failing t if it does not return.
func serveBounded(t *testing.T, s *replay.Server, w http.ResponseWriter, req *http.Request) (panicked any) {
	t.Helper()
	done := make(chan any, 1)
	go func() {
		defer func() { done <- recover() }()
		s.ServeHTTP(w, req)
	}()
	watchdog := time.NewTimer(10 * time.Second)
	defer watchdog.Stop()
	select {
	case p := <-done:
		return p
	case <-watchdog.C:
		t.Fatalf("%s %s: ServeHTTP still running 10s after its request's context ended", req.Method, req.URL)
		return nil
	}
}

// checkAnswer reports whether an answer is one a Kubernetes client can
// read: a failure is a Status in the negotiated encoding, with the answer's
// code; a success is JSON objects (an object, or watch events one a line)
// or an enveloped protobuf object (or watch events, length-prefixed). When
// cut, the request's context ended while the answer was written (the
// client is gone), and only the whole values before the end are checked.
func checkAnswer(code int, h http.Header, body []byte, cut bool) error {
	if h.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil && !(cut && errors.Is(err, io.ErrUnexpectedEOF)) && !(cut && errors.Is(err, io.EOF)) {
			return fmt.Errorf("gzip body: %v", err)
		}
	}
	ct := h.Get("Content-Type")
	if code < 200 || code >= 300 {
		st, err := decodeStatus(ct, body)
		if err != nil {
			return cutOr(cut, "%d answer %q is not a Status: %v", code, body, err)
		}
		if st.Kind != "Status" || st.APIVersion != "v1" || int(st.Code) != code || st.Status != metav1.StatusFailure {
			return fmt.Errorf("%d answer is %s %s, code %d, status %q; want a v1 Failure Status of code %d", code, st.APIVersion, st.Kind, st.Code, st.Status, code)
		}
		return nil
	}
	switch mt := wire.MediaType(ct); {
	case mt == wire.MediaProtobuf && strings.Contains(ct, "stream=watch"):
		for len(body) > 0 {
			if len(body) < 4 {
				return cutOr(cut, "protobuf watch frame length %x", body)
			}
			n := binary.BigEndian.Uint32(body)
			if uint64(len(body)-4) < uint64(n) {
				return cutOr(cut, "protobuf watch frame of %d bytes, %d left", n, len(body)-4)
			}
			var ev metav1.WatchEvent
			if err := ev.Unmarshal(body[4 : 4+n]); err != nil || ev.Type == "" {
				return fmt.Errorf("protobuf watch frame %q: %v", body[4:4+n], err)
			}
			body = body[4+n:]
		}
	case mt == wire.MediaProtobuf:
		raw, ok := bytes.CutPrefix(body, wire.ProtoMagic)
		if !ok {
			return cutOr(cut, "protobuf body %q without the k8s envelope", body)
		}
		var u runtime.Unknown
		if err := u.Unmarshal(raw); err != nil || u.Kind == "" {
			return cutOr(cut, "protobuf body %q: %v", body, err)
		}
	case mt == wire.MediaJSON || mt == "" && len(body) == 0:
		dec := json.NewDecoder(bytes.NewReader(body))
		for {
			var v json.RawMessage
			err := dec.Decode(&v)
			if err == io.EOF {
				break
			}
			if err != nil {
				return cutOr(cut, "JSON answer %q: %v", body, err)
			}
			if !bytes.HasPrefix(v, []byte("{")) {
				return fmt.Errorf("JSON answer %q holds %s, not an object", body, v)
			}
		}
	default:
		return fmt.Errorf("%d answer of Content-Type %q: %q", code, ct, body)
	}
	return nil
}

func cutOr(cut bool, format string, args ...any) error {
	if cut {
		return nil
	}
	return fmt.Errorf(format, args...)
}

// FuzzServer sends any request (method, request target, header lines,
// body) to a Server's handler over the configmaps cassette, in the default
// write mode and in Overlay, with and without PlainHTTP: it never panics
// (but for http.ErrAbortHandler, the server's cut of a connection the
// recording saw reset) or hangs, and every answer is a Status or a
// readable object or stream (see checkAnswer); without PlainHTTP, before
// Start, every answer is the bare 401.
func FuzzServer(f *testing.F) {
	const (
		acceptJSON  = "Accept: application/json"
		acceptProto = "Accept: application/vnd.kubernetes.protobuf, application/json"
		cms         = "/api/v1/namespaces/default/configmaps"
	)
	for _, s := range []struct{ method, target, header, body string }{
		{"GET", cms + "?limit=500&resourceVersion=0", acceptJSON, ""},
		{"GET", cms + "?limit=500&resourceVersion=0", acceptProto, ""},
		{"GET", cms + "?limit=500&resourceVersion=0", acceptJSON + "\nAccept-Encoding: gzip", ""},
		{"GET", cms + "?allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=412&watch=true", acceptJSON, ""},
		{"GET", cms + "?resourceVersion=100&watch=true", acceptProto, ""},
		{"GET", cms + "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", acceptJSON, ""},
		{"GET", "/api/v1/watch/namespaces/default/configmaps?resourceVersion=102", acceptJSON, ""},
		{"GET", cms + "?labelSelector=app%3Ddemo&fieldSelector=metadata.name%3Da", acceptJSON, ""},
		{"GET", cms + "?resourceVersion=100&resourceVersionMatch=Exact&limit=1", acceptJSON, ""},
		{"GET", cms + "?limit=1&continue=bm90LWEtdG9rZW4", acceptJSON, ""},
		{"GET", cms, "Accept: application/json;as=Table;v=v1;g=meta.k8s.io,application/json", ""},
		{"GET", cms + "/a", acceptJSON, ""},
		{"GET", cms + "/zz", acceptProto, ""},
		{"GET", "/api/v1/configmaps?resourceVersion=0", acceptJSON, ""},
		{"GET", "/api/v1/namespaces/other/secrets", acceptJSON, ""},
		{"GET", "/apis/apps/v1/namespaces/default/deployments?watch=true", acceptJSON, ""},
		{"GET", "/version", "", ""},
		{"GET", "/api", acceptJSON, ""},
		{"GET", "/apis", "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", ""},
		{"GET", "/api/v1", acceptProto, ""},
		{"GET", "/openapi/v2", acceptJSON, ""},
		{"GET", "/healthz", "", ""},
		{"POST", cms, acceptJSON + "\nContent-Type: application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`},
		{"POST", cms, acceptProto + "\nContent-Type: application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"g-"}}`},
		{"PUT", cms + "/a", acceptJSON + "\nContent-Type: application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"102000"}}`},
		{"PATCH", cms + "/a", acceptJSON + "\nContent-Type: application/merge-patch+json", `{"data":{"k":"v"}}`},
		{"PATCH", cms + "/a?fieldManager=m&force=true", acceptJSON + "\nContent-Type: application/apply-patch+yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n"},
		{"PATCH", cms + "/a/status", acceptJSON + "\nContent-Type: application/json-patch+json", `[{"op":"remove","path":"/data"}]`},
		{"DELETE", cms + "/b", acceptJSON, `{"preconditions":{"resourceVersion":"95"}}`},
		{"DELETE", cms + "?labelSelector=app", acceptJSON, ""},
		{"HEAD", cms, acceptJSON, ""},
		{"OPTIONS", "*", "", ""},
		{"GET", "http://other.example/api/v1/namespaces/default/configmaps", acceptJSON, ""},
		{"CONNECT", "127.0.0.1:443", "", ""},
		{"GET", cms + "?watch=true&timeoutSeconds=1", acceptJSON + "\nAuthorization: Bearer ", ""},
	} {
		for _, overlay := range []bool{false, true} {
			f.Add(s.method, s.target, s.header, []byte(s.body), overlay, true)
		}
		f.Add(s.method, s.target, s.header, []byte(s.body), false, false)
	}
	c := fixture(f, "configmaps.kwrec")
	unauthorized := failure(401, metav1.StatusReasonUnauthorized, "Unauthorized")
	f.Fuzz(func(t *testing.T, method, target, header string, body []byte, overlay, plain bool) {
		req := fuzzRequest(method, target, header, body)
		if req == nil {
			return
		}
		opts := replay.Options{Speed: 0}
		if overlay {
			opts.Writes = replay.WritesOverlay
		}
		r, err := replay.New(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		s := &replay.Server{Replayer: r, PlainHTTP: plain}
		// Long enough for any answer but a watch, which idles at its end.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		rec := httptest.NewRecorder()
		p := serveBounded(t, s, rec, req.WithContext(ctx))
		switch {
		case p == http.ErrAbortHandler:
			return // a recorded reset: the connection is cut, deliberately
		case p != nil:
			t.Fatalf("%s %s: panic: %v", method, target, p)
		}
		cut := ctx.Err() != nil
		if cut && !rec.Flushed && rec.Body.Len() == 0 {
			return // the client gave up first: nothing to answer
		}
		if !plain {
			st, err := decodeStatus(rec.Header().Get("Content-Type"), rec.Body.Bytes())
			if err != nil || rec.Code != 401 {
				t.Fatalf("%s %s without PlainHTTP before Start: %d %q (%v); want 401", method, target, rec.Code, rec.Body, err)
			}
			if d := cmp.Diff(unauthorized, st); d != "" {
				t.Fatalf("%s %s without PlainHTTP before Start (-want +got):\n%s", method, target, d)
			}
			return
		}
		if err := checkAnswer(rec.Code, rec.Header(), rec.Body.Bytes(), cut); err != nil {
			t.Fatalf("%s %s (header %q, %d-byte body, overlay %v): %v", method, target, header, len(body), overlay, err)
		}
	})
}
