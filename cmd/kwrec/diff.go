package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/diff"
)

// diffWindow compares the windows from..to of cassettes a and b.
func diffWindow(a, b, from, to string, opts diff.Options) (*diff.Report, error) {
	p1, p2, err := parseWindow(from, to)
	if err != nil {
		return nil, err
	}
	var srcs [2]diff.Opener
	for i, name := range []string{a, b} {
		rec, err := cut.Read(name)
		if err != nil {
			return nil, err
		}
		res, err := cut.Cut(rec, p1, p2)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		srcs[i] = func() (diff.Source, error) { return res.Entries(), nil }
	}
	r, err := diff.Compare(srcs[0], srcs[1], opts)
	if err != nil {
		return nil, err
	}
	r.A, r.B = a, b
	return r, nil
}

// Exit statuses of kwrec diff, as diff(1)'s.
const (
	diffSame    = 0
	diffDiffers = 1
	diffTrouble = 2
)

// troubled turns err into exit status 2, diff(1)'s "trouble".
func troubled(err error) error {
	if err == nil {
		return nil
	}
	return &exitError{code: diffTrouble, msg: err.Error()}
}

// diffFlags are diff's flags.
type diffFlags struct {
	asJSON           bool
	ignore, noIgnore []string
	from, to         string
}

func newDiffCmd() *cobra.Command {
	var f diffFlags
	cmd := &cobra.Command{
		Use:   "diff A B",
		Short: "Compare two cassettes object by object",
		Long: `Compare the objects two cassettes recorded, collection by collection: the
objects only one has, and for objects in both, the versions their histories
differ in, field by field (.data.k: "1" → "2").

Collections are request paths without the query and namespace
(/api/v1/namespaces/X/configmaps and /api/v1/configmaps are one collection,
objects keyed namespace/name). An object's history is every version seen in
lists, gets and watch events, in recording order, once per resourceVersion;
two histories are aligned by their longest common subsequence of equal
versions, and the unequal versions between matches are paired in order.
Protobuf objects are decoded to JSON, so a JSON and a protobuf recording of
one scenario compare equal. A rotated recording (kwrec record --max-size)
is read as one, by a quoted pattern ('rec-*.kwrec.zst') or its first part.

Ignored by default, as they differ between any two recordings:
  .metadata.resourceVersion .metadata.uid .metadata.generation
  .metadata.creationTimestamp .metadata.deletionTimestamp
  .metadata.managedFields .metadata.managedFields[].time
  .status.conditions[].last*Time
--ignore adds a path (and everything under it), --no-ignore takes a default
out. Paths are jq-like: .data.k, .items[0], .metadata.labels["a.b/c"]; []
matches any index, * and ? glob within a key.

--from and --to compare a window of both, each cut as kwrec cut cuts it
(the state at --from as lists, then everything up to --to; points as
kwrec cut takes them). A duration counts from each cassette's own start:
to compare a cut with its original, name the window by RFC 3339 times or
rv=RESOURCEVERSION, the same points in both.

Exit status, as diff(1)'s: 0 when equal, 1 when different, 2 on trouble.
--json prints one object: {"a","b","equal","ignored","collections":[
{"collection","onlyInA","onlyInB","changed":[{"key","versions":[{"a","b",
"aResourceVersion","bResourceVersion","aDeleted","bDeleted","fields":[
{"path","a","b"}]}]}]}]} (a and b of a version are 1-based positions in
each history, absent on the side that lacks it; a field's a or b is absent
when the field is).`,
		Example: `  kwrec diff before.kwrec.zst after.kwrec.zst
  kwrec diff --ignore .metadata.annotations json.kwrec proto.kwrec
  kwrec diff --json a.kwrec b.kwrec | jq '.collections[].changed[].key'
  git difftool --tool=kwrec HEAD~1 -- testdata/cm.kwrec.zst   # see docs/diff.md`,
		Args: func(cmd *cobra.Command, args []string) error {
			return troubled(cobra.ExactArgs(2)(cmd, args))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return diffRun(cmd, &f, args[0], args[1])
		},
	}
	cmd.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return troubled(err) })
	f.register(cmd)
	return cmd
}

// register adds diff's flags to cmd.
func (f *diffFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print the report as one JSON object (shape in --help)")
	cmd.Flags().StringArrayVar(&f.ignore, "ignore", nil, "also ignore this field path and everything under it (repeatable)")
	cmd.Flags().StringVar(&f.from, "from", "", "compare from this point on, as kwrec cut --from takes it (55m, an RFC 3339 time, rv=RESOURCEVERSION)")
	cmd.Flags().StringVar(&f.to, "to", "", "compare up to this point, as kwrec cut --to takes it")
	cmd.Flags().StringArrayVar(&f.noIgnore, "no-ignore", nil, "compare this default-ignored path after all (repeatable)")
}

// diffRun is diff's RunE: it compares the cassettes a and b (or the
// window --from..--to of both), prints the differences, and returns the
// exit status diff(1) would.
func diffRun(cmd *cobra.Command, f *diffFlags, a, b string) error {
	opts := diff.Options{Ignore: f.ignore, NoIgnore: f.noIgnore}
	var r *diff.Report
	var err error
	if f.from == "" && f.to == "" {
		r, err = diff.Files(a, b, opts)
	} else {
		r, err = diffWindow(a, b, f.from, f.to, opts)
	}
	if err != nil {
		return troubled(err)
	}
	out := cmd.OutOrStdout()
	if f.asJSON {
		enc := json.NewEncoder(out)
		enc.SetEscapeHTML(false)
		err = enc.Encode(r)
	} else if !r.Equal {
		err = r.WriteText(out)
	}
	if err != nil {
		return troubled(fmt.Errorf("writing the diff: %w", err))
	}
	if !r.Equal {
		return &exitError{code: diffDiffers} // no message: the diff says it
	}
	return nil
}
