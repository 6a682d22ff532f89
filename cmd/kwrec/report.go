package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/report"
	"github.com/kwrec/kwrec/replay"
)

func newReportCmd() *cobra.Command {
	var (
		out   string
		edits editFlags
	)
	cmd := &cobra.Command{
		Use:   "report FILE -o REPORT.html",
		Short: "Write a cassette as an interactive HTML timeline",
		Long: `Write a cassette as one self-contained HTML page that opens offline: a
zoomable timeline with a lane per interaction, grouped by collection, each
frame a mark coloured by watch event type, each end with its reason; the
cassette's edits, and those given as flags, drawn where they sit (as kwrec
show places them). Hover a mark for its object and resourceVersion, click it
for the object's JSON and the diff against its previous version; pick an
object for its whole history across lists and watches. A rotated recording
is read as one, by a quoted pattern ('rec-*.kwrec.zst') or its first part.`,
		Example: `  kwrec report cm.kwrec.zst -o cm.html
  kwrec report cm.kwrec.zst -o cm.html --watch-error request=2,after=1,code=410`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if out == "" {
				return fmt.Errorf("-o is required: the HTML file to write, e.g. -o report.html")
			}
			es, err := edits.parse()
			if err != nil {
				return err
			}
			return writeReport(cmd.OutOrStdout(), args[0], out, es)
		},
	}
	cmd.Flags().StringVarP(&out, "output", "o", "", "the HTML file to write")
	edits.add(cmd)
	return cmd
}

func writeReport(stdout io.Writer, path, out string, es []replay.Edit) error {
	rep, err := report.Build(path, report.Options{Edits: es})
	if err != nil {
		return err
	}
	if err := cassettes.WriteAtomic(out, rep.WriteHTML); err != nil {
		return fmt.Errorf("-o %s: %w", out, err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d interactions, %d frames, %d edit(s)\n", out, len(rep.Lanes), len(rep.Marks.T), len(rep.Edits))
	return nil
}
