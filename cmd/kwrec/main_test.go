package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// The CLI's behaviour is specified by the scripts in testdata/script, run
// in-process. `go test ./cmd/kwrec -update` rewrites their golden output.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"kwrec": func() { os.Exit(run(os.Args[1:], streams{os.Stdin, os.Stdout, os.Stderr})) },
	})
}

// update is -update: `go test ./cmd/kwrec -update` rewrites the golden
// files the scripts cmp against (testdata/script and, with a control plane,
// testdata/live) instead of failing on a difference.
var update = flag.Bool("update", false, "rewrite the scripts' golden output instead of failing on a difference")

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: *update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EDITOR", "false")
			env.Setenv("PYTHON", pythonKubernetes())
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "pykube" { // $PYTHON can import kubernetes
				return pythonKubernetes() != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"waitfile": waitFile,
		},
	})
}

// pythonKubernetes returns a Python interpreter that can import the
// kubernetes package (python3-kubernetes), "" if there is none: the
// system's /usr/bin/python3 first, since a python3 found first on PATH
// may be a pyenv shim without it.
var pythonKubernetes = sync.OnceValue(func() string {
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import kubernetes").Run() == nil {
			return p
		}
	}
	return ""
})

// waitFile is the scripts' "waitfile FILE": it waits, up to a minute,
// until FILE holds something, such as the kubeconfig a background kwrec
// serve writes once it is ready.
func waitFile(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	path := ts.MkAbs(args[0])
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if st, err := os.Stat(path); err == nil && st.Size() > 0 {
			return
		}
	}
	ts.Fatalf("%s: still empty after a minute", args[0])
}
