package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"syscall"
	"time"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/kubeconfig"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/serve"
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
	// Logf, when set, is told what the server does that no client is
	// answered: the overlay's writes a seek back of the world clock
	// dropped (see [ClockPath]). Default nil: nothing is told.
	Logf func(format string, args ...any)
	// Observe, when set, is called as each request comes (before the
	// token check), and the function it returns once the request's answer
	// has ended: a watch's when its stream ends. A caller counts the
	// requests in flight with it, as kwrec explore does to tell when a
	// client has gone idle with its watches open. Both must return at
	// once. Default nil.
	Observe func(req *http.Request) (end func())

	mu      sync.Mutex
	srv     *serve.Server
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
	if s.srv != nil {
		return errors.New("the replay server is already started")
	}
	tok, err := serve.Token()
	if err != nil {
		return err
	}
	addr := s.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ip, loopback, err := serve.Host(addr)
	if err != nil {
		return fmt.Errorf("listen address %q: %w", addr, err)
	}
	if !loopback && !s.AllowRemote {
		return fmt.Errorf("listen address %q: %w", addr, ErrNotLoopback)
	}
	srv, err := serve.Listen(serve.Config{Addr: addr, IP: ip, PlainHTTP: s.PlainHTTP, ReadHeaderTimeout: s.ReadHeaderTimeout, Handler: s})
	if err != nil {
		return err
	}
	s.srv, s.token, s.url, s.ca = srv, tok, srv.URL, srv.CA
	s.startOpen()
	srv.Serve()
	return nil
}

// startOpen readies what [Server.Ready] waits for: the Replayer at once,
// or Open's, started at the first request or call of Ready, not here: on
// two cores its read would slow the rest of the start (the kubeconfig a
// caller writes next) by a third.
func (s *Server) startOpen() {
	s.opened = make(chan struct{})
	if s.Replayer != nil {
		s.r = s.Replayer
		close(s.opened)
		s.open = func() {}
		return
	}
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
	if s.Observe != nil {
		defer s.Observe(req)()
	}
	if !s.PlainHTTP && !serve.Authorized(req, s.Token()) {
		// As kube-apiserver: no hint of what was wrong or what would pass.
		serve.WriteStatus(w, req, http.StatusUnauthorized, metav1.StatusReasonUnauthorized, "Unauthorized")
		return
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "https", req.Host
	if !serve.Compressible(out) {
		out.Header.Del("Accept-Encoding")
	}
	if !serve.ReadBody(w, req, out) {
		return
	}
	r, err := s.Ready(req.Context())
	if err != nil {
		if req.Context().Err() == nil {
			serve.WriteStatus(w, req, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
		}
		return
	}
	if req.URL.Path == ClockPath {
		serveClock(w, out, r, s.Logf)
		return
	}
	resp, err := r.RoundTrip(out)
	if err != nil {
		refuse(w, req, err)
		return
	}
	defer resp.Body.Close()
	relay(w, req, resp)
}

// refuse answers a request the Replayer failed with err.
func refuse(w http.ResponseWriter, req *http.Request, err error) {
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		panic(http.ErrAbortHandler) // drop the connection, as the recording saw
	case req.Context().Err() != nil:
	case errors.Is(err, ErrExhausted):
		serve.WriteStatus(w, req, http.StatusServiceUnavailable, metav1.StatusReasonServiceUnavailable, err.Error())
	case errors.Is(err, ErrNoMatch) && isResource(req):
		// Not a 404: a client would read that as an answer about the
		// object (kubectl delete --ignore-not-found would succeed).
		serve.WriteStatus(w, req, http.StatusInternalServerError, metav1.StatusReasonInternalError, err.Error())
	default:
		serve.WriteStatus(w, req, http.StatusNotFound, metav1.StatusReasonNotFound, err.Error())
	}
}

// relay writes resp to the client frame by frame, and cuts the connection
// where the replayed stream was reset or exhausted.
func relay(w http.ResponseWriter, req *http.Request, resp *http.Response) {
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	rc.Flush()
	var end error
	if b, ok := resp.Body.(*body); ok {
		end = serve.CopyFrames(w, rc, bodyFrames{b})
	} else {
		end = serve.CopyBody(w, rc, resp.Body)
	}
	if end != io.EOF && end != serve.ErrWrite && req.Context().Err() == nil {
		panic(http.ErrAbortHandler) // a reset or exhausted stream: cut it
	}
}

// bodyFrames reads a replayed body frame by frame for [serve.CopyFrames].
type bodyFrames struct{ b *body }

func (f bodyFrames) Chunk() ([]byte, error) { return f.b.chunk() }
func (f bodyFrames) Ready() bool            { return f.b.ready() }

// isResource reports whether req is for a resource or one of its
// subresources, not another path the server may simply not serve.
func isResource(req *http.Request) bool {
	if overlay.IsWrite(req) {
		return true
	}
	_, ok := apipath.Parse(req.URL.Path)
	return ok
}
