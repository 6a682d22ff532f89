package replay

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/kubeconfig"
	"github.com/kwrec/kwrec/internal/wire"
	"golang.org/x/net/http2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Server serves a [Replayer] on a loopback address (127.0.0.1 only) so any
// client in any language can replay: kubectl, a controller binary, a Python
// client. Over HTTPS (the default) it requires a random bearer token, which
// [Server.WriteKubeconfig] puts in the kubeconfig it writes; other requests
// get 401.
//
// Discovery is the recorded server's where the cassette holds it, else
// kube-apiserver's own for the built-in resources plus the cassette's
// other resources, so kubectl's discovery (short names, categories,
// explain) works on a cassette recorded by a program that never asked for
// it; the same is served in process (see [Replayer]).
//
// The server holds against clients that misbehave, as kube-apiserver
// does: a client must send its request headers (and complete its TLS
// handshake) within [Server.ReadHeaderTimeout] and its whole request
// within a minute; a connection idle between requests is closed after two
// minutes; request headers are limited to 1 MiB (larger get 431) and
// bodies to 3 MiB, kube-apiserver's limit (larger get 413
// RequestEntityTooLarge). There is no write timeout: a watch lasts as long
// as the client keeps it. Over HTTPS, a plain-HTTP request gets net/http's
// 400 "Client sent an HTTP request to an HTTPS server" and nothing else.
//
// Set the fields, then call [Server.Start]; or use [NewServer].
type Server struct {
	// Replayer answers the requests. Required unless Open is set.
	Replayer *Replayer
	// Open, when Replayer is nil, opens the Replayer once Start listens, on
	// a goroutine of its own, so that the server's URL, token and
	// kubeconfig are there at once while the cassette is read (reading
	// takes longer than the rest of a start together). Requests wait for
	// it as long as their context lets them; if it fails, they are
	// answered 503 with its error. [Server.Ready] starts and waits for
	// it; the
	// Replayer it returns is the Server's, closed by [Server.Close].
	Open func() (*Replayer, error)
	// PlainHTTP serves plain HTTP without the token check: clientcmd never
	// sends credentials over plain HTTP, so a kubeconfig client could not
	// pass it. Default false: HTTPS with a certificate for 127.0.0.1 signed
	// by a CA generated at Start, which the kubeconfig trusts, and the
	// token required.
	PlainHTTP bool
	// Addr is the host:port to listen on. Default "127.0.0.1:0" (a random
	// loopback port). A host that is not a loopback address is refused
	// with [ErrNotLoopback] unless AllowRemote is set.
	Addr string
	// AllowRemote permits an Addr other hosts can reach, exposing the
	// cassette to anyone who has the token. Default false.
	AllowRemote bool
	// ReadHeaderTimeout is how long a client may take to complete its TLS
	// handshake and send a request's headers before its connection is
	// closed, so that clients trickling headers (slowloris) cannot hold
	// connections open. Default 10s.
	ReadHeaderTimeout time.Duration

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	url     string
	token   string
	ca      []byte
	serving sync.WaitGroup

	// opened is closed once r and openErr are set: at Start with a
	// Replayer, when Open returns without one. open starts Open, once.
	opened  chan struct{}
	open    func()
	r       *Replayer
	openErr error
}

// defaultReadHeaderTimeout is the default [Server.ReadHeaderTimeout].
const defaultReadHeaderTimeout = 10 * time.Second

// The limits a [Server] puts on its clients; see its doc comment.
const (
	requestReadTimeout = time.Minute
	idleTimeout        = 2 * time.Minute
	maxHeaderBytes     = 1 << 20
	// maxBodyBytes is kube-apiserver's MaxRequestBodyBytes default.
	maxBodyBytes = 3 << 20
)

// NewServer starts an HTTPS Server for r.
func NewServer(r *Replayer) (*Server, error) {
	s := &Server{Replayer: r}
	if err := s.Start(); err != nil {
		return nil, err
	}
	return s, nil
}

// Start listens on [Server.Addr] (default a random port of 127.0.0.1) and
// serves in the background.
func (s *Server) Start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.Replayer == nil && s.Open == nil {
		return errors.New("a replay server needs a Replayer or an Open function: both are nil")
	}
	if s.ln != nil {
		return errors.New("the replay server is already started")
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("token: %w", err)
	}
	addr := s.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if (ip == nil || !ip.IsLoopback()) && !s.AllowRemote {
		return fmt.Errorf("listen address %q: %w", addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	scheme := "http"
	if !s.PlainHTTP {
		ips := []net.IP{net.IPv4(127, 0, 0, 1)}
		if ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
		pair, ca, err := servingCert(ips, time.Now())
		if err == nil {
			// h2 first, as the API server: client-go multiplexes every
			// watch of a client over one connection.
			ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
			s.ca = ca
		}
		if err != nil {
			ln.Close() // roll back
			return fmt.Errorf("serving certificate: %w", err)
		}
		scheme = "https"
	}
	s.ln, s.token = ln, hex.EncodeToString(tok)
	s.url = scheme + "://" + ln.Addr().String()
	hdrTimeout := s.ReadHeaderTimeout
	if hdrTimeout <= 0 {
		hdrTimeout = defaultReadHeaderTimeout
	}
	s.srv = &http.Server{
		Handler:           s,
		ErrorLog:          log.New(io.Discard, "", 0),
		ReadHeaderTimeout: hdrTimeout,
		// The whole request, body included. Not a watch: net/http clears
		// the read deadline once the body is read.
		ReadTimeout: requestReadTimeout,
		// No WriteTimeout: it would cut every watch after it.
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
	}
	if !s.PlainHTTP {
		// The listener does TLS itself, so the server must be told to
		// speak HTTP/2 on connections that negotiated it.
		s.srv.Protocols = new(http.Protocols)
		s.srv.Protocols.SetHTTP1(true)
		s.srv.Protocols.SetHTTP2(true)
		s.srv.TLSConfig = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
		// As kube-apiserver sets them (k8s.io/apiserver's
		// RecommendedOptions and SecureServingInfo.Serve): 1,000 streams
		// a connection, so that a client's 1,000 watches share one
		// connection as they do against the API server, not four as
		// under x/net's default of 250; request buffers and frames of
		// 256 KiB, and a connection's buffer for all its streams.
		h2 := &http2.Server{
			MaxConcurrentStreams:         h2MaxStreams,
			MaxUploadBufferPerStream:     h2StreamBuffer,
			MaxReadFrameSize:             h2StreamBuffer,
			MaxUploadBufferPerConnection: h2StreamBuffer * h2MaxStreams,
		}
		// Frames are written in random order among the streams that
		// have some, not round robin: the round-robin scheduler looks
		// at every open stream of the connection for each frame it
		// writes (and once more to find none left), up to 1,000
		// watches on a connection of client-go's, which made it most of
		// the connection's writer (BENCHMARKS.md). Each stream's frames
		// stay in order.
		// x/net deprecates user-provided schedulers (its default under
		// Go 1.26 is the round-robin one); should it drop them, drop
		// this.
		//lint:ignore SA1019 the random scheduler is O(streams with frames), round robin O(open streams)
		h2.NewWriteScheduler = http2.NewRandomWriteScheduler
		if err := http2.ConfigureServer(s.srv, h2); err != nil {
			ln.Close() // roll back
			return fmt.Errorf("configuring HTTP/2: %w", err)
		}
	}
	s.opened = make(chan struct{})
	if s.Replayer != nil {
		s.r = s.Replayer
		close(s.opened)
		s.open = func() {}
	} else {
		// Open starts at the first request or call of Ready, not here: on
		// two cores its read would slow the rest of the start (the
		// kubeconfig a caller writes next) by a third.
		s.open = sync.OnceFunc(func() {
			go func() {
				r, err := s.Open()
				if err == nil && r == nil {
					err = errors.New("the replay server's Open returned no Replayer")
				}
				s.r, s.openErr = r, err
				close(s.opened)
			}()
		})
	}
	go s.srv.Serve(ln)
	return nil
}

// Ready waits until the Server has its Replayer (at once unless
// [Server.Open] is set) and returns it, or the error of Open, or ctx's.
// Open starts at the first call of Ready or the first request, whichever
// comes first.
func (s *Server) Ready(ctx context.Context) (*Replayer, error) {
	s.mu.Lock()
	opened, open := s.opened, s.open
	s.mu.Unlock()
	if opened == nil {
		return nil, errors.New("Ready before Start")
	}
	open()
	select {
	case <-opened:
		return s.r, s.openErr
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// kube-apiserver's HTTP/2 limits: --http2-max-streams-per-connection as
// its recommended options set it, and its resourceBody99Percentile.
const (
	h2MaxStreams   = 1000
	h2StreamBuffer = 256 << 10
)

// URL returns the server's base URL, such as https://127.0.0.1:41234.
func (s *Server) URL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.url }

// Token returns the bearer token the server requires.
func (s *Server) Token() string { s.mu.Lock(); defer s.mu.Unlock(); return s.token }

// CA returns the PEM certificates an HTTPS client must trust; nil for
// PlainHTTP.
func (s *Server) CA() []byte { s.mu.Lock(); defer s.mu.Unlock(); return s.ca }

// Close stops the server, ends every open stream and waits for the
// handlers to return. A Replayer of [Server.Open]'s is closed too, once
// Open has returned.
func (s *Server) Close() error {
	s.mu.Lock()
	srv, opened := s.srv, s.opened
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	s.serving.Wait()
	if s.Replayer == nil {
		s.open() // so that it returns, if nothing asked for it yet
		<-opened
		if s.r != nil {
			err = errors.Join(err, s.r.Close())
		}
	}
	return err
}

// Config returns a rest.Config for the server.
func (s *Server) Config() *rest.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &rest.Config{Host: s.url, BearerToken: s.token, TLSClientConfig: rest.TLSClientConfig{CAData: s.ca}}
}

// WriteKubeconfig writes a kubeconfig at path whose current context points
// at the server with its token and CA.
func (s *Server) WriteKubeconfig(path string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.url == "" {
		return errors.New("WriteKubeconfig before Start")
	}
	if err := clientcmd.WriteToFile(*kubeconfig.For("kwrec-replay", s.url, s.ca, s.token), path); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}

// ServeHTTP answers one request through the Replayer, flushing every frame
// as soon as it is read. Unless PlainHTTP, a request without the token is
// answered 401 with nothing more (before [Server.Start], every request).
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.serving.Add(1)
	defer s.serving.Done()
	if !s.PlainHTTP && !s.authorized(req) {
		// As kube-apiserver: no hint of what was wrong or what would pass.
		writeStatus(w, req, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "https", req.Host
	if !compressible(out) {
		out.Header.Del("Accept-Encoding")
	}
	if !readBody(w, req, out) {
		return
	}
	r, err := s.Ready(req.Context())
	if err != nil {
		if req.Context().Err() == nil {
			writeStatus(w, req, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
		}
		return
	}
	resp, err := r.RoundTrip(out)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ECONNRESET):
			panic(http.ErrAbortHandler) // drop the connection, as the recording saw
		case req.Context().Err() != nil:
		case errors.Is(err, ErrExhausted):
			writeStatus(w, req, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
		case errors.Is(err, ErrNoMatch) && isResource(req):
			// Not a 404: a client would read that as an answer about the
			// object (kubectl delete --ignore-not-found would succeed).
			writeStatus(w, req, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
		default:
			writeStatus(w, req, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
		}
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	rc.Flush()
	var end error
	if b, ok := resp.Body.(*body); ok {
		end = copyFrames(w, rc, b)
	} else {
		end = copyBody(w, rc, resp.Body)
	}
	if end != io.EOF && end != errWrite && req.Context().Err() == nil {
		panic(http.ErrAbortHandler) // a reset or exhausted stream: cut it
	}
}

// errWrite is a write to the client that failed: it went away.
var errWrite = errors.New("kwrec replay: writing to the client")

// copyFrames writes b's frames to w as they come and flushes once no
// further frame is ready, so that a watch that is behind (at speed 0,
// always) gets its backlog in few large writes: the frames that are ready
// together are gathered in a pooled buffer of writeBatch and written at
// once. An idle watch holds no buffer. It returns b's final error
// (io.EOF at a clean end), or errWrite.
func copyFrames(w http.ResponseWriter, rc *http.ResponseController, b *body) error {
	for {
		data, err := b.chunk()
		if err != nil {
			return err
		}
		if !b.ready() || len(data) >= writeBatch {
			if _, err := w.Write(data); err != nil {
				return errWrite
			}
			rc.Flush()
			continue
		}
		bp := writeBatches.Get().(*[]byte)
		batch := append((*bp)[:0], data...)
		for err == nil && len(batch) < writeBatch && b.ready() {
			if data, err = b.chunk(); err == nil {
				batch = append(batch, data...)
			}
		}
		_, werr := w.Write(batch)
		*bp = batch[:0]
		writeBatches.Put(bp)
		if werr != nil {
			return errWrite
		}
		rc.Flush()
		if err != nil {
			return err
		}
	}
}

// writeBatch is about how much copyFrames gathers for one write: a few
// HTTP/2 frames of the default 16 KB.
const writeBatch = 64 << 10

// writeBatches holds the buffers of copyFrames. A new one starts at 16 KB
// and grows as a batch needs: a paced watch that is late gathers a few
// small frames, and a thousand of them late together (a burst at speed
// 1 on a busy machine) held large buffers each, garbage whose collection
// made the next bursts later still.
var writeBatches = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// copyBody writes any other body to w, flushing every read.
func copyBody(w http.ResponseWriter, rc *http.ResponseController, body io.Reader) error {
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return errWrite
			}
			rc.Flush()
		}
		if err != nil {
			return err
		}
	}
}

// compressible reports whether kube-apiserver would gzip its answer to req
// for a client that accepts it: not a watch, for which it does only for a
// streaming list (sendInitialEvents, the WatchListCompression feature, on
// since v1.37) and never for a plain watch. Go's transport asks every
// server for gzip on the client's behalf, so without this every watch
// would pay a compressor per watcher, most of the CPU of a fan-out.
func compressible(req *http.Request) bool {
	q := req.URL.Query()
	return !wire.IsWatch(q) || q.Get("sendInitialEvents") == "true"
}

// isResource reports whether req is for a resource or one of its
// subresources, not another path the server may simply not serve.
func isResource(req *http.Request) bool {
	_, _, verb := writeOf(req)
	if verb != "" {
		return true
	}
	_, ok := apipath.Parse(req.URL.Path)
	return ok
}

// authorized reports whether req carries the server's bearer token,
// compared in constant time. Before Start there is no token, and nothing
// passes.
func (s *Server) authorized(req *http.Request) bool {
	tok := s.Token()
	if tok == "" {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+tok)) == 1
}

// readBody reads req's body, at most maxBodyBytes, into out, so that a
// client cannot make the server hold an unbounded body in memory; it
// answers a larger one 413 RequestEntityTooLarge, as kube-apiserver, and
// reports false when it has answered.
func readBody(w http.ResponseWriter, req, out *http.Request) bool {
	out.Body, out.GetBody = http.NoBody, nil
	if req.ContentLength > maxBodyBytes {
		writeTooLarge(w, req)
		return false
	}
	if req.Body == nil || req.Body == http.NoBody {
		return true
	}
	b, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxBodyBytes))
	if tooLarge := new(http.MaxBytesError); errors.As(err, &tooLarge) {
		writeTooLarge(w, req)
		return false
	}
	if err != nil {
		if req.Context().Err() == nil {
			writeStatus(w, req, http.StatusBadRequest, metav1.StatusReasonBadRequest, "kwrec replay: reading the request body: "+err.Error())
		}
		return false
	}
	if len(b) > 0 {
		out.Body = io.NopCloser(bytes.NewReader(b))
	}
	out.ContentLength = int64(len(b))
	return true
}

func writeTooLarge(w http.ResponseWriter, req *http.Request) {
	writeStatus(w, req, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge, fmt.Sprintf("Request entity too large: limit is %d", maxBodyBytes))
}

// writeStatus answers a failure Status, in protobuf when the request
// negotiates it (client-go's typed clients), JSON otherwise.
func writeStatus(w http.ResponseWriter, req *http.Request, code int, reason metav1.StatusReason, msg string) {
	proto, _ := wire.Negotiate(req.Header.Get("Accept"))
	w.Header().Set("Content-Type", wire.MediaJSON)
	if proto {
		w.Header().Set("Content-Type", wire.MediaProtobuf)
	}
	w.WriteHeader(code)
	w.Write(wire.StatusBody(wire.Status(code, reason, msg, 0), proto))
}
