package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/explore"
	"github.com/kwrec/kwrec/replay"
)

// exploreFlags are explore's flags.
type exploreFlags struct {
	parallel int
	kinds    string
	max      int
	seed     uint64
	shard    string
	out      string
	check    string
	idle     time.Duration
	settle   time.Duration
}

// explorePace is the Settle of every run of kwrec explore
// ([replay.Options.Settle]): each recorded change is sent once the
// command has made no request for this long, so that it reacts to each
// change before the next comes, as replaytest.Controller paces Go
// controllers.
const explorePace = 200 * time.Millisecond

// stopGrace is how long kwrec explore waits for COMMAND to exit after
// SIGTERM before it sends SIGKILL.
const stopGrace = 5 * time.Second

func newExploreCmd() *cobra.Command {
	var f exploreFlags
	cmd := &cobra.Command{
		Use:   "explore FILE -- COMMAND [ARGS...]",
		Short: "Run a controller in any language once per fault point of a recording, and report each it does not survive",
		Long: `Explore runs COMMAND (a controller, in any language) against a replay of FILE
once without faults, the reference, and then once per fault point: a 410,
reset or clean end of its watch after each recorded change, an error on each
list, get, watch and write it made in the reference run (the kinds of
replaytest.Explore). A point fails when its run does not end in the
reference run's world (server-set fields aside), when it deletes an object
the reference run never deleted (its data was lost, even if created again),
when COMMAND exits, when the run does not settle, or when --check fails.

Each run serves FILE on 127.0.0.1 with --writes overlay on the consumption
clock, the recorded changes held, and starts COMMAND with KUBECONFIG set to
it (its output goes to a log, kept in --out). Once COMMAND has connected
and has been idle for --idle (no request in flight but its open watches;
plus the Retry-After of a point that answers 429, which a client waits out),
the recording plays, each change once COMMAND has been idle for 200ms.
Once the recording has played and COMMAND has been idle for --idle again,
--check runs, COMMAND is stopped (SIGTERM, then SIGKILL after 5s) and the
world compared. A run that does not get there within --settle of its
start, or of the recording's end, fails with "did not settle".

It prints a line for each failing point, and a summary; it exits 1 when a
point failed. With --out, each failing point is written there as a copy of
the recording with the point's edit in its header, to replay with kwrec
serve or kwrec show.`,
		Example: `  kwrec explore mirror.kwrec.zst -- python3 mirror.py
  kwrec explore mirror.kwrec.zst --kinds 410,list500 --parallel 2 --out failed -- ./bin/manager
  kwrec explore mirror.kwrec.zst --max 20 --seed 7 --shard 1/4 --check 'kubectl get cm mirror' -- ./bin/manager`,
		Args: func(cmd *cobra.Command, args []string) error {
			if cmd.ArgsLenAtDash() != 1 || len(args) < 2 {
				return errors.New("explore takes a recording, then -- and the command to run: kwrec explore FILE -- COMMAND [ARGS...]")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return exploreRun(cmd, &f, args[0], args[1:])
		},
	}
	fs := cmd.Flags()
	fs.IntVar(&f.parallel, "parallel", 1, "points run at once, each with its own server and COMMAND")
	fs.StringVar(&f.kinds, "kinds", "", "comma-separated fault kinds to inject (default all): "+strings.Join(kindNames(), ","))
	fs.IntVar(&f.max, "max", 0, "run a sample of this many points, drawn with --seed (0: every point)")
	fs.Uint64Var(&f.seed, "seed", 0, "the seed of the --max sample")
	fs.StringVar(&f.shard, "shard", "", "i/n: run the points whose rank is i modulo n, one shard of a CI job matrix")
	fs.StringVar(&f.out, "out", "", "write each failing point here as a copy of the recording with its edit in the header, and every run's log")
	fs.StringVar(&f.check, "check", "", "a shell command run with KUBECONFIG against the world at the end of each run; a non-zero exit fails the point")
	fs.DurationVar(&f.idle, "idle", time.Second, "how long COMMAND must make no request (its watches open) to count as idle, wall clock")
	fs.DurationVar(&f.settle, "settle", time.Minute, "how long a run may take to go idle, at its start and once the recording has played, wall clock")
	return cmd
}

// kindNames are the fault kinds' names.
func kindNames() []string {
	var out []string
	for _, k := range explore.AllFaults {
		out = append(out, string(k))
	}
	return out
}

// selection checks f, refusing flags no exploration can take before
// anything runs, and returns the points it selects.
func (f *exploreFlags) selection() (explore.Select, error) {
	kinds, err := explore.ParseKinds(f.kinds)
	if err != nil {
		return explore.Select{}, fmt.Errorf("--kinds: %w", err)
	}
	switch {
	case f.parallel < 1:
		return explore.Select{}, fmt.Errorf("--parallel %d: want 1 or more", f.parallel)
	case f.max < 0:
		return explore.Select{}, fmt.Errorf("--max %d: want 0 (every point) or more", f.max)
	case f.idle <= 0:
		return explore.Select{}, fmt.Errorf("--idle %v: want a duration above 0, such as 1s", f.idle)
	case f.settle <= 0:
		return explore.Select{}, fmt.Errorf("--settle %v: want a duration above 0, such as 60s", f.settle)
	}
	if _, err := explore.Shard(nil, f.shard); err != nil {
		return explore.Select{}, fmt.Errorf("--shard %q: %w", f.shard, err)
	}
	return explore.Select{Kinds: kinds, Max: f.max, Seed: f.seed}, nil
}

// exploreRun is explore's RunE: the reference run, then every point.
func exploreRun(cmd *cobra.Command, f *exploreFlags, name string, command []string) error {
	sel, err := f.selection()
	if err != nil {
		return err
	}
	head, err := cassettes.Open(name) // a missing file, not a cassette: said at once
	if err != nil {
		return err
	}
	head.Close()
	h, err := replay.Load(name)
	if err != nil {
		return err
	}
	defer h.Close()
	x := &explorer{name: name, h: h, command: command, f: f, stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
	if x.logs, err = x.logDir(); err != nil {
		return err
	}
	if f.out == "" {
		defer os.RemoveAll(x.logs)
	}
	ctx := cmd.Context()
	ref := x.run(ctx, "reference", nil)
	if ref.failure != "" {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("the reference run (no fault) failed: %s; exploration needs a command that passes without faults first", ref.failure)
	}
	x.ref = ref
	points, _ := explore.Shard(explore.Points(ref.changes, ref.requests, sel), f.shard) // checked above
	failed, unfired, ran, elapsed := x.explore(ctx, points)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	slices.Sort(failed)
	fmt.Fprintf(x.stdout, "explored %d of %d points in %v (%.1f a second): %d failed %v",
		ran, len(points), elapsed.Round(time.Millisecond), float64(ran)/elapsed.Seconds(), len(failed), failed)
	if unfired > 0 {
		fmt.Fprintf(x.stdout, "; %d never fired", unfired)
	}
	fmt.Fprintln(x.stdout)
	if len(failed) > 0 {
		return &exitError{code: 1}
	}
	return nil
}

// explorer is what the runs of one kwrec explore share: the recording,
// the command and flags, and the reference run.
type explorer struct {
	name    string
	h       *replay.History
	command []string
	f       *exploreFlags
	logs    string // the directory of the runs' logs
	ref     outcome

	mu             sync.Mutex // guards the output and what is found
	stdout, stderr io.Writer
}

// logDir returns the directory the runs' logs go to: --out, else a new
// temporary one.
func (x *explorer) logDir() (string, error) {
	if x.f.out == "" {
		return os.MkdirTemp("", "kwrec-explore-")
	}
	return x.f.out, os.MkdirAll(x.f.out, 0o755)
}

// explore runs points, --parallel at a time, prints each that fails (and
// on stderr each that passed without its fault ever firing: the run did
// not reach it), and returns the names of those that failed, how many
// never fired, how many ran, and how long they took.
func (x *explorer) explore(ctx context.Context, points []explore.Point) (failed []string, unfired, ran int, elapsed time.Duration) {
	start := time.Now()
	next := make(chan explore.Point)
	var wg sync.WaitGroup
	for range x.f.parallel {
		wg.Go(func() {
			for p := range next {
				why, fired := x.point(ctx, p)
				x.mu.Lock()
				if ctx.Err() == nil {
					ran++
				}
				switch {
				case ctx.Err() != nil:
				case why != "":
					failed = append(failed, p.Name)
					fmt.Fprintf(x.stdout, "FAIL %s (%s): %s\n", p.Name, p.Edit, why)
				case !fired:
					unfired++
					fmt.Fprintf(x.stderr, "kwrec explore: %s never fired: the run did not reach that point\n", p.Name)
				}
				x.mu.Unlock()
			}
		})
	}
	for _, p := range points {
		if ctx.Err() != nil {
			break
		}
		next <- p
	}
	close(next)
	wg.Wait()
	return failed, unfired, ran, time.Since(start)
}

// point runs p and returns why it failed, "" if it passed, and whether
// its fault fired; a failing point's cassette is written to --out.
func (x *explorer) point(ctx context.Context, p explore.Point) (string, bool) {
	o := x.run(ctx, p.Name, &p.Edit)
	why := o.failure
	if why == "" {
		why = x.compare(o)
	}
	if why != "" && x.f.out != "" {
		if err := x.writeFailing(p); err != nil {
			why += fmt.Sprintf(" (and --out: %v)", err)
		}
	}
	return why, o.fired
}

// compare says how o's world differs from the reference run's, and what
// it deleted that the reference never did; "" if nothing.
func (x *explorer) compare(o outcome) string {
	var why []string
	if d := explore.Diff(x.ref.world, o.world); d != "" {
		why = append(why, "the world ends unlike the reference run's: the command did not converge:\n"+d)
	}
	for _, d := range o.deleted {
		if !slices.Contains(x.ref.deleted, d) {
			why = append(why, fmt.Sprintf("the command deleted %s, which the reference run never deleted: its data was lost for its users, even if it was created again later", d))
		}
	}
	return strings.Join(why, "; ")
}

// writeFailing writes the recording with p's edit in its header into
// --out.
func (x *explorer) writeFailing(p explore.Point) error {
	c, err := cassettes.Load(x.name)
	if err != nil {
		return err
	}
	c.Header.Edits = append(c.Header.Edits, p.Edit.String())
	if c.Header.Labels == nil {
		c.Header.Labels = map[string]string{}
	}
	c.Header.Labels["explored-by"] = "kwrec explore " + p.Name
	return cassettes.Save(filepath.Join(x.f.out, explore.FileName(p.Name)+".kwrec.zst"), c)
}
