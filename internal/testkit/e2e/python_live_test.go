package e2e_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// python is Debian's python3, which has python3-kubernetes.
const python = "/usr/bin/python3"

// pyResult is what testdata/pywatch.py prints.
type pyResult struct {
	Final  map[string]string `json:"final"`
	Errors []int             `json:"errors"`
	Events [][3]string       `json:"events"`
}

// TestLivePythonClientRecoversToTheRecordedState runs python3-kubernetes
// (list, then watch.Watch().stream with timeout_seconds; on a 410 re-list
// and re-watch) through kwrec serve under each failure.
func TestLivePythonClientRecoversToTheRecordedState(t *testing.T) {
	fx := fixture(t)
	if out, err := exec.Command(python, "-c", "import kubernetes").CombinedOutput(); err != nil {
		t.Skipf("%s has no python3-kubernetes: %v\n%s", python, err, out)
	}
	rec := fx.json
	var want [][3]string
	for _, e := range rec.Events {
		want = append(want, [3]string{e.Type, e.Name, e.RV})
	}
	for _, f := range failures(rec, "list") {
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, fx, f.cassette(rec), f.serveArgs()...)
			ctx, cancel := context.WithTimeout(t.Context(), 40*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, python, "testdata/pywatch.py", s.Kubeconfig, rec.Namespace, "1")
			out, err := cmd.Output()
			if err != nil {
				var stderr []byte
				if ee, ok := err.(*exec.ExitError); ok {
					stderr = ee.Stderr
				}
				t.Fatalf("pywatch.py: %v\n%s\nkwrec serve stderr:\n%s", err, lastLines(string(stderr), 6), s.Stop(t))
			}
			var got pyResult
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatalf("pywatch.py printed %q: %v", out, err)
			}
			if d := cmp.Diff(rec.Final, got.Final); d != "" {
				t.Errorf("final state (-recorded +replayed):\n%s", d)
			}
			if d := cmp.Diff(want, got.Events); d != "" {
				t.Errorf("watch events (-recorded +replayed):\n%s", d)
			}
			if n := countInt(got.Errors, 410); n != f.want410 {
				t.Errorf("python met 410 %d times, want %d (errors %v)", n, f.want410, got.Errors)
			}
			if n := countInt(got.Errors, 503); n != f.want503 {
				t.Errorf("python met 503 %d times, want %d (errors %v)", n, f.want503, got.Errors)
			}
			if len(got.Errors) != f.want410+f.want503 {
				t.Errorf("python met errors %v, want only the injected one", got.Errors)
			}
		})
	}
}

func countInt(xs []int, x int) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
