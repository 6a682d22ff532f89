package replay_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// hostPort is the server's address without its scheme.
func hostPort(s *replay.Server) string {
	_, hp, _ := strings.Cut(s.URL(), "://")
	return hp
}

// dialHTTP1 opens a connection to s that speaks HTTP/1.1: over TLS, with
// the handshake done, unless s is PlainHTTP.
func dialHTTP1(s *replay.Server) (net.Conn, error) {
	conn, err := net.DialTimeout("tcp", hostPort(s), 10*time.Second)
	if err != nil || s.PlainHTTP {
		return conn, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(s.CA())
	tc := tls.Client(conn, &tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// mustDialHTTP1 is dialHTTP1 for the test goroutine.
func mustDialHTTP1(t *testing.T, s *replay.Server) net.Conn {
	t.Helper()
	conn, err := dialHTTP1(s)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// listNames lists the ConfigMaps of the cassette through cs, as an
// informer does first, and returns their names and the list's
// resourceVersion.
func listNames(ctx context.Context, cs kubernetes.Interface) (string, error) {
	l, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{Limit: 500, ResourceVersion: "0"})
	if err != nil {
		return "", err
	}
	var names []string
	for _, cm := range l.Items {
		names = append(names, cm.Name)
	}
	return strings.Join(names, ",") + "@" + l.ResourceVersion, nil
}

// slowHeaders is a request whose headers never end: after the request
// line, one more header line at a time, forever.
func slowHeaders(yield func(byte) bool) {
	for _, c := range []byte("GET /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: 127.0.0.1\r\n") {
		if !yield(c) {
			return
		}
	}
	for i := 0; ; i++ {
		for _, c := range []byte(fmt.Sprintf("X-Slow-%d: 1\r\n", i)) {
			if !yield(c) {
				return
			}
		}
	}
}

// cutOff is what a slow client saw: the bytes the server answered, how
// the connection ended and after how long.
type cutOff struct {
	answer []byte
	err    error
	after  time.Duration
}

// TestServerCutsOffClientsThatTrickleTheirHeaders holds connections that
// send their headers a byte at a time and never finish (slowloris): the
// server closes each once ReadHeaderTimeout has passed, without an answer
// from the cassette, and serves another client meanwhile.
func TestServerCutsOffClientsThatTrickleTheirHeaders(t *testing.T) {
	const (
		timeout = 500 * time.Millisecond
		slow    = 8
	)
	// A slow client reads nothing, or net/http's 400 when the timeout ends
	// the read with an error it does not take for one (over TLS, or
	// mid-line): never an answer from the cassette.
	cutAnswers := []string{"", "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\n\r\n400 Bad Request"}
	for _, tc := range []struct {
		name  string
		plain bool
	}{
		{"a client trickling headers over HTTPS is cut off after the header timeout while another is served", false},
		{"a client trickling headers over plain HTTP is cut off after the header timeout while another is served", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &replay.Server{Replayer: fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{}), PlainHTTP: tc.plain, ReadHeaderTimeout: timeout}
			startServer(t, s)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			var wg sync.WaitGroup
			defer wg.Wait()
			sending := make(chan struct{}, slow)
			cut := make(chan cutOff, slow)
			for range slow {
				began := time.Now()
				conn := mustDialHTTP1(t, s)
				defer conn.Close()
				wg.Add(2)
				go func() { // one byte every 10ms: slower than the timeout allows
					defer wg.Done()
					tick := time.NewTicker(10 * time.Millisecond)
					defer tick.Stop()
					first := true
					for c := range slowHeaders {
						if _, err := conn.Write([]byte{c}); err != nil {
							return
						}
						if first {
							sending <- struct{}{}
							first = false
						}
						select {
						case <-tick.C:
						case <-ctx.Done():
							return
						}
					}
				}()
				go func() {
					defer wg.Done()
					conn.SetReadDeadline(time.Now().Add(20 * time.Second))
					b, err := io.ReadAll(conn)
					cut <- cutOff{b, err, time.Since(began)}
				}()
			}
			for range slow {
				<-sending
			}
			cfg := s.Config()
			cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
			got, err := listNames(ctx, clientset(t, cfg))
			if err != nil || got != "a,b@100" {
				t.Errorf("list while %d clients trickle headers: %q, %v; want a,b@100", slow, got, err)
			}
			for i := range slow {
				c := <-cut
				var ne net.Error
				switch {
				case errors.As(c.err, &ne) && ne.Timeout():
					t.Fatalf("slow client %d: still connected after %v; want cut off after %v", i, c.after, timeout)
				case c.err != nil && !errors.Is(c.err, syscall.ECONNRESET):
					t.Errorf("slow client %d: connection ended with %v; want EOF or a reset", i, c.err)
				case !slices.Contains(cutAnswers, string(c.answer)):
					t.Errorf("slow client %d: answered %q; want one of %q", i, c.answer, cutAnswers)
				case c.after < timeout:
					t.Errorf("slow client %d: cut off after %v; want not before the %v header timeout", i, c.after, timeout)
				}
			}
		})
	}
}

// raiseFileLimit raises the soft limit on open files to allow want more
// and returns how many of them it allows.
func raiseFileLimit(t *testing.T, want uint64) uint64 {
	t.Helper()
	const spare = 256 // the test binary's own files, the server's listener, the clients
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		t.Fatal(err)
	}
	if lim.Cur < want+spare {
		old := lim
		lim.Cur = min(want+spare, lim.Max)
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old) })
	}
	if lim.Cur < spare {
		return 0
	}
	return min(want, lim.Cur-spare)
}

// TestServerServesListAndWatchPastTwoThousandIdleKeepAliveConnections
// opens 2,000 HTTPS connections (fewer if the open files limit cannot be
// raised so far) that each make one request and then idle, kept alive:
// another client's list and watch are served all the same, and every idle
// connection is still served afterwards.
func TestServerServesListAndWatchPastTwoThousandIdleKeepAliveConnections(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: skipping 2,000 connections")
	}
	const want = 2000
	// Both ends of every connection are in this process.
	n := int(raiseFileLimit(t, 2*want) / 2)
	if n < want {
		t.Logf("the open files limit allows %d idle connections, not %d", n, want)
	}
	s := &replay.Server{Replayer: fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})}
	startServer(t, s)
	version := "GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer " + s.Token() + "\r\n\r\n"
	// askVersion sends one request on conn and reads its whole answer,
	// leaving conn open and idle.
	askVersion := func(conn net.Conn, br *bufio.Reader) error {
		if _, err := io.WriteString(conn, version); err != nil {
			return err
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || resp.Close || !bytes.Contains(b, []byte(`"gitVersion"`)) {
			return fmt.Errorf("%s, close %v, %q; want 200 and the version, kept alive", resp.Status, resp.Close, b)
		}
		return nil
	}

	conns := make([]net.Conn, n)
	readers := make([]*bufio.Reader, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	next := make(chan int)
	for range 32 {
		wg.Go(func() {
			for i := range next {
				if conns[i], errs[i] = dialHTTP1(s); errs[i] == nil {
					readers[i] = bufio.NewReader(conns[i])
					errs[i] = askVersion(conns[i], readers[i])
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	t.Cleanup(func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	})
	for i, err := range errs {
		if err != nil {
			t.Fatalf("idle connection %d: %v", i, err)
		}
	}

	cfg := s.Config()
	cfg.ContentType, cfg.AcceptContentTypes = "application/json", "application/json"
	cs := clientset(t, cfg)
	ctx := ctxT(t)
	if got, err := listNames(ctx, cs); err != nil || got != "a,b@100" {
		t.Errorf("list past %d idle connections: %q, %v; want a,b@100", n, got, err)
	}
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatalf("watch past %d idle connections: %v", n, err)
	}
	defer w.Stop()
	if d := cmp.Diff(recordedEvents, recv(t, w, 4)); d != "" {
		t.Errorf("events past %d idle connections (-recorded +replayed):\n%s", n, d)
	}
	// The idle connections were kept, not dropped to make room.
	for i := range n {
		if err := askVersion(conns[i], readers[i]); err != nil {
			t.Fatalf("idle connection %d, asked again: %v", i, err)
		}
	}
	t.Logf("served a list and a watch past %d idle keep-alive connections", n)
}

// decodeStatus decodes a Status body in the encoding its Content-Type ct
// names.
func decodeStatus(ct string, body []byte) (*metav1.Status, error) {
	st := new(metav1.Status)
	switch wire.MediaType(ct) {
	case wire.MediaJSON:
		if err := json.Unmarshal(body, st); err != nil {
			return nil, err
		}
	case wire.MediaProtobuf:
		raw, ok := bytes.CutPrefix(body, []byte(wire.ProtoMagic))
		if !ok {
			return nil, fmt.Errorf("protobuf body %q without the k8s envelope", body)
		}
		var u runtime.Unknown
		if err := u.Unmarshal(raw); err != nil {
			return nil, err
		}
		if err := st.Unmarshal(u.Raw); err != nil {
			return nil, err
		}
		st.TypeMeta = metav1.TypeMeta{Kind: u.Kind, APIVersion: u.APIVersion}
	default:
		return nil, fmt.Errorf("Content-Type %q is not a Status encoding", ct)
	}
	return st, nil
}

func failure(code int32, reason metav1.StatusReason, msg string) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: code, Reason: reason, Message: msg}
}

// exchange writes head and then body on a new HTTP/1.1 connection to s and
// returns the answer, read while the body is still being written: the
// server may answer before it has read it all.
func exchange(t *testing.T, s *replay.Server, head string, body io.Reader) (*http.Response, []byte) {
	t.Helper()
	conn := mustDialHTTP1(t, s)
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	written := make(chan struct{})
	go func() {
		defer close(written)
		io.WriteString(conn, head)
		if body != nil {
			io.Copy(conn, body) // fails once the server closes: expected
		}
	}()
	defer func() { conn.Close(); <-written }()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, b
}

// chunked is a chunked request body of n bytes, 32 KiB a chunk.
func chunked(n int) io.Reader {
	var b bytes.Buffer
	for n > 0 {
		c := min(n, 32<<10)
		fmt.Fprintf(&b, "%x\r\n%s\r\n", c, bytes.Repeat([]byte("x"), c))
		n -= c
	}
	b.WriteString("0\r\n\r\n")
	return &b
}

func TestServerRefusesOversizeRequestsAndOtherTokens(t *testing.T) {
	const (
		limit = 3 << 20
		path  = "/api/v1/namespaces/default/configmaps"
	)
	s := &replay.Server{Replayer: fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})}
	startServer(t, s)
	tok := "Authorization: Bearer " + s.Token() + "\r\n"
	get := func(headers string) string {
		return "GET " + path + "?limit=500&resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n" + headers + "\r\n"
	}
	post := func(headers string) string {
		return "POST " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: application/json\r\n" + tok + headers + "\r\n"
	}
	unauthorized := failure(401, metav1.StatusReasonUnauthorized, "Unauthorized")
	tooLarge := failure(413, metav1.StatusReasonRequestEntityTooLarge, "Request entity too large: limit is 3145728")
	for _, tc := range []struct {
		name     string
		head     string
		body     io.Reader
		wantCode int
		wantCT   string
		// want is the Status answered; nil when the answer is not one, and
		// then wantBody is the exact body.
		want     *metav1.Status
		wantBody string
	}{
		{name: "a request without a token is refused 401 Unauthorized and nothing more",
			head: get(""), wantCode: 401, wantCT: wire.MediaJSON, want: unauthorized},
		{name: "a request with another token is refused 401 Unauthorized and nothing more",
			head: get("Authorization: Bearer nope\r\n"), wantCode: 401, wantCT: wire.MediaJSON, want: unauthorized},
		{name: "a request with the token and one more character is refused 401",
			head: get("Authorization: Bearer " + s.Token() + "x\r\n"), wantCode: 401, wantCT: wire.MediaJSON, want: unauthorized},
		{name: "a request with the token as basic credentials is refused 401",
			head: get("Authorization: Basic " + s.Token() + "\r\n"), wantCode: 401, wantCT: wire.MediaJSON, want: unauthorized},
		{name: "a request with the token in another header is refused 401",
			head: get("X-Token: Bearer " + s.Token() + "\r\n"), wantCode: 401, wantCT: wire.MediaJSON, want: unauthorized},
		{name: "a protobuf client without a token gets its 401 in protobuf",
			head:     strings.Replace(get(""), "application/json", "application/vnd.kubernetes.protobuf, application/json", 1),
			wantCode: 401, wantCT: wire.MediaProtobuf, want: unauthorized},
		{name: "a header of over 1 MiB is refused 431 before the token is looked at",
			head: get(tok + "X-Big: " + strings.Repeat("a", 1<<20+4096) + "\r\n"), wantCode: 431, wantCT: "text/plain; charset=utf-8", wantBody: "431 Request Header Fields Too Large"},
		{name: "a body announced as over 3 MiB is refused 413 without being read",
			head: post(fmt.Sprintf("Content-Length: %d\r\n", limit+1)), wantCode: 413, wantCT: wire.MediaJSON, want: tooLarge},
		{name: "a chunked body of over 3 MiB is refused 413 once the limit is read",
			head: post("Transfer-Encoding: chunked\r\n"), body: chunked(limit + 1), wantCode: 413, wantCT: wire.MediaJSON, want: tooLarge},
		{name: "a body of exactly 3 MiB is read and answered by the replay",
			head: post(fmt.Sprintf("Content-Length: %d\r\n", limit)), body: bytes.NewReader(bytes.Repeat([]byte("x"), limit)),
			wantCode: 500, wantCT: wire.MediaJSON, want: failure(500, metav1.StatusReasonInternalError, "")},
		{name: "a request with the token is answered",
			head: get(tok), wantCode: 200, wantCT: wire.MediaJSON},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, body := exchange(t, s, tc.head, tc.body)
			if resp.StatusCode != tc.wantCode || resp.Header.Get("Content-Type") != tc.wantCT {
				t.Fatalf("answered %s, Content-Type %q: %q; want %d, %q", resp.Status, resp.Header.Get("Content-Type"), body, tc.wantCode, tc.wantCT)
			}
			switch {
			case tc.want != nil:
				st, err := decodeStatus(tc.wantCT, body)
				if err != nil {
					t.Fatalf("answer %q: %v; want a Status", body, err)
				}
				if tc.want.Message == "" { // the replay's own words: not the point here
					st.Message = ""
				}
				if d := cmp.Diff(tc.want, st); d != "" {
					t.Errorf("Status (-want +got):\n%s", d)
				}
			case tc.wantCode == 200:
				if !bytes.Contains(body, []byte(`"kind":"ConfigMapList"`)) {
					t.Errorf("answer %q; want the recorded ConfigMapList", body)
				}
			default:
				if string(body) != tc.wantBody {
					t.Errorf("answer %q; want %q", body, tc.wantBody)
				}
			}
		})
	}
}

func TestServerAnswersNoDataToPlainHTTPOnItsTLSPort(t *testing.T) {
	s := &replay.Server{Replayer: fromFile.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})}
	startServer(t, s)
	for _, tc := range []struct{ name, auth string }{
		{"a plain HTTP request without the token gets net/http's 400 and the connection closed", ""},
		{"a plain HTTP request with the token gets the same 400 and no data", "Authorization: Bearer " + s.Token() + "\r\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, err := net.DialTimeout("tcp", hostPort(s), 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(20 * time.Second))
			if _, err := io.WriteString(conn, "GET /api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0 HTTP/1.1\r\nHost: 127.0.0.1\r\n"+tc.auth+"\r\n"); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			if err != nil && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("after %q: %v; want the connection closed", got, err)
			}
			const want = "HTTP/1.0 400 Bad Request\r\n\r\nClient sent an HTTP request to an HTTPS server.\n"
			if string(got) != want {
				t.Errorf("answer %q; want %q", got, want)
			}
		})
	}
}
