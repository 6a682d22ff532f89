package main

import (
	"flag"
	"os"
	"testing"

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
			return nil
		},
	})
}
