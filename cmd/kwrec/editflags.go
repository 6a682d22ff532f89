package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/replay"
)

// editFlags are the flags that inject failures and warp time, shared by
// replay, serve and inject. Each takes the part of an edit after "KIND:"
// (see `kwrec inject --help`) and may be repeated.
type editFlags struct {
	raw   map[replay.EditKind]*[]string
	edits []string
}

var editFlagKinds = []struct {
	kind    replay.EditKind
	flag    string
	example string
	help    string
}{
	{replay.EditError, "error", "request=3,status=503,retry-after=1", "answer a request with an HTTP error"},
	{replay.EditWatchError, "watch-error", "request=2,after=1,code=410", "send a watch ERROR event after frame K, then end the stream"},
	{replay.EditReset, "reset", "request=2,after=3", "reset the connection after frame K"},
	{replay.EditTruncate, "truncate", "request=2,after=3", "end the stream cleanly after frame K"},
	{replay.EditWarp, "warp", "scale=10 or cap=100ms", "time-warp: scale speed or cap gaps"},
	{replay.EditPause, "pause", "request=2,before=3,for=5s", "pause before frame K"},
	{replay.EditDrop, "drop", "request=2,frame=3", "drop frame K"},
	{replay.EditDup, "dup", "request=2,frame=3", "send frame K twice"},
	{replay.EditExpireContinue, "expire-continue", "resource=configmaps,nth=1", "answer the Nth continued page of a paged list with the server's 410 for a compacted token"},
}

func (e *editFlags) add(cmd *cobra.Command) {
	e.raw = map[replay.EditKind]*[]string{}
	for _, k := range editFlagKinds {
		v := new([]string)
		e.raw[k.kind] = v
		cmd.Flags().StringArrayVar(v, k.flag, nil, fmt.Sprintf("%s, e.g. --%s %s", k.help, k.flag, k.example))
	}
	cmd.Flags().StringArrayVar(&e.edits, "edit", nil, "any edit in full KIND:KEY=VALUE,... syntax, e.g. --edit watch-error:request=2,after=1,code=410")
}

// parse returns the edits given, in flag order per kind.
func (e *editFlags) parse() ([]replay.Edit, error) {
	var out []replay.Edit
	for _, k := range editFlagKinds {
		for _, v := range *e.raw[k.kind] {
			ed, err := replay.ParseEdit(string(k.kind) + ":" + v)
			if err != nil {
				return nil, fmt.Errorf("--%s %s: %w", k.flag, v, err)
			}
			out = append(out, ed)
		}
	}
	for _, v := range e.edits {
		ed, err := replay.ParseEdit(v)
		if err != nil {
			return nil, fmt.Errorf("--edit %s: %w", v, err)
		}
		out = append(out, ed)
	}
	return out, nil
}
