package replay_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// saveFixture writes testdata/name to a new file, compressed or not.
func saveFixture(t *testing.T, name string, compress bool) string {
	t.Helper()
	c := fixture(t, name)
	path := filepath.Join(t.TempDir(), name)
	if compress {
		path += ".zst"
	}
	if err := cassettes.Save(path, c); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenServesTheSameAsNewFromPlainAndCompressedFiles(t *testing.T) {
	for _, compress := range []bool{false, true} {
		name := map[bool]string{false: "plain text", true: "zstd"}[compress]
		t.Run(name, func(t *testing.T) {
			r, err := replay.Open(saveFixture(t, "configmaps.kwrec", compress), replay.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			for _, in := range r.Interactions() {
				for i, f := range in.Frames {
					if f.Data != nil {
						t.Fatalf("interaction %d frame %d holds %d bytes in memory; Open keeps frames in the file", in.ID, i+1, len(f.Data))
					}
				}
			}
			cs := clientset(t, r.Config())
			wantRecordedEvents(t, cs.CoreV1().ConfigMaps("default").Watch)
		})
	}
}

func TestOpenRefusesBadFilesNamingThem(t *testing.T) {
	dir := t.TempDir()
	cut := filepath.Join(dir, "cut.kwrec")
	full, err := os.ReadFile("testdata/configmaps.kwrec")
	if err != nil {
		t.Fatal(err)
	}
	// Cut in the middle of the last frame line of the watch.
	i := bytes.LastIndex(full, []byte(`{"frame":2`))
	if err := os.WriteFile(cut, full[:i+20], 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.kwrec")
	for _, tc := range []struct {
		name, path, want string
		is               error
	}{
		{"a missing file", missing, missing + ": no such file or directory", os.ErrNotExist},
		{"a cut file", cut, cut + fmt.Sprintf(":13: byte %d: the last line is cut (no newline and not a complete entry); everything before it is readable: run `kwrec lint --fix` to keep it", i+20), cassettes.ErrTruncated},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := replay.Open(tc.path, replay.Options{})
			if err == nil {
				r.Close()
				t.Fatal("Open succeeded")
			}
			if err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Errorf("error %q\nwant  %q (wrapping %v)", err, tc.want, tc.is)
			}
		})
	}
}

func TestOpenResolvesEditsAndNamesTheFileOfABadOne(t *testing.T) {
	path := saveFixture(t, "configmaps.kwrec", true)
	e, err := replay.ParseEdit("reset:request=2,after=9")
	if err != nil {
		t.Fatal(err)
	}
	_, err = replay.Open(path, replay.Options{Edits: []replay.Edit{e}})
	want := path + ": bad replay edit reset:request=2,after=9: interaction 2 has only 4 frame(s)"
	if err == nil || err.Error() != want || !errors.Is(err, replay.ErrBadEdit) {
		t.Errorf("error %v\nwant  %s", err, want)
	}
}

func TestABodyFailsWhenTheOpenedFileIsRewrittenInPlace(t *testing.T) {
	path := saveFixture(t, "configmaps.kwrec", false)
	r, err := replay.Open(path, replay.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Same size, different bytes: every frame line is now blank.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte(" "), len(b)), 0o644); err != nil {
		t.Fatal(err)
	}
	req := rawRequest("/api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0")
	resp, err := r.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, err = io.ReadAll(resp.Body)
	// Line 4: the header, the request and the response come first.
	want := path + ":4: the cassette changed since it was indexed; reopen it"
	if err == nil || err.Error() != want || !errors.Is(err, index.ErrModified) {
		t.Fatalf("reading the body: %v\nwant %s (wrapping %v)", err, want, index.ErrModified)
	}
}

func TestAReplacedFileDoesNotDisturbAnOpenReplay(t *testing.T) {
	path := saveFixture(t, "configmaps.kwrec", true)
	r, err := replay.Open(path, replay.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// What an editor or `kwrec edit` does: a new file renamed over the old.
	if err := cassettes.WriteAtomic(path, func(w io.Writer) error { _, err := w.Write([]byte("not a cassette\n")); return err }); err != nil {
		t.Fatal(err)
	}
	resp, err := r.RoundTrip(rawRequest("/api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !bytes.Contains(b, []byte(`"ConfigMapList"`)) {
		t.Fatalf("status %d, %d bytes, %v; want the recorded list", resp.StatusCode, len(b), err)
	}
}

func TestClosingAnOpenReplayerEndsItsBodies(t *testing.T) {
	path := saveFixture(t, "configmaps.kwrec", true)
	r, err := replay.Open(path, replay.Options{Strict: true})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := r.RoundTrip(rawRequest("/api/v1/namespaces/default/configmaps?limit=500&resourceVersion=0"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { _, err := io.ReadAll(resp.Body); done <- err }()
	select {
	case err := <-done:
		want := path + ": file already closed"
		if err == nil || err.Error() != want || !errors.Is(err, os.ErrClosed) {
			t.Fatalf("reading after Close: %v\nwant %s (wrapping %v)", err, want, os.ErrClosed)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a wait
		t.Fatal("reading a body after Close hangs")
	}
}
