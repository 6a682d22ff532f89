package recorder_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
)

// session is a recorder writing a compressed cassette in t.TempDir().
type session struct {
	t    testing.TB
	path string
	w    *cassettes.Writer
	rec  *recorder.Recorder
	done bool
}

func newSession(t testing.TB, opts recorder.Options) *session {
	t.Helper()
	path := filepath.Join(t.TempDir(), "c.kwrec.zst")
	w, err := cassettes.Create(path, recorder.Header("test", opts), cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.New(w, opts)
	if err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, path: path, w: w, rec: rec}
	t.Cleanup(func() {
		if !s.done {
			s.rec.Close()
			s.w.Close()
		}
	})
	return s
}

// finish closes the recorder and the writer and loads the cassette.
func (s *session) finish() *cassettes.Cassette {
	s.t.Helper()
	s.done = true
	if err := s.rec.Close(); err != nil {
		s.t.Fatalf("Recorder.Close: %v", err)
	}
	if err := s.w.Close(); err != nil {
		s.t.Fatalf("Writer.Close: %v", err)
	}
	c, err := cassettes.Load(s.path)
	if err != nil {
		s.t.Fatalf("loading the cassette: %v", err)
	}
	return c
}

// raw returns the decompressed text of the cassette file.
func (s *session) raw() []byte {
	s.t.Helper()
	f, err := os.ReadFile(s.path)
	if err != nil {
		s.t.Fatal(err)
	}
	d, err := zstd.NewReader(bytes.NewReader(f))
	if err != nil {
		s.t.Fatal(err)
	}
	defer d.Close()
	b, err := io.ReadAll(d)
	if err != nil {
		s.t.Fatal(err)
	}
	return b
}

func (s *session) client() *http.Client {
	return &http.Client{Transport: s.rec.Wrap(&http.Transport{})}
}

func frameStrings(in *cassettes.Interaction) []string {
	out := make([]string, len(in.Frames))
	for i, f := range in.Frames {
		out[i] = string(f.Data)
	}
	return out
}

// rtFunc is an http.RoundTripper from a function.
type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
