// Command kwrec records Kubernetes API traffic into cassettes and replays
// them: record from a live cluster (or through a recording proxy), replay a
// cassette through the watcher, serve it to any client, show it as a
// timeline, edit it, inject failures, lint and convert it.
//
// Run `kwrec --help` and `kwrec COMMAND --help` for each command's flags
// and examples.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/heapceiling"
)

// version is set with -ldflags "-X main.version=..." by release builds.
var version = "v0.1.0-dev"

// exitError carries a specific exit status (lint uses 1 for problems).
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// streams are the process's standard streams, injected for tests.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(cliGCPercent)
	}
	if !heapceiling.Chosen() {
		heapceiling.Start(cliCeiling())
	}
	os.Exit(run(os.Args[1:], streams{os.Stdin, os.Stdout, os.Stderr}))
}

// cliGCPercent is the garbage collector's GOGC in the kwrec binary, unless
// the GOGC variable says otherwise. kwrec's commands hold an index of a
// whole recording (a few dozen bytes a line, tens of MB for a million
// events) while they turn over every line's bytes, and at Go's default of
// 100 the heap grew to twice that index before each collection. At 50,
// on a 1,000,000-event recording, kwrec cut peaked at 179-183 MB RSS
// instead of 212-219 in the same time, and kwrec serve with a kubectl get
// at 135-144 MB instead of 167-168 (BENCHMARKS.md).
const cliGCPercent = 50

// cliCeiling returns the kwrec binary's heap ceiling (see package
// heapceiling), unless GOGC or GOMEMLIMIT is set: the soft memory limit
// follows the live heap plus 30% and 8 MiB, never below 96 MiB. GOGC 50
// lets a heap grow by half before each collection, the ceiling by 30%
// once it passes the floor. On a 1,000,000-event recording (BENCHMARKS.md,
// 3 runs alternated with the binary before) kwrec cut peaked at
// 141.6-145.7 MB RSS instead of 154.0-163.1, kwrec report of its
// 150k-event window at 143.0-147.6 instead of 185.3-190.7, in the same
// time; kwrec diff of the whole recording with itself, which keeps 190
// MB, at 264 MB instead of 331, 10% slower (a fixed 100 MiB limit took it
// 70% slower). A floor of 64 MiB and a margin of 20% took cut to 130-137
// MB but report from 13 to 17 s.
func cliCeiling() heapceiling.Options {
	return heapceiling.Options{Floor: 96 << 20, Margin: 0.3, Overhead: 8 << 20}
}

// run executes kwrec with args and returns the exit status. Errors are
// printed as one line, never with a stack trace or the usage text.
func run(args []string, s streams) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return runContext(ctx, args, s)
}

// runContext is run with ctx in place of Ctrl-C and SIGTERM: cancelling it
// stops a recording as they do (tests stop one once it is ready).
func runContext(ctx context.Context, args []string, s streams) int {
	root := newRoot(s)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(s.err, "kwrec: "+ee.msg)
		}
		return ee.code
	}
	fmt.Fprintln(s.err, "kwrec: "+strings.TrimSpace(err.Error()))
	return 1
}

func newRoot(s streams) *cobra.Command {
	root := &cobra.Command{
		Use:   "kwrec",
		Short: "Record and replay Kubernetes API traffic",
		Long: `kwrec records Kubernetes list and watch traffic into cassettes, frame by
frame with timing, and replays them deterministically, with edits that
inject failures.`,
		Example: `  kwrec record configmaps -n default --duration 30s -o cm.kwrec.zst
  kwrec show cm.kwrec.zst
  kwrec replay cm.kwrec.zst --watch-error request=2,after=1,code=410
  kwrec serve cm.kwrec.zst --kubeconfig-out /tmp/replay.kubeconfig`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(s.in)
	root.SetOut(s.out)
	root.SetErr(s.err)
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newVersionCmd(),
		newShowCmd(), newCatCmd(), newTextconvCmd(),
		newLintCmd(), newConvertCmd(), newEditCmd(),
		newRecordCmd(), newReplayCmd(), newServeCmd(), newCtlCmd(), newInjectCmd(), newCompactCmd(),
		newReportCmd(), newExploreCmd(),
		newExportCmd(), newDiffCmd(), newCutCmd(), newPushCmd(),
	)
	return root
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print kwrec's version and the cassette format version it reads",
		Example: "  kwrec version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "kwrec %s (cassette format %d)\n", version, cassettes.Version)
			return nil
		},
	}
}
