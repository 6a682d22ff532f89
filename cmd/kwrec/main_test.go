package main

import (
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

var update = os.Getenv("KWREC_UPDATE_SCRIPTS") == "1"

func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: update,
		Setup: func(env *testscript.Env) error {
			env.Setenv("EDITOR", "false")
			return nil
		},
	})
}
