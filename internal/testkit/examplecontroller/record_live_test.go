package examplecontroller_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// cassette is the recording every hermetic test replays.
const cassette = "mirror.kwrec.zst"

// TestLiveRecordMirrorCassette records testdata/mirror.kwrec.zst from the
// real control plane with `kwrec record configmaps -n kwrec-mirror` while
// the script runs: the world the controller reacts to, lists, watches and
// discovery, and none of the controller's writes (no controller runs).
// It rewrites the cassette only with KWREC_UPDATE=1.
func TestLiveRecordMirrorCassette(t *testing.T) {
	if os.Getenv(replaytest.EnvUpdate) != "1" {
		t.Skipf("set %s=1 to re-record testdata/%s", replaytest.EnvUpdate, cassette)
	}
	cp := controlplanetest.Start(t)
	kwrec := filepath.Join(t.TempDir(), "kwrec")
	if out, err := exec.Command("go", "build", "-o", kwrec, "github.com/kwrec/kwrec/cmd/kwrec").CombinedOutput(); err != nil {
		t.Fatalf("building kwrec: %v\n%s", err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cp.Config)
	if err := setUp(ctx, cs, namespace); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), cassette)
	// --events: the recorder stops once it has the initial alpha and the
	// script's 9 changes.
	cmd := exec.CommandContext(ctx, kwrec, "record", "configmaps", "-n", namespace, "-o", out, "--kubeconfig", cp.Kubeconfig,
		"--label", "recorded-by=TestLiveRecordMirrorCassette", "--events", "10")
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// The script starts once kwrec says the initial state is recorded.
	var stderr bytes.Buffer
	lines := bufio.NewScanner(stderrPipe)
	for lines.Scan() {
		stderr.Write(append(lines.Bytes(), '\n'))
		if bytes.Contains(lines.Bytes(), []byte("is recorded; watching")) {
			break
		}
	}
	copied := make(chan struct{})
	go func() { io.Copy(&stderr, stderrPipe); close(copied) }()
	err = play(ctx, cs, namespace, 300*time.Millisecond)
	<-copied
	if werr := cmd.Wait(); werr != nil {
		t.Fatalf("kwrec record: %v\n%s", werr, stderr.Bytes())
	}
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replaytest.Path(cassette), b, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote testdata/%s (%d bytes); %s", cassette, len(b), bytes.TrimSpace(stderr.Bytes()))
}
