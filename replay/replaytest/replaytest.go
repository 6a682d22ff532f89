// Package replaytest replays a cassette from a test's testdata directory in
// one call, in the style of net/http/httptest:
//
//	func TestController(t *testing.T) {
//		cfg := replaytest.Config(t, "configmaps.kwrec")
//		cs := kubernetes.NewForConfigOrDie(cfg)
//		// ... run the code under test against cs ...
//	}
//
// Cassettes may be plain text or zstd-compressed; the format is detected
// from the file's first bytes.
//
// Record-once (future work): with an environment variable set and a
// kubeconfig at hand, Config will record testdata/NAME through the kwrec
// recorder instead of replaying it, as go-vcr's RecordOnce mode does. It
// waits for the recorder package; until then, record with the kwrec CLI.
package replaytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	"k8s.io/client-go/rest"
)

// Path returns where name is looked up: name itself when absolute, else
// testdata/name relative to the test's package directory.
func Path(name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	return filepath.Join("testdata", name)
}

// New loads the cassette name (see [Path]) and returns a Replayer over it
// with opts. A missing or unreadable cassette fails the test at once with
// the reader's error, which says what to do.
func New(t testing.TB, name string, opts replay.Options) *replay.Replayer {
	t.Helper()
	path := Path(name)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("replaytest: cassette %s: %v (record it with the kwrec CLI, or fix the name)", path, err)
	}
	c, err := cassettes.Load(path)
	if err != nil {
		t.Fatalf("replaytest: %v", err)
	}
	r, err := replay.New(c, opts)
	if err != nil {
		t.Fatalf("replaytest: %s: %v", path, err)
	}
	return r
}

// Config returns a rest.Config whose clients (typed, dynamic, informers)
// replay the cassette name (see [Path]) with the zero [replay.Options]: as
// fast as the client reads, answering unrecorded lists and watches from the
// recorded state, idling at the end of a recorded watch like a live server.
// Use [New] for other options, such as ErrorWhenExhausted.
func Config(t testing.TB, name string) *rest.Config {
	t.Helper()
	return New(t, name, replay.Options{}).Config()
}
