package replay

import (
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// Server serves a [Replayer] on a loopback address (127.0.0.1 only) so any
// client in any language can replay: kubectl, a controller binary, a Python
// client. Over HTTPS (the default) it requires a random bearer token, which
// [Server.WriteKubeconfig] puts in the kubeconfig it writes; other requests
// get 401.
//
// Unless the cassette recorded them, /version, /api, /apis and the
// group-version resource lists are synthesized from the resources the
// cassette holds, so kubectl's discovery works on a cassette recorded by a
// program that never asked for it.
//
// Set the fields, then call [Server.Start]; or use [NewServer].
type Server struct {
	// Replayer answers the requests. Required.
	Replayer *Replayer
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

	mu      sync.Mutex
	ln      net.Listener
	srv     *http.Server
	url     string
	token   string
	ca      []byte
	serving sync.WaitGroup
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
	if s.Replayer == nil {
		return errors.New("kwrec replay: Server.Replayer is nil")
	}
	if s.ln != nil {
		return errors.New("kwrec replay: Server already started")
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return fmt.Errorf("kwrec replay: token: %w", err)
	}
	addr := s.Addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("kwrec replay: listen address %q: %w", addr, err)
	}
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if (ip == nil || !ip.IsLoopback()) && !s.AllowRemote {
		return fmt.Errorf("kwrec replay: listen address %q: %w", addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("kwrec replay: listen: %w", err)
	}
	scheme := "http"
	if !s.PlainHTTP {
		ips := []net.IP{net.IPv4(127, 0, 0, 1)}
		if ip != nil && !ip.IsLoopback() && !ip.IsUnspecified() {
			ips = append(ips, ip)
		}
		certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("127.0.0.1", ips, []string{"localhost"})
		if err == nil {
			var pair tls.Certificate
			if pair, err = tls.X509KeyPair(certPEM, keyPEM); err == nil {
				// h2 first, as the API server: client-go multiplexes every
				// watch of a client over one connection.
				ln = tls.NewListener(ln, &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"h2", "http/1.1"}, MinVersion: tls.VersionTLS12})
				s.ca = certPEM
			}
		}
		if err != nil {
			ln.Close() // roll back
			return fmt.Errorf("kwrec replay: serving certificate: %w", err)
		}
		scheme = "https"
	}
	s.ln, s.token = ln, hex.EncodeToString(tok)
	s.url = scheme + "://" + ln.Addr().String()
	s.srv = &http.Server{Handler: s, ErrorLog: log.New(io.Discard, "", 0)}
	if !s.PlainHTTP {
		// The listener does TLS itself, so the server must be told to
		// speak HTTP/2 on connections that negotiated it.
		s.srv.Protocols = new(http.Protocols)
		s.srv.Protocols.SetHTTP1(true)
		s.srv.Protocols.SetHTTP2(true)
		s.srv.TLSConfig = &tls.Config{NextProtos: []string{"h2", "http/1.1"}}
	}
	go s.srv.Serve(ln)
	return nil
}

// URL returns the server's base URL, such as https://127.0.0.1:41234.
func (s *Server) URL() string { s.mu.Lock(); defer s.mu.Unlock(); return s.url }

// Token returns the bearer token the server requires.
func (s *Server) Token() string { s.mu.Lock(); defer s.mu.Unlock(); return s.token }

// CA returns the PEM certificates an HTTPS client must trust; nil for
// PlainHTTP.
func (s *Server) CA() []byte { s.mu.Lock(); defer s.mu.Unlock(); return s.ca }

// Close stops the server, ends every open stream and waits for the
// handlers to return.
func (s *Server) Close() error {
	s.mu.Lock()
	srv := s.srv
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	s.serving.Wait()
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
		return errors.New("kwrec replay: WriteKubeconfig before Start")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["kwrec-replay"] = &clientcmdapi.Cluster{Server: s.url, CertificateAuthorityData: s.ca}
	cfg.AuthInfos["kwrec-replay"] = &clientcmdapi.AuthInfo{Token: s.token}
	cfg.Contexts["kwrec-replay"] = &clientcmdapi.Context{Cluster: "kwrec-replay", AuthInfo: "kwrec-replay", Namespace: "default"}
	cfg.CurrentContext = "kwrec-replay"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("kwrec replay: kubeconfig: %w", err)
	}
	return nil
}

// ServeHTTP answers one request through the Replayer, flushing every frame
// as soon as it is read.
func (s *Server) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	s.serving.Add(1)
	defer s.serving.Done()
	if !s.PlainHTTP && subtle.ConstantTimeCompare([]byte(req.Header.Get("Authorization")), []byte("Bearer "+s.Token())) != 1 {
		writeStatus(w, http.StatusUnauthorized, "Unauthorized", "kwrec replay: missing or wrong bearer token; use the kubeconfig from Server.WriteKubeconfig")
		return
	}
	out := req.Clone(req.Context())
	out.RequestURI = ""
	out.URL.Scheme, out.URL.Host = "https", req.Host
	resp, err := s.Replayer.RoundTrip(out)
	if err != nil {
		switch {
		case (errors.Is(err, ErrNoMatch) || errors.Is(err, ErrExhausted)) && s.discovery(w, req):
		case errors.Is(err, syscall.ECONNRESET):
			panic(http.ErrAbortHandler) // drop the connection, as the recording saw
		case req.Context().Err() != nil:
		case errors.Is(err, ErrExhausted):
			writeStatus(w, http.StatusServiceUnavailable, "ServiceUnavailable", err.Error())
		default:
			writeStatus(w, http.StatusNotFound, "NotFound", err.Error())
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
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		if n > 0 {
			if _, werr := w.Write(buf[:n]); werr != nil {
				return
			}
			rc.Flush()
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			if req.Context().Err() == nil {
				panic(http.ErrAbortHandler) // a reset or exhausted stream: cut it
			}
			return
		}
	}
}

func writeStatus(w http.ResponseWriter, code int, reason, msg string) {
	w.Header().Set("Content-Type", wire.MediaJSON)
	w.WriteHeader(code)
	w.Write(wire.StatusJSON(wire.Status(code, metav1.StatusReason(reason), msg, 0)))
}

// discovery answers a discovery request the replay could not: from the last
// recorded answer to the same path, else synthesized. It reports whether
// req was a discovery request.
func (s *Server) discovery(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodGet {
		return false
	}
	path := strings.TrimSuffix(req.URL.Path, "/")
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	switch {
	case path == "/version", path == "/api", path == "/apis":
	case len(segs) == 2 && segs[0] == "api", len(segs) == 3 && segs[0] == "apis":
	default:
		return false
	}
	r := s.Replayer
	for i := len(r.ivs) - 1; i >= 0; i-- {
		in := r.ivs[i].in
		u, err := url.Parse(in.Request.URL)
		if err != nil || in.Response == nil || in.Response.Status != http.StatusOK || strings.TrimSuffix(u.Path, "/") != path {
			continue
		}
		if acc := req.Header.Get("Accept"); acc != "" && !wire.Accepts(acc, in.Response.Header.Get("Content-Type")) {
			continue
		}
		for k, v := range in.Response.Header {
			if k != "Content-Length" && k != "Content-Encoding" && k != "Transfer-Encoding" {
				w.Header()[k] = v
			}
		}
		b, err := r.body(in)
		if err != nil {
			writeStatus(w, http.StatusInternalServerError, "InternalError", err.Error())
			return true
		}
		w.WriteHeader(http.StatusOK)
		w.Write(b)
		return true
	}
	body := r.synthesizeDiscovery(path, req.Host)
	if body == nil {
		writeStatus(w, http.StatusNotFound, "NotFound", "kwrec replay: the cassette has no resources under "+path)
		return true
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(body)
	return true
}

// synthesizeDiscovery builds the legacy (unaggregated) discovery document
// for path from the collections the cassette holds; nil when path names a
// group version the cassette never touched.
func (r *Replayer) synthesizeDiscovery(path, host string) []byte {
	type res struct {
		Name         string   `json:"name"`
		SingularName string   `json:"singularName"`
		Namespaced   bool     `json:"namespaced"`
		Kind         string   `json:"kind"`
		Verbs        []string `json:"verbs"`
	}
	byGV := map[string]map[string]*res{}
	for _, t := range r.tlOrder {
		gv := t.Res.APIVersion()
		if byGV[gv] == nil {
			byGV[gv] = map[string]*res{}
		}
		x := byGV[gv][t.Res.Resource]
		if x == nil {
			x = &res{Name: t.Res.Resource, SingularName: strings.ToLower(t.Kind), Kind: t.Kind, Verbs: []string{"get", "list", "watch"}}
			byGV[gv][t.Res.Resource] = x
		}
		x.Namespaced = x.Namespaced || t.Res.Namespace != ""
	}
	server := r.header.Server
	var doc any
	switch {
	case path == "/version":
		if server == "" {
			server = "v0.0.0-kwrec-replay"
		}
		major, minor := "", ""
		if parts := strings.SplitN(strings.TrimPrefix(server, "v"), ".", 3); len(parts) >= 2 {
			major, minor = parts[0], parts[1]
		}
		doc = map[string]string{"major": major, "minor": minor, "gitVersion": server, "platform": "linux/amd64"}
	case path == "/api":
		doc = map[string]any{"kind": "APIVersions", "versions": []string{"v1"},
			"serverAddressByClientCIDRs": []map[string]string{{"clientCIDR": "0.0.0.0/0", "serverAddress": host}}}
	case path == "/apis":
		groups := map[string][]string{}
		for gv := range byGV {
			if g, v, ok := strings.Cut(gv, "/"); ok {
				groups[g] = append(groups[g], v)
			}
		}
		names := make([]string, 0, len(groups))
		for g := range groups {
			names = append(names, g)
		}
		sort.Strings(names)
		list := []any{}
		for _, g := range names {
			var vs []map[string]string
			sort.Strings(groups[g])
			for _, v := range groups[g] {
				vs = append(vs, map[string]string{"groupVersion": g + "/" + v, "version": v})
			}
			list = append(list, map[string]any{"name": g, "versions": vs, "preferredVersion": vs[0]})
		}
		doc = map[string]any{"kind": "APIGroupList", "apiVersion": "v1", "groups": list}
	default:
		gv := strings.TrimPrefix(strings.TrimPrefix(path, "/apis/"), "/api/")
		rs := byGV[gv]
		if rs == nil && gv != "v1" {
			return nil
		}
		names := make([]string, 0, len(rs))
		for n := range rs {
			names = append(names, n)
		}
		sort.Strings(names)
		list := []*res{}
		for _, n := range names {
			list = append(list, rs[n])
		}
		doc = map[string]any{"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list}
	}
	b, _ := json.Marshal(doc)
	return append(b, '\n')
}
