package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
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
			"waitline":  waitLine,
			"waitfile":  waitFile,
			"newpart":   newPart,
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

// waitLine is the live scripts' "waitline FILE REGEXP": it waits, up to
// a minute, until FILE (the stderr of a background kwrec record, sent
// there by sh) holds a line matching REGEXP.
func waitLine(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitline FILE REGEXP")
	}
	re, err := regexp.Compile(args[1])
	ts.Check(err)
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(path)
		for _, l := range strings.Split(string(b), "\n") {
			if re.MatchString(l) {
				return
			}
		}
	}
	ts.Fatalf("%s: no line matching %s within a minute", args[0], args[1])
}

// partStarted is what kwrec record --keep says as each part starts.
var partStarted = regexp.MustCompile(`^kwrec: recording: part (\d+) started`)

// lastPart returns the newest part the recorder's stderr in path says
// started, 1 before any.
func lastPart(path string) int {
	b, _ := os.ReadFile(path)
	n := 1
	for _, l := range strings.Split(string(b), "\n") {
		if m := partStarted.FindStringSubmatch(l); m != nil {
			k, _ := strconv.Atoi(m[1])
			n = max(n, k)
		}
	}
	return n
}

// newPart is the live scripts' "newpart FILE COMMAND ARGS...": it runs
// COMMAND (a change to the cluster), then waits, up to a minute, until
// the recorder whose stderr is FILE says a part newer than the one it
// was writing before started: so the change is recorded in a part of
// its own, however loaded the machine is.
func newPart(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: newpart FILE COMMAND ARGS...")
	}
	path := ts.MkAbs(args[0])
	before := lastPart(path)
	ts.Check(ts.Exec(args[1], args[2:]...))
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if lastPart(path) > before {
			return
		}
	}
	ts.Fatalf("%s: no part after part %d started within a minute of %s", args[0], before, strings.Join(args[1:], " "))
}
