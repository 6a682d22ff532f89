package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// kubectl is the kubectl the tests run.
const kubectl = "/usr/bin/kubectl"

// TestLiveKubectlGetWatch runs `kubectl get configmaps -w
// --output-watch-events -o json` through kwrec serve under each failure.
//
// What kubectl does, measured: it lists, prints every item as an ADDED
// event, watches from the list's resourceVersion (no bookmarks, no
// timeout) and prints each event. A watch ERROR event is printed like any
// other ({"type":"ERROR","object":{"kind":"Status",...,"code":410}}); when
// the server then ends the stream, as the API server does after an ERROR,
// kubectl exits 0. It does not re-list. A 503 with Retry-After on the list
// is retried inside client-go (-v=6 logs it); without Retry-After kubectl
// would fail, so the 503 edit here carries retry-after=1.
func TestLiveKubectlGetWatch(t *testing.T) {
	fx := fixture(t)
	rec := fx.json
	var initial []event
	for _, name := range sortedKeys(rec.Initial) {
		initial = append(initial, event{"ADDED", name, rec.Initial[name]})
	}
	expired := event{"ERROR", "", "410"}
	for _, f := range failures(rec, "list") {
		want := append(append([]event(nil), initial...), rec.Events...)
		if f.want410 > 0 {
			want = append(append([]event(nil), initial...), rec.Events[0], expired)
		}
		if f.want503 > 0 {
			f.edit += ",retry-after=1"
		}
		t.Run(f.name, func(t *testing.T) {
			t.Parallel()
			s := serve(t, fx, f.cassette(rec), f.serveArgs()...)
			home := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, kubectl, "--kubeconfig", s.Kubeconfig, "--cache-dir", home+"/cache",
				"get", "configmaps", "-n", rec.Namespace, "-w", "--output-watch-events", "-o", "json", "-v=6")
			cmd.Env = append(cmd.Environ(), "HOME="+home)
			got, exited, stderr := runWatching(t, cmd, len(want))
			if f.want410 > 0 && !exited {
				t.Errorf("kubectl still ran after the 410; it exits when the server ends the stream after an ERROR event")
			}
			if d := cmp.Diff(want, initialSortedEvents(got, len(initial))); d != "" {
				t.Errorf("kubectl's events (-want +got):\n%s\nkubectl stderr:\n%s", d, lastLines(stderr, 8))
			}
			if n := strings.Count(stderr, " 503 Service Unavailable"); n != f.want503 {
				t.Errorf("kubectl met 503 %d times, want %d; stderr:\n%s", n, f.want503, lastLines(stderr, 8))
			}
		})
	}
}

// initialSortedEvents sorts the first n events by name: kubectl prints the
// listed items in the list's order.
func initialSortedEvents(es []event, n int) []event {
	n = min(n, len(es))
	out := append([]event(nil), es...)
	head := out[:n]
	for i := range head {
		for j := i + 1; j < len(head); j++ {
			if head[j].Name < head[i].Name {
				head[i], head[j] = head[j], head[i]
			}
		}
	}
	return out
}

// runWatching runs cmd, a kubectl printing watch events as a JSON stream,
// until it exits, or has printed at least n events and then nothing for a
// second (then it is stopped), or its context ends. It returns the events
// (an ERROR event as {ERROR, "", code}), whether kubectl exited by itself
// (with status 0; another status fails t), and its stderr.
func runWatching(t *testing.T, cmd *exec.Cmd, n int) (events []event, exited bool, stderr string) {
	t.Helper()
	var errBuf syncBuffer
	cmd.Stderr = &errBuf
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	changed := make(chan struct{}, 1)
	done := make(chan error, 1)
	go func() {
		dec := json.NewDecoder(stdout)
		for {
			var we struct {
				Type   string `json:"type"`
				Object struct {
					Metadata struct{ Name, ResourceVersion string } `json:"metadata"`
					Code     int                                    `json:"code"`
				} `json:"object"`
			}
			err := dec.Decode(&we)
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Errorf("kubectl's output: %v", err)
				}
				break
			}
			e := event{we.Type, we.Object.Metadata.Name, we.Object.Metadata.ResourceVersion}
			if we.Type == "ERROR" {
				e.RV = fmt.Sprint(we.Object.Code)
			}
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
			select {
			case changed <- struct{}{}:
			default:
			}
		}
		done <- cmd.Wait()
	}()
	quiet := time.NewTimer(time.Hour)
	for {
		select {
		case err := <-done:
			if err != nil && cmd.ProcessState != nil && !cmd.ProcessState.Exited() {
				// stopped by its context
				t.Errorf("kubectl stopped at its 15s deadline: %v", err)
			} else if err != nil {
				t.Errorf("kubectl exited with %v; stderr:\n%s", err, lastLines(errBuf.String(), 8))
			}
			mu.Lock()
			defer mu.Unlock()
			return events, cmd.ProcessState.Exited(), errBuf.String()
		case <-changed:
			mu.Lock()
			enough := len(events) >= n
			mu.Unlock()
			if enough {
				quiet.Reset(time.Second)
			}
		case <-quiet.C:
			cmd.Process.Kill()
			<-done
			mu.Lock()
			defer mu.Unlock()
			return events, false, errBuf.String()
		}
	}
}
