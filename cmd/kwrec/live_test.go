package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/controlplanetest"
)

// TestLiveScripts runs testdata/live/*.txtar against a real control plane:
// kwrec record and record --proxy, driven by kubectl. $KUBECONFIG points at
// the control plane.
func TestLiveScripts(t *testing.T) {
	if _, err := exec.LookPath("kubectl"); err != nil {
		t.Skip("kubectl is not on PATH")
	}
	cp := controlplanetest.Start(t)
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/live",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("KUBECONFIG", cp.Kubeconfig)
			env.Setenv("NS", env.WorkDir[len(env.WorkDir)-8:])
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitwatch": waitWatch,
		},
	})
}

// waitWatch is the live scripts' "waitwatch FILE": it waits, up to a
// minute, until the cassette a background kwrec record writes to FILE
// holds the response head of a watch, so that the changes a script makes
// next happen while the watch is open however loaded the machine is. The
// recorder flushes every second; the file is read as far as it goes.
func waitWatch(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitwatch FILE")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if watchOpen(path) {
			return
		}
	}
	ts.Fatalf("%s: no watch response recorded within a minute", args[0])
}

// watchOpen reports whether the (possibly still growing) cassette at path
// holds the response line of a watch request.
func watchOpen(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	r, err := cassettes.NewReader(f, path)
	if err != nil {
		return false
	}
	watches := map[int]bool{}
	for {
		e, err := r.Next()
		switch {
		case err != nil:
			return false
		case e.Request != nil && strings.Contains(e.Request.URL, "watch=true"):
			watches[e.ID] = true
		case e.Response != nil && watches[e.ID]:
			return true
		}
	}
}
