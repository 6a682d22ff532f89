package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/trace"
	"github.com/kwrec/kwrec/replay"
)

// formatChromeTrace is the only export format so far.
const formatChromeTrace = "chrome-trace"

func newExportCmd() *cobra.Command {
	var format, out string
	cmd := &cobra.Command{
		Use:   "export FILE",
		Short: "Export a cassette for other tools (a Chrome trace for Perfetto)",
		Long: `Export a cassette in another tool's format. The one format so far,
chrome-trace, is the Chrome trace event format that ui.perfetto.dev and
chrome://tracing open: a process per collection (1 for requests outside
collections), a track per interaction, a slice from each request to its end,
an instant per frame (watch event type, object, resourceVersion), an
events-per-second counter per collection, and an instant for each edit of
the header that names an interaction (request=N). A rotated recording is
read as one, by a quoted pattern ('rec-*.kwrec.zst') or its first part.`,
		Example: `  kwrec export --format chrome-trace cm.kwrec.zst -o cm.trace.json
  # then open cm.trace.json in https://ui.perfetto.dev`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != formatChromeTrace {
				return fmt.Errorf("unknown --format %q: the one export format is %s", format, formatChromeTrace)
			}
			t, err := exportTrace(args[0])
			if err != nil {
				return err
			}
			if out == "" || out == "-" {
				return t.Write(cmd.OutOrStdout())
			}
			return cassettes.WriteAtomic(out, func(w io.Writer) error { return t.Write(w) })
		},
	}
	cmd.Flags().StringVar(&format, "format", formatChromeTrace, "the output format: chrome-trace")
	cmd.Flags().StringVarP(&out, "output", "o", "", "the file to write (default: standard output)")
	return cmd
}

func exportTrace(path string) (*trace.Trace, error) {
	r, err := cassettes.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	marks, err := editMarks(r.Header().Edits)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return trace.Build(r, trace.Options{Marks: marks})
}

// editMarks places the header's edits that name a recorded interaction
// (request=N without match=) where they take effect. Edits anchored on a
// collection (resource=) fire on whichever watch crosses their point, so
// they have no one track; they stay listed in the trace's otherData.
func editMarks(edits []string) ([]trace.Mark, error) {
	var marks []trace.Mark
	for _, s := range edits {
		e, err := replay.ParseEdit(s)
		if err != nil {
			return nil, fmt.Errorf("header edit %q: %w", s, err)
		}
		if e.Request == 0 || e.Match != "" {
			continue
		}
		m := trace.Mark{Interaction: e.Request, Name: "edit: " + s}
		switch e.Kind {
		case replay.EditWatchError, replay.EditReset, replay.EditTruncate:
			m.After = e.After
		case replay.EditPause, replay.EditDrop, replay.EditDup:
			m.After = max(e.Frame-1, 0)
		}
		marks = append(marks, m)
	}
	return marks, nil
}
