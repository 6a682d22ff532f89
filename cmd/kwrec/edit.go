package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

func newEditCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "edit FILE",
		Short: "Edit a cassette's text form in $EDITOR",
		Long: `Edit a cassette's text form in $EDITOR (else $VISUAL, else vi), decompressed
for you. On save the result is validated; on a problem kwrec shows it with
its line and asks whether to edit again or abort. The original file is
untouched until a valid result is written back (atomically, in the form it
was found: compressed again if it was, with object deltas if it had some, as
kwrec compact writes them). See the cassettes package documentation for the
format: insert an ERROR event line, delete frames, change a status or an
offset.`,
		Example: `  kwrec edit cm.kwrec.zst
  EDITOR=nano kwrec edit cm.kwrec`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return edit(cmd, args[0])
		},
	}
}

func editorCommand() string {
	for _, v := range []string{"EDITOR", "VISUAL"} {
		if e := strings.TrimSpace(os.Getenv(v)); e != "" {
			return e
		}
	}
	return "vi"
}

// validateText checks an edited text form the way lint does.
func validateText(name string, text []byte) error {
	c, err := cassettes.Read(bytes.NewReader(text), name)
	if err != nil {
		return err
	}
	for _, e := range c.Header.Edits {
		if _, err := replay.ParseEdit(e); err != nil {
			return fmt.Errorf("%s:1: header edit %q: %v", name, e, err)
		}
	}
	return nil
}

func edit(cmd *cobra.Command, path string) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	text, form, err := cassettes.ReadText(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("%s: %w; repair it first with kwrec lint --fix", path, err)
	}
	tmp, err := os.CreateTemp("", "kwrec-edit-*.kwrec")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(text); err != nil {
		tmp.Close()
		return err
	}
	tmp.Close()

	answers := bufio.NewReader(cmd.InOrStdin())
	for {
		ed := exec.CommandContext(cmd.Context(), "sh", "-c", editorCommand()+` "$1"`, "--", tmp.Name())
		ed.Stdin, ed.Stdout, ed.Stderr = os.Stdin, cmd.OutOrStdout(), cmd.ErrOrStderr()
		if err := ed.Run(); err != nil {
			return fmt.Errorf("editor %q failed: %v; %s unchanged", editorCommand(), err, path)
		}
		edited, err := os.ReadFile(tmp.Name())
		if err != nil {
			return err
		}
		if bytes.Equal(edited, text) {
			fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: no changes; %s unchanged\n", path)
			return nil
		}
		verr := validateText(path+" (edited)", edited)
		if verr == nil {
			return editSave(cmd, path, edited, form)
		}
		if err := editAgain(cmd, answers, verr, path); err != nil {
			return err
		}
	}
}

// editSave writes the valid edited text form back to path atomically, in
// the form the cassette was found, and says so on stderr.
func editSave(cmd *cobra.Command, path string, edited []byte, form cassettes.Form) error {
	out := edited
	if form.Compressed {
		// In the form it was found: with object deltas
		// if it had some.
		var z bytes.Buffer
		if err := cassettes.Compress(&z, bytes.NewReader(edited), form); err != nil {
			return err
		}
		out = z.Bytes()
	}
	if err := writeFileAtomic(path, out); err != nil {
		return err
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: %s saved\n", path)
	return nil
}

// editAgain shows the problem verr of the edited text form of path and
// asks on answers whether to edit again: nil to edit again, else the
// error that ends the edit (the abort, or a failure to read the answer).
func editAgain(cmd *cobra.Command, answers *bufio.Reader, verr error, path string) error {
	fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: %v\nEdit again? [Y/n] (n aborts; %s stays unchanged) ", verr, path)
	ans, rerr := answers.ReadString('\n')
	ans = strings.ToLower(strings.TrimSpace(ans))
	if ans == "n" || ans == "no" || (rerr != nil && ans == "") {
		if rerr != nil && !errors.Is(rerr, io.EOF) {
			return rerr
		}
		return &exitError{code: 1, msg: "edit aborted; " + path + " unchanged"}
	}
	return nil
}
