package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/internal/timepoint"
)

func newCutCmd() *cobra.Command {
	var f cutFlags
	cmd := &cobra.Command{
		Use:   "cut IN --from T1 --to T2 -o OUT",
		Short: "Write the window of a recording between two points as a cassette",
		Long: `Write the window of a recording between two points as a cassette that
starts with the state at the first: for every collection listed or watched
before it, a list of its objects then, as that collection's recorded list
request asked (path, query, Accept, JSON or protobuf; a paged list whole,
in one page), then every request, response and watch event up to the
second point, with the gaps between them as recorded. The start moves to
T1 (the header's recordedAt with it); watches open at T1 go on from the
lists' resourceVersion, those open at T2 end there as stopped. Discovery
(/api, /apis, /version, OpenAPI) is carried over, so kubectl works against
a replay of the cut.

A point T is a duration from the recording's start (55m, 1h30m), an RFC
3339 time (2026-12-01T07:55:00Z) or rv=RESOURCEVERSION, the point just
after the first watch event that recorded that resourceVersion (or after
the first list that did).
--from defaults to the start, --to to the end.

Replay edits stored in the header are kept when the point they name falls
in the window (their frame numbers and times moved with it); kwrec warns
on stderr of each one dropped. IN may be a rotated recording (kwrec record
--max-size), by a quoted pattern ('rec-*.kwrec.zst') or its first part.
OUT is compressed when it ends in .zst. The recording is read into
memory.

kwrec diff --from T1 --to T2 IN OUT compares the cut with the window of
the original: with times or resourceVersions as points it finds no
difference.`,
		Example: `  kwrec cut rec.kwrec.zst --from 55m --to 1h5m -o incident.kwrec.zst
  kwrec cut 'rec-*.kwrec.zst' --from 2026-12-01T07:55:00Z -o tail.kwrec.zst
  kwrec cut rec.kwrec.zst --from rv=12345 --to rv=13000 -o window.kwrec`,
		Args: oneCassette,
		RunE: func(cmd *cobra.Command, args []string) error {
			return cutRun(cmd, &f, args[0])
		},
	}
	f.register(cmd)
	return cmd
}

// cutFlags holds the flags of kwrec cut.
type cutFlags struct {
	from, to, out string
}

// register adds the flags of kwrec cut to cmd, bound to f.
func (f *cutFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.from, "from", "", "where the cut starts: a duration from the recording's start (55m), an RFC 3339 time, rv=RESOURCEVERSION or end (default: the start)")
	cmd.Flags().StringVar(&f.to, "to", "", "where the cut ends, as --from (default: the end)")
	cmd.Flags().StringVarP(&f.out, "output", "o", "", "the cassette to write (.zst: compressed)")
}

// validate checks that f names an output and returns the window's points
// --from and --to give.
func (f *cutFlags) validate() (p1, p2 timepoint.Point, err error) {
	if f.out == "" {
		return p1, p2, errors.New("cut needs -o OUT")
	}
	return parseWindow(f.from, f.to)
}

// cutRun runs kwrec cut on the recording in with flags f: it writes the
// window to f.out, warning on stderr of each header edit dropped.
func cutRun(cmd *cobra.Command, f *cutFlags, in string) error {
	p1, p2, err := f.validate()
	if err != nil {
		return err
	}
	rec, err := cut.Read(in)
	if err != nil {
		return err
	}
	res, err := cut.Cut(rec, p1, p2)
	if err != nil {
		return err
	}
	for _, e := range res.Dropped {
		fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: warning: header edit %q falls outside the window: dropped\n", e)
	}
	if err := res.Save(f.out); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: from resourceVersion %d, %d of %d header edit(s) kept\n", f.out, res.RV, len(res.Header.Edits), len(rec.Header.Edits))
	return nil
}

// parseWindow parses --from and --to, "" for the start and the end.
func parseWindow(from, to string) (p1, p2 timepoint.Point, err error) {
	if from != "" {
		if p1, err = timepoint.Parse(from); err != nil {
			return p1, p2, fmt.Errorf("--from: %v", err)
		}
	}
	if to != "" {
		if p2, err = timepoint.Parse(to); err != nil {
			return p1, p2, fmt.Errorf("--to: %v", err)
		}
	}
	return p1, p2, nil
}
