package main

import (
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/replay"
)

func newLintCmd() *cobra.Command {
	var f lintFlags
	cmd := &cobra.Command{
		Use:   "lint FILE...",
		Short: "Validate cassettes",
		Long: `Validate cassettes: every line of the text form, the order of interactions,
frames and ends, and the replay edits stored in the header. Problems are
printed as FILE:LINE: MESSAGE and make the exit status 1. A cassette cut
anywhere (a recorder killed mid-way) is reported as cut with the byte offset
of the cut: FILE:LINE: byte N: MESSAGE, or FILE: byte N: MESSAGE for the
compressed form, whose lines are not in the file; so is corrupt compressed
data.

--fix repairs a truncated cassette: it keeps everything readable before the
cut, ends the interactions left open as "stopped" and rewrites the file
atomically, in the form it was found: compressed if it was, with object
deltas if it had some (as kwrec compact writes them). A cassette cut
before its header line is whole (an empty file, a cut inside the zstd
magic or the header line) holds nothing to keep: --fix says so and leaves
the file as it is.

A rotated recording (kwrec record --max-size) is linted as one, its parts
named by a pattern ('rec-*.kwrec.zst'), its first part or all its parts;
--fix repairs one cut in its last part by rewriting that part alone.
A recording kept with kwrec record --keep (its oldest part rebased) is
also checked to be whole: the parts consecutive from the oldest kept,
which holds a list of every collection the parts watch, and every watch
starting from a resourceVersion the lines before it reached, so that no
change between parts is lost; the error names the part and what is
missing.`,
		Example: `  kwrec lint testdata/*.kwrec*
  kwrec lint --fix crashed.kwrec.zst
  kwrec lint 'rec-*.kwrec.zst'`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return lintRun(cmd, args, f.fix)
		},
	}
	f.register(cmd)
	return cmd
}

// lintFlags holds the flags of kwrec lint.
type lintFlags struct {
	fix bool
}

// register adds the flags of kwrec lint to cmd, bound to f.
func (f *lintFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.fix, "fix", false, "repair a truncated cassette in place, keeping everything before the cut")
}

// lintGroups groups the cassettes named by args: each one alone, or all
// as one when they are the parts of one rotated recording, as a shell
// expands an unquoted pattern.
func lintGroups(args []string) [][]string {
	groups := make([][]string, len(args))
	for i, a := range args {
		groups[i] = []string{a}
	}
	if parts, err := cassettes.Parts(args...); len(args) > 1 && err == nil && len(parts) == len(args) {
		groups = [][]string{args}
	}
	return groups
}

// lintRun runs kwrec lint on the cassettes named by args, repairing them
// when fix is true: it prints a line for each with a problem or repaired,
// and fails when any problem is left.
func lintRun(cmd *cobra.Command, args []string, fix bool) error {
	groups := lintGroups(args)
	bad := 0
	for _, names := range groups {
		msg, repaired := lintRecording(names, fix)
		if msg != "" {
			fmt.Fprintln(cmd.OutOrStdout(), msg)
			if !repaired {
				bad++
			}
		}
	}
	if bad > 0 {
		return &exitError{code: 1, msg: fmt.Sprintf("%d of %d cassette(s) have problems", bad, len(groups))}
	}
	return nil
}

// lintFile returns "" for a valid cassette, else one line describing the
// first problem (or the repair done).
func lintFile(path string, fix bool) string {
	msg, _ := lintRecording([]string{path}, fix)
	return msg
}

// lintRecording is lintFile of a recording named by names: a file, a
// pattern, or a rotated recording's parts. repaired says msg tells of a
// repair (with fix), not of a problem left.
func lintRecording(names []string, fix bool) (msg string, repaired bool) {
	path := names[0]
	parts, err := cassettes.Parts(names...)
	if err != nil {
		return err.Error(), false
	}
	r, err := cassettes.Open(parts...)
	if err != nil {
		return err.Error(), false
	}
	for _, e := range r.Header().Edits {
		if _, err := replay.ParseEdit(e); err != nil {
			r.Close()
			return fmt.Sprintf("%s:1: header edit %q: %v", path, e, err), false
		}
	}
	for {
		_, err = r.Next()
		if err != nil {
			break
		}
	}
	r.Close()
	if err == io.EOF {
		return lintKept(parts), false
	}
	if !fix || !errors.Is(err, cassettes.ErrTruncated) {
		return err.Error(), false
	}
	kept, ended, rerr := cassettes.Repair(parts...)
	if rerr != nil {
		return fmt.Sprintf("%v; repair failed: %v", err, rerr), false
	}
	if len(parts) > 1 {
		return fmt.Sprintf("%s: repaired its last part %s: kept %d line(s) of it, ended %d left open as stopped (%v)", path, parts[len(parts)-1], kept, len(ended), err), true
	}
	return fmt.Sprintf("%s: repaired: kept %d line(s), ended %d left open as stopped (%v)", path, kept, len(ended), err), true
}

// lintKept checks that a recording whose oldest part is rebased (kwrec
// record --keep) replays from it: "" when it does or is not kept.
func lintKept(parts []string) string {
	h, err := cassettes.ReadHeader(parts[0])
	if err != nil || !h.Rebased {
		return ""
	}
	rec, err := cut.Read(parts...)
	if err == nil {
		err = rec.CheckWhole()
	}
	if err != nil {
		return err.Error()
	}
	return ""
}
