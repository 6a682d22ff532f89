package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
)

// form is a cassette file form.
type form string

const (
	formZstd form = "zst"
	formText form = "text"
	formVCR  form = "vcr"
)

func formOf(path string) form {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".zst":
		return formZstd
	case ".yaml", ".yml":
		return formVCR
	}
	return formText
}

func parseForm(s string) (form, error) {
	switch form(s) {
	case formZstd, formText, formVCR:
		return form(s), nil
	}
	return "", fmt.Errorf("unknown form %q; use zst, text or vcr", s)
}

// convertFlags are convert's flags.
type convertFlags struct {
	from, to    string
	skipStreams bool
}

func newConvertCmd() *cobra.Command {
	var f convertFlags
	cmd := &cobra.Command{
		Use:   "convert IN OUT",
		Short: "Convert a cassette between compressed, plain text and go-vcr YAML",
		Long: `Convert a cassette between the compressed form (.zst), the plain text form
(anything else) and go-vcr v3 YAML (.yaml, .yml), chosen by extension or by
--from/--to.

Export to go-vcr loses frame boundaries, timing and the header, and cannot
hold watch streams at all: converting a cassette with streams fails unless
--skip-streams leaves them out (they are listed).

A rotated recording (kwrec record --max-size) is read as one, by a quoted
pattern ('rec-*.kwrec.zst') or its first part, and written as one file.`,
		Example: `  kwrec convert cm.kwrec.zst cm.kwrec
  kwrec convert old-vcr.yaml new.kwrec.zst
  kwrec convert --skip-streams cm.kwrec.zst for-go-vcr.yaml`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return convertRun(cmd, &f, args[0], args[1])
		},
	}
	f.register(cmd)
	return cmd
}

// register adds convert's flags to cmd.
func (f *convertFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.from, "from", "", "input form: zst, text or vcr (default: by extension)")
	cmd.Flags().StringVar(&f.to, "to", "", "output form: zst, text or vcr (default: by extension)")
	cmd.Flags().BoolVar(&f.skipStreams, "skip-streams", false, "leave out watch streams when writing go-vcr YAML")
}

// forms returns the forms of in and out: --from and --to, or else as
// their extensions say.
func (f *convertFlags) forms(in, out string) (form, form, error) {
	fi, fo := formOf(in), formOf(out)
	var err error
	if f.from != "" {
		if fi, err = parseForm(f.from); err != nil {
			return "", "", err
		}
	}
	if f.to != "" {
		if fo, err = parseForm(f.to); err != nil {
			return "", "", err
		}
	}
	return fi, fo, nil
}

// convertRun is convert's RunE: it reads the cassette in and writes it to
// out, each in the form f says.
func convertRun(cmd *cobra.Command, f *convertFlags, in, out string) error {
	fi, fo, err := f.forms(in, out)
	if err != nil {
		return err
	}
	c, err := convertLoad(in, fi)
	if err != nil {
		return err
	}
	switch fo {
	case formVCR:
		var buf bytes.Buffer
		rep, err := cassettes.ExportVCR(&buf, c, cassettes.ExportOptions{SkipStreams: f.skipStreams})
		if err != nil {
			return err
		}
		if err := writeFileAtomic(out, buf.Bytes()); err != nil {
			return err
		}
		if len(rep.Skipped) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: left out %d streaming interaction(s) go-vcr cannot hold: %v\n", len(rep.Skipped), rep.Skipped)
		}
		return nil
	default:
		var buf bytes.Buffer
		if err := cassettes.Write(&buf, c, fo == formZstd); err != nil {
			return err
		}
		return writeFileAtomic(out, buf.Bytes())
	}
}

// convertLoad reads the cassette in, of form fi.
func convertLoad(in string, fi form) (*cassettes.Cassette, error) {
	if fi != formVCR {
		return cassettes.Load(in)
	}
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	c, err := cassettes.ImportVCR(f, in)
	f.Close()
	return c, err
}

// writeFileAtomic writes data to path atomically.
func writeFileAtomic(path string, data []byte) error {
	return cassettes.WriteAtomic(path, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}
