package main

import (
	"os/exec"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

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
	})
}
