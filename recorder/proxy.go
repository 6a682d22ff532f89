package recorder

import (
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/kwrec/kwrec/internal/kubeconfig"
)

// Proxy is a loopback reverse proxy that records, through a [Recorder],
// everything clients send to a cluster: point kubectl, a controller binary
// or a client in any language at it with the kubeconfig from
// [Proxy.WriteKubeconfig] and it is recorded with no code change.
//
// The proxy authenticates to the cluster with the [rest.Config]'s
// credentials and drops the clients' own Authorization headers. It listens
// on 127.0.0.1 only and speaks plain HTTP: anyone on the machine who can
// reach the port acts with the config's credentials, as with `kubectl
// proxy`. Streaming responses (watches) are flushed to the client as each
// chunk arrives. Upgraded connections (exec, attach, port-forward) pass
// through; only their request and 101 response head are recorded.
type Proxy struct {
	// URL is the proxy's base URL, http://127.0.0.1:port.
	URL string

	srv *http.Server
	ln  net.Listener
	err chan error
}

// NewProxy starts a proxy to the cluster of cfg, recording through rec.
// Close it when done; it does not close rec.
func NewProxy(cfg *rest.Config, rec *Recorder) (*Proxy, error) {
	target, err := clusterURL(cfg)
	if err != nil {
		return nil, err
	}
	c := rest.CopyConfig(cfg)
	rec.WrapConfig(c)
	rt, err := rest.TransportFor(c)
	if err != nil {
		return nil, fmt.Errorf("recorder: proxy transport: %w", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("recorder: proxy: %w", err)
	}
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// The proxy's credentials replace the client's.
			pr.Out.Header.Del("Authorization")
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport:     rt,
		FlushInterval: -1, // flush every write: a watch event must not wait
		// A client closing a watch is normal; the cassette records it as
		// stopped. Don't print it on the recorded command's stderr.
		ErrorLog: log.New(io.Discard, "", 0),
		// A transport error before the response head (a refused dial, a
		// reset: a crashed API server) reaches the client as one, the
		// connection dropped, as it is recorded and replayed; not as the
		// 502 no API server sends, after which client-go recovers
		// differently (it re-lists where a reset makes it re-watch).
		ErrorHandler: func(http.ResponseWriter, *http.Request, error) { panic(http.ErrAbortHandler) },
	}
	p := &Proxy{
		URL: "http://" + ln.Addr().String(),
		srv: &http.Server{Handler: rp, ReadHeaderTimeout: 30 * time.Second},
		ln:  ln,
		err: make(chan error, 1),
	}
	go func() { p.err <- p.srv.Serve(ln) }()
	return p, nil
}

// clusterURL is cfg.Host as a URL, with the scheme client-go would use.
func clusterURL(cfg *rest.Config) (*url.URL, error) {
	if cfg.Host == "" {
		return nil, errors.New("recorder: proxy: the rest.Config has no Host")
	}
	u, _, err := rest.DefaultServerUrlFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("recorder: proxy: %w", err)
	}
	return u, nil
}

// Kubeconfig returns a kubeconfig whose only context points at the proxy,
// with no credentials (the proxy holds them).
func (p *Proxy) Kubeconfig() *clientcmdapi.Config {
	return kubeconfig.For("kwrec", p.URL, nil, "")
}

// WriteKubeconfig writes [Proxy.Kubeconfig] to path.
func (p *Proxy) WriteKubeconfig(path string) error {
	if err := clientcmd.WriteToFile(*p.Kubeconfig(), path); err != nil {
		return fmt.Errorf("recorder: writing the proxy kubeconfig: %w", err)
	}
	return nil
}

// Close stops the proxy and cuts its open connections; their streams end
// in the cassette as [cassettes.EndStopped].
func (p *Proxy) Close() error {
	err := p.srv.Close()
	if serr := <-p.err; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return err
}
