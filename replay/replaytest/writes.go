package replaytest

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/explore"
	"github.com/kwrec/kwrec/replay"
)

// EnvUpdate names the environment variable that, set to 1, makes
// [CheckWrites] rewrite its golden file instead of comparing.
const EnvUpdate = "KWREC_UPDATE"

// CheckWrites compares the writes r applied ([replay.Replayer.Writes]),
// normalized by [FormatWrites], with the golden file testdata/NAME.writes
// (see [Path]), and fails the test with both when they differ. With
// $KWREC_UPDATE=1 it writes the file instead.
func CheckWrites(t testing.TB, r *replay.Replayer, name string) {
	t.Helper()
	path := Path(name + ".writes")
	got := FormatWrites(r.Writes())
	if os.Getenv(EnvUpdate) == "1" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatalf("replaytest: %v", err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatalf("replaytest: %v", err)
		}
		t.Logf("replaytest: wrote %s", path)
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("replaytest: %v (create it with %s=1)", err, EnvUpdate)
	}
	if got != string(want) {
		t.Errorf("replaytest: the writes differ from %s (rewrite it with %s=1 if the change is intended)\n--- want\n%s\n--- got\n%s", path, EnvUpdate, want, got)
	}
}

// FormatWrites renders writes as the text of a golden file: per write, the
// request line (method, path, sorted query), the request body and the
// answer's status and body, JSON with sorted keys, indented, and without
// the server-set fields that differ between runs (resourceVersion, uid,
// creationTimestamp, managedFields, deletionTimestamp, generation).
func FormatWrites(writes []*cassettes.Interaction) string {
	var b strings.Builder
	for i, in := range writes {
		path, query := in.Request.URL, ""
		if u, err := url.Parse(in.Request.URL); err == nil {
			path, query = u.Path, u.Query().Encode()
		}
		if query != "" {
			query = "?" + query
		}
		fmt.Fprintf(&b, "# write %d\n%s %s%s\n", i+1, in.Request.Method, path, query)
		if len(in.Request.Body) > 0 {
			b.WriteString(explore.Normalize(in.Request.Body))
		}
		if in.Response != nil {
			fmt.Fprintf(&b, "=> %d\n", in.Response.Status)
			b.WriteString(explore.Normalize(in.Body()))
		}
	}
	return b.String()
}
