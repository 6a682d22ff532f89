package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

func newInjectCmd() *cobra.Command {
	var ef editFlags
	var out string
	cmd := &cobra.Command{
		Use:   "inject FILE -o OUT",
		Short: "Store failure and time-warp edits in a new cassette",
		Long: `Store edits in a new cassette's header, so every replay of OUT, by any
client, replays the same failure. The recorded frames are untouched (kwrec
show lists the edits); they are checked against the cassette first.

Edit syntax is KIND:KEY=VALUE,...; the flags take the part after KIND:.
request=N names interaction N (the #N of kwrec show); with match=S it names
the Nth interaction whose path contains S. after=K counts frames served
before the edit (0: right after the response headers).

A rotated recording (kwrec record --max-size) is read as one, by a quoted
pattern ('rec-*.kwrec.zst') or its first part; OUT is one file.`,
		Example: `  kwrec inject cm.kwrec.zst -o cm-410.kwrec.zst --watch-error request=2,after=1,code=410
  kwrec inject cm.kwrec.zst -o flaky.kwrec.zst --error request=1,status=503,retry-after=1 --reset request=2,after=3
  kwrec inject cm.kwrec.zst -o fast.kwrec.zst --warp scale=10 --warp cap=100ms`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return errors.New("inject needs -o OUT")
			}
			edits, err := ef.parse()
			if err != nil {
				return err
			}
			if len(edits) == 0 {
				return errors.New("inject needs at least one edit flag (see --help)")
			}
			c, err := cassettes.Load(args[0])
			if err != nil {
				return err
			}
			for _, e := range edits {
				c.Header.Edits = append(c.Header.Edits, e.String())
			}
			if _, err := replay.New(c, replay.Options{}); err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err := cassettes.Save(out, c); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: wrote %s with %d edit(s): %v\n", out, len(c.Header.Edits), c.Header.Edits)
			return nil
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the cassette to write (.zst: compressed)")
	ef.add(cmd)
	return cmd
}
