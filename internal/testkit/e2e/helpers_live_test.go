package e2e_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kwrec/kwrec/replay"
)

// wire sits between a client and the replay and notes what the client
// sees: every response's head, and every 410 Expired watch ERROR event in
// watch bodies (JSON or protobuf: both carry the reason "Expired").
type wire struct {
	mu        sync.Mutex
	exchanges []exchange
	expired   int
}

// exchange is one response as the client saw it.
type exchange struct {
	Method, URL, Proto, ContentType string
	Status                          int
	// Err is the transport error when there was no response.
	Err string
}

func (x exchange) String() string {
	if x.Err != "" {
		return fmt.Sprintf("%s %s -> error %s", x.Method, x.URL, x.Err)
	}
	return fmt.Sprintf("%s %s -> %d %s %s", x.Method, x.URL, x.Status, x.Proto, x.ContentType)
}

// wrap makes every client built from cfg go through w.
func (w *wire) wrap(cfg *rest.Config) {
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return &tap{next: rt, w: w} })
}

// count returns how many responses had status code.
func (w *wire) count(code int) int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, x := range w.exchanges {
		if x.Status == code {
			n++
		}
	}
	return n
}

// expiredEvents returns how many 410 Expired watch ERROR events the client
// received.
func (w *wire) expiredEvents() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.expired
}

func (w *wire) log() []exchange {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]exchange(nil), w.exchanges...)
}

func (w *wire) String() string {
	var b strings.Builder
	for _, x := range w.log() {
		fmt.Fprintf(&b, "  %s\n", x)
	}
	return b.String()
}

type tap struct {
	next http.RoundTripper
	w    *wire
}

func (t *tap) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	if err != nil {
		t.w.mu.Lock()
		t.w.exchanges = append(t.w.exchanges, exchange{Method: req.Method, URL: req.URL.RequestURI(), Err: err.Error()})
		t.w.mu.Unlock()
		return nil, err
	}
	t.w.mu.Lock()
	t.w.exchanges = append(t.w.exchanges, exchange{Method: req.Method, URL: req.URL.RequestURI(), Proto: resp.Proto, ContentType: resp.Header.Get("Content-Type"), Status: resp.StatusCode})
	t.w.mu.Unlock()
	if isWatch(req.URL) {
		resp.Body = &expiredScanner{ReadCloser: resp.Body, w: t.w}
	}
	return resp, nil
}

var expiredMarker = []byte("Expired")

// expiredScanner counts [expiredMarker] in a body as it is read, across
// read boundaries.
type expiredScanner struct {
	io.ReadCloser
	w    *wire
	tail []byte
}

func (s *expiredScanner) Read(p []byte) (int, error) {
	n, err := s.ReadCloser.Read(p)
	if n > 0 {
		buf := append(s.tail, p[:n]...)
		if c := bytes.Count(buf, expiredMarker); c > 0 {
			s.w.mu.Lock()
			s.w.expired += c
			s.w.mu.Unlock()
		}
		// A match cannot lie inside the kept tail alone.
		keep := min(len(buf), len(expiredMarker)-1)
		s.tail = append([]byte(nil), buf[len(buf)-keep:]...)
	}
	return n, err
}

// served is a running `kwrec serve`.
type served struct {
	Kubeconfig string
	cmd        *exec.Cmd
	stderr     syncBuffer
	exited     chan struct{}
	waitErr    error
}

// serve starts `kwrec serve CASSETTE --speed 0 --clock consumption ARGS...`
// (a later --clock in ARGS wins) and waits until it
// is ready; it is stopped (SIGTERM) in t.Cleanup. A serve that exits before
// it is ready fails t with its first stderr line.
func serve(t *testing.T, fx *fixtures, cassette string, args ...string) *served {
	t.Helper()
	s := &served{Kubeconfig: filepath.Join(t.TempDir(), "replay.kubeconfig"), exited: make(chan struct{})}
	s.cmd = exec.Command(fx.kwrec, append([]string{"serve", cassette, "--speed", "0", "--clock", "consumption", "--kubeconfig-out", s.Kubeconfig}, args...)...)
	s.cmd.Stderr = &s.stderr
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), "kubeconfig: ") {
				close(ready)
			}
		}
		s.waitErr = s.cmd.Wait()
		close(s.exited)
	}()
	t.Cleanup(func() { s.Stop(t) })
	select {
	case <-ready:
		return s
	case <-s.exited:
		t.Fatalf("kwrec serve %s: %s", strings.Join(args, " "), firstLine(s.stderr.String()))
	case <-time.After(20 * time.Second):
		t.Fatalf("kwrec serve %s: not ready after 20s; stderr:\n%s", strings.Join(args, " "), s.stderr.String())
	}
	return nil
}

// Stop ends the server with SIGTERM (SIGKILL after 5 s) and returns its
// stderr. It may be called more than once.
func (s *served) Stop(t *testing.T) string { return s.end(t, syscall.SIGTERM) }

// Quit sends kwrec serve SIGQUIT, which makes Go print every goroutine's
// stack and exit, and returns its stderr: where a request that never got
// its answer is stuck.
func (s *served) Quit(t *testing.T) string { return s.end(t, syscall.SIGQUIT) }

// end sends kwrec serve sig unless it has exited, waits up to 5s for it to
// exit (then kills it), and returns its stderr.
func (s *served) end(t *testing.T, sig syscall.Signal) string {
	select {
	case <-s.exited:
		return s.stderr.String()
	default:
	}
	s.cmd.Process.Signal(sig)
	select {
	case <-s.exited:
	case <-time.After(5 * time.Second):
		t.Errorf("kwrec serve did not stop 5s after %v; killing it", sig)
		s.cmd.Process.Kill()
		<-s.exited
	}
	return s.stderr.String()
}

// Config returns a client config from the kubeconfig kwrec serve wrote.
func (s *served) Config(t *testing.T) *rest.Config {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// openReplay opens cassette in process at speed 0 with edits (in
// replay.ParseEdit's syntax); it fails t if an edit does not parse.
func openReplay(t *testing.T, cassette string, edits ...string) *replay.Replayer {
	t.Helper()
	var es []replay.Edit
	for _, s := range edits {
		e, err := replay.ParseEdit(s)
		if err != nil {
			t.Fatalf("replay.ParseEdit(%q): %v", s, err)
		}
		es = append(es, e)
	}
	r, err := replay.Open(cassette, replay.Options{Edits: es})
	if err != nil {
		t.Fatalf("replay.Open: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// lastLines returns the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
