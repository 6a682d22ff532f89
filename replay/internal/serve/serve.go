package serve

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"time"

	"golang.org/x/net/http2"
)

// DefaultReadHeaderTimeout is the default of replay.Server's
// ReadHeaderTimeout.
const DefaultReadHeaderTimeout = 10 * time.Second

// The limits a server puts on its clients; see replay.Server.
const (
	requestReadTimeout = time.Minute
	idleTimeout        = 2 * time.Minute
	maxHeaderBytes     = 1 << 20
	// MaxBodyBytes is kube-apiserver's MaxRequestBodyBytes default.
	MaxBodyBytes = 3 << 20
)

// kube-apiserver's HTTP/2 limits: --http2-max-streams-per-connection as
// its recommended options set it, and its resourceBody99Percentile.
const (
	h2MaxStreams   = 1000
	h2StreamBuffer = 256 << 10
)

// Config says how to [Listen].
type Config struct {
	// Addr is the host:port to listen on; IP is its host's address (nil
	// for a host name), as [Host] returns it.
	Addr string
	IP   net.IP
	// PlainHTTP serves plain HTTP; otherwise HTTPS with a certificate for
	// 127.0.0.1 (and IP) signed by a CA made at Listen.
	PlainHTTP bool
	// ReadHeaderTimeout bounds the TLS handshake and a request's headers.
	// Default [DefaultReadHeaderTimeout].
	ReadHeaderTimeout time.Duration
	Handler           http.Handler
}

// Server is a listening server.
type Server struct {
	// URL is the base URL, such as https://127.0.0.1:41234.
	URL string
	// CA is the PEM certificate an HTTPS client must trust; nil for plain
	// HTTP.
	CA  []byte
	ln  net.Listener
	srv *http.Server
}

// Host returns the IP of addr's host (127.0.0.1 for localhost, nil for
// another name) and whether it is a loopback address.
func Host(addr string) (net.IP, bool, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, false, err
	}
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	return ip, ip != nil && ip.IsLoopback(), nil
}

// Token returns a random bearer token.
func Token() (string, error) {
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return "", fmt.Errorf("token: %w", err)
	}
	return hex.EncodeToString(tok), nil
}

// Listen listens on c.Addr and configures the server; [Server.Serve]
// serves. Nothing is left open when it fails.
func Listen(c Config) (*Server, error) {
	ln, err := net.Listen("tcp", c.Addr)
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	s := &Server{ln: ln, srv: newHTTPServer(c)}
	if !c.PlainHTTP {
		if err := s.secure(c.IP); err != nil {
			ln.Close() // roll back
			return nil, err
		}
	}
	scheme := "https"
	if c.PlainHTTP {
		scheme = "http"
	}
	s.URL = scheme + "://" + ln.Addr().String()
	return s, nil
}

// Serve serves in the background.
func (s *Server) Serve() { go s.srv.Serve(s.ln) }

// Close stops the server and ends every connection.
func (s *Server) Close() error { return s.srv.Close() }

func newHTTPServer(c Config) *http.Server {
	hdrTimeout := c.ReadHeaderTimeout
	if hdrTimeout <= 0 {
		hdrTimeout = DefaultReadHeaderTimeout
	}
	return &http.Server{
		Handler:           c.Handler,
		ErrorLog:          log.New(io.Discard, "", 0),
		ReadHeaderTimeout: hdrTimeout,
		// The whole request, body included. Not a watch: net/http clears
		// the read deadline once the body is read.
		ReadTimeout: requestReadTimeout,
		// No WriteTimeout: it would cut every watch after it.
		IdleTimeout:    idleTimeout,
		MaxHeaderBytes: maxHeaderBytes,
	}
}

// secure makes s serve HTTPS, HTTP/2 first, with a certificate for
// 127.0.0.1 and ip.
func (s *Server) secure(ip net.IP) error {
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	if ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
		ips = append(ips, ip)
	}
	pair, ca, err := servingCert(ips, time.Now())
	if err != nil {
		return fmt.Errorf("serving certificate: %w", err)
	}
	// h2 first, as the API server: client-go multiplexes every watch of a
	// client over one connection.
	s.ln = tls.NewListener(s.ln, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
	s.CA = ca
	// The listener does TLS itself, so the server must be told to speak
	// HTTP/2 on connections that negotiated it.
	s.srv.Protocols = new(http.Protocols)
	s.srv.Protocols.SetHTTP1(true)
	s.srv.Protocols.SetHTTP2(true)
	s.srv.TLSConfig = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	if err := http2.ConfigureServer(s.srv, h2Server()); err != nil {
		return fmt.Errorf("configuring HTTP/2: %w", err)
	}
	return nil
}

// h2Server is the HTTP/2 configuration, as kube-apiserver sets it
// (k8s.io/apiserver's RecommendedOptions and SecureServingInfo.Serve):
// 1,000 streams a connection, so that a client's 1,000 watches share one
// connection as they do against the API server, not four as under x/net's
// default of 250; request buffers and frames of 256 KiB, and a
// connection's buffer for all its streams.
func h2Server() *http2.Server {
	h2 := &http2.Server{
		MaxConcurrentStreams:         h2MaxStreams,
		MaxUploadBufferPerStream:     h2StreamBuffer,
		MaxReadFrameSize:             h2StreamBuffer,
		MaxUploadBufferPerConnection: h2StreamBuffer * h2MaxStreams,
	}
	// Frames are written in random order among the streams that have
	// some, not round robin: the round-robin scheduler looks at every open
	// stream of the connection for each frame it writes (and once more to
	// find none left), up to 1,000 watches on a connection of client-go's,
	// which made it most of the connection's writer (BENCHMARKS.md). Each
	// stream's frames stay in order. x/net deprecates user-provided
	// schedulers (its default under Go 1.26 is the round-robin one); should
	// it drop them, drop this.
	//lint:ignore SA1019 the random scheduler is O(streams with frames), round robin O(open streams)
	h2.NewWriteScheduler = http2.NewRandomWriteScheduler
	return h2
}
