package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/describe"
	"github.com/kwrec/kwrec/replay"
)

// timelineRow is one line of `kwrec show`, also its --json form.
type timelineRow struct {
	// Offset from the cassette start.
	Offset      time.Duration     `json:"-"`
	OffsetText  string            `json:"offset,omitempty"`
	Interaction int               `json:"interaction,omitempty"`
	Line        int               `json:"line,omitempty"`
	What        string            `json:"what"` // request, response, frame, end
	Method      string            `json:"method,omitempty"`
	URL         string            `json:"url,omitempty"`
	Status      int               `json:"status,omitempty"`
	ContentType string            `json:"contentType,omitempty"`
	Frame       *describe.Summary `json:"frame,omitempty"`
	Reason      string            `json:"reason,omitempty"`
	Error       string            `json:"error,omitempty"`
	Edit        string            `json:"edit,omitempty"`
	Where       string            `json:"where,omitempty"`
}

func (r timelineRow) text() string {
	head := fmt.Sprintf("%10s  #%-3d ", fmtOffset(r.Offset), r.Interaction)
	switch r.What {
	case "request":
		return head + r.Method + " " + r.URL
	case "response":
		ct := r.ContentType
		if ct != "" {
			ct = " " + ct
		}
		return head + fmt.Sprintf("→ %d%s", r.Status, ct)
	case "frame":
		return head + "  " + r.Frame.String()
	default:
		s := head + "end " + r.Reason
		if r.Error != "" {
			s += ": " + r.Error
		}
		return s
	}
}

func fmtOffset(d time.Duration) string {
	return "+" + d.Round(time.Microsecond).String()
}

func newShowCmd() *cobra.Command {
	var (
		asJSON bool
		edits  editFlags
	)
	cmd := &cobra.Command{
		Use:   "show FILE",
		Short: "Print a cassette as a timeline",
		Long: `Print a cassette as a timeline: each request, response, frame and end with
its offset from the cassette start; frames are summarised (watch event type,
object, resourceVersion; list size; Status code and reason), JSON or protobuf.
The cassette's edits, and those given as flags, are listed first with the
point each one sits at (an interaction and frame, a collection and
resourceVersion), so an edit that no client could reach shows before any
replay.`,
		Example: `  kwrec show cm.kwrec.zst
  kwrec show cm.kwrec.zst --watch-error request=2,after=1,code=410
  kwrec show cm.kwrec.zst --json | jq 'select(.frame.event == "ERROR")'
  kwrec show 'rec-*.kwrec.zst'   # the parts of kwrec record --max-size, as one`,
		Args: oneCassette,
		RunE: func(cmd *cobra.Command, args []string) error {
			es, err := edits.parse()
			if err != nil {
				return err
			}
			return show(cmd.OutOrStdout(), args[0], asJSON, es)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per timeline row")
	edits.add(cmd)
	return cmd
}

// editRows places the cassette's edits and extra on its timelines; nil
// when there are none. A cassette replay cannot open gets no rows: the
// timeline below reports what is wrong with it.
func editRows(path string, h cassettes.Header, extra []replay.Edit) ([]timelineRow, error) {
	if len(h.Edits)+len(extra) == 0 {
		return nil, nil
	}
	rp, err := replay.Open(path, replay.Options{Edits: extra})
	if errors.Is(err, replay.ErrBadEdit) {
		return nil, err
	}
	if err != nil {
		return nil, nil
	}
	defer rp.Close()
	var rows []timelineRow
	for _, e := range rp.Edits() {
		rows = append(rows, timelineRow{What: "edit", Edit: e.Edit.String(), Where: e.Where})
	}
	return rows, nil
}

func show(out io.Writer, path string, asJSON bool, extra []replay.Edit) error {
	r, err := cassettes.Open(path)
	if err != nil {
		return err
	}
	defer r.Close()
	h := r.Header()
	placed, err := editRows(path, h, extra)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(out)
	enc.SetEscapeHTML(false)
	if !asJSON {
		showHeader(out, path, h, placed == nil)
	}
	for _, row := range placed {
		if asJSON {
			if err := enc.Encode(row); err != nil {
				return err
			}
		} else {
			fmt.Fprintf(out, "edit %s at %s\n", row.Edit, row.Where)
		}
	}
	return showTimeline(out, enc, r, asJSON)
}

// showHeader prints the text form's lines about the cassette at path
// with header h: its format, when and from where it was recorded, its
// redactions, what was skipped, and its edits when unplaced says they
// are not listed with their points.
func showHeader(out io.Writer, path string, h cassettes.Header, unplaced bool) {
	fmt.Fprintf(out, "cassette %s: format %d, recorded %s", path, h.Version, h.RecordedAt.Format(time.RFC3339))
	if h.Server != "" {
		fmt.Fprintf(out, " from %s", h.Server)
	}
	fmt.Fprintln(out)
	if len(h.Redactions) > 0 {
		fmt.Fprintf(out, "redactions: %v\n", h.Redactions)
	}
	if len(h.Skipped) > 0 {
		fmt.Fprintf(out, "skipped: %s\n", strings.Join(h.Skipped, "; "))
	}
	if len(h.Edits) > 0 && unplaced {
		fmt.Fprintf(out, "edits: %v\n", h.Edits)
	}
}

// showTimes is when an interaction of a timeline started and when its
// response headers came, as offsets from the cassette start.
type showTimes struct{ start, headers time.Duration }

// showTimeline prints a timeline row for each entry r has left, as JSON
// with enc when asJSON says so, else as text to out.
func showTimeline(out io.Writer, enc *json.Encoder, r *cassettes.Reader, asJSON bool) error {
	ivs := map[int]*showTimes{}
	for {
		e, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		row := showRow(ivs, e)
		if asJSON {
			if err := enc.Encode(row); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(out, row.text())
		}
	}
}

// showRow returns the timeline row of entry e, keeping in ivs the times
// of the interactions it has seen start and not yet end.
func showRow(ivs map[int]*showTimes, e cassettes.Entry) timelineRow {
	row := timelineRow{Interaction: e.ID, Line: e.Line}
	switch {
	case e.Request != nil:
		ivs[e.ID] = &showTimes{start: e.At, headers: e.At}
		row.What, row.Offset, row.Method, row.URL = "request", e.At, e.Request.Method, e.Request.URL
	case e.Response != nil:
		t := ivs[e.ID]
		t.headers = t.start + e.Response.Latency
		row.What, row.Offset, row.Status, row.ContentType = "response", t.headers, e.Response.Status, e.Response.Header.Get("Content-Type")
	case e.Frame != nil:
		s := describe.Frame(e.Frame.Data)
		row.What, row.Offset, row.Frame = "frame", ivs[e.ID].headers+e.Frame.At, &s
	case e.End != nil:
		row.What, row.Offset, row.Reason, row.Error = "end", ivs[e.ID].headers+e.End.At, string(e.End.Reason), e.End.Error
		delete(ivs, e.ID)
	}
	row.OffsetText = row.Offset.String()
	return row
}

func newCatCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cat FILE",
		Short: "Print a cassette's text form, decompressed",
		Example: `  kwrec cat cm.kwrec.zst | less
  kwrec cat cm.kwrec.zst > cm.kwrec   # the same cassette, plain text`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return catFile(cmd.OutOrStdout(), args[0])
		},
	}
}

// catFile copies the text form of path to out without parsing it, so even
// a broken cassette can be looked at.
func catFile(out io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	p, err := cassettes.Plain(f)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer p.Close()
	if _, err := io.Copy(out, p); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("%s: %w (the output above is everything before the damage)", path, err)
	}
	return nil
}

func newTextconvCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "textconv FILE",
		Short: "Print a cassette's text form for git diff",
		Long: `Print a cassette's text form for git diff, so compressed cassettes diff as
text. Configure git once per repository:

  echo '*.kwrec.zst diff=kwrec' >> .gitattributes
  git config diff.kwrec.textconv "kwrec textconv"`,
		Example: `  git config diff.kwrec.textconv "kwrec textconv"`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return catFile(cmd.OutOrStdout(), args[0])
		},
	}
}
