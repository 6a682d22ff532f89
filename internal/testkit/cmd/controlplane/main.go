// Command controlplane runs the test control plane (kube-apiserver and etcd
// built by `make controlplane`) until SIGINT or SIGTERM, for scripts such as
// `make demo`. It writes an admin kubeconfig to -kubeconfig-out and prints
// "ready" on stdout once the API server answers.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

func main() {
	// A FlagSet of its own: controller-runtime registers a global
	// -kubeconfig flag.
	fs := flag.NewFlagSet("controlplane", flag.ExitOnError)
	out := fs.String("kubeconfig-out", "", "write an admin kubeconfig here (required)")
	fs.Parse(os.Args[1:])
	if *out == "" {
		fmt.Fprintln(os.Stderr, "controlplane: -kubeconfig-out is required")
		os.Exit(2)
	}
	cp, err := controlplanetest.StartEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		os.Exit(1)
	}
	kc, err := os.ReadFile(cp.Kubeconfig)
	if err == nil {
		err = os.WriteFile(*out, kc, 0o600)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "controlplane:", err)
		cp.Stop()
		os.Exit(1)
	}
	fmt.Println("ready")
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	if err := cp.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "controlplane: stopping:", err)
		os.Exit(1)
	}
}
