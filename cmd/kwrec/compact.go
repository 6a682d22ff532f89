package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
)

func newCompactCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "compact IN OUT",
		Short: "Recompress a finished cassette for size",
		Long: `Recompress a finished cassette for size: the compressed form with each
watch event written as a delta against the previous version of its object,
or, for its first in a watch, against its item in the list before it (object
deltas, see the cassettes package doc), and klauspost's best zstd level with
a window as large as a segment, in 16 MiB segments. A watch of many objects
that each change a little at a time shrinks the most. The result is still
seekable (a seek comment per segment) and crash-safe, but every reader keeps
up to 64 MiB of frames that later deltas copy from (held packed, about a
quarter of that on Pods), and a kwrec from before
object deltas (or, for deltas against lists, from before December 2026)
cannot read it.

The cassette is read and written one line at a time, holding at most 64 MiB
of frames for deltas; a cut cassette is refused (run kwrec lint --fix first). IN may be a rotated
recording (kwrec record --max-size), by a quoted pattern or its first part:
its parts are joined into one file.`,
		Example: `  kwrec compact rec.kwrec.zst rec.compact.kwrec.zst
  kwrec compact 'rec-*.kwrec.zst' rec.kwrec.zst   # the parts, joined`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, out := args[0], args[1]
			if in == out {
				return errors.New("compact writes a new file: give OUT another name than IN")
			}
			before, after, err := compact(in, out)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s: %d bytes (%s was %d bytes, %.2fx)\n", out, after, in, before, float64(before)/float64(after))
			return nil
		},
	}
}

// compact copies the cassette in to out as a compact compressed cassette
// and returns both sizes.
func compact(in, out string) (before, after int64, err error) {
	parts, err := cassettes.Parts(in)
	if err != nil {
		return 0, 0, err
	}
	r, err := cassettes.Open(parts...)
	if err != nil {
		return 0, 0, err
	}
	defer r.Close()
	if before, err = filesSize(parts); err != nil {
		return 0, 0, err
	}
	h := r.Header()
	h.Part = 0 // one file
	err = cassettes.WriteAtomic(out, func(f io.Writer) error {
		w, err := cassettes.NewWriter(f, h, cassettes.WriterOptions{Compress: true, Compact: true})
		if err != nil {
			return err
		}
		ids := map[int]int{} // the input's interaction IDs to the output's
		for {
			e, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				w.Close()
				return err
			}
			switch {
			case e.Request != nil:
				ids[e.ID], err = w.Request(e.At, *e.Request)
			case e.Response != nil:
				err = w.Response(ids[e.ID], *e.Response)
			case e.Frame != nil:
				err = w.Frame(ids[e.ID], *e.Frame)
			case e.End != nil:
				err = w.End(ids[e.ID], *e.End)
			}
			if err != nil {
				w.Close()
				return err
			}
		}
		return w.Close()
	})
	if err != nil {
		return 0, 0, fmt.Errorf("compact %s: %w", in, err)
	}
	st2, err := os.Stat(out)
	if err != nil {
		return 0, 0, err
	}
	return before, st2.Size(), nil
}
