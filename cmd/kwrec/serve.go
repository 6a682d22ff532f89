package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timepoint"
	"github.com/kwrec/kwrec/replay"
)

// serveFlags are serve's flags.
type serveFlags struct {
	edits       editFlags
	listen      string
	kubeconfig  string
	speed       float64
	plainHTTP   bool
	allowRemote bool
	strict      bool
	writes      string
	writesOut   string
	noGC        bool
	crds        []string
	clock       string
	at          string
	paused      bool
	clockSet    bool // --clock was given
}

func newServeCmd() *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve FILE",
		Short: "Serve a cassette as a Kubernetes API server for any client",
		Long: `Serve a cassette as a Kubernetes API server on 127.0.0.1, so any client in
any language (kubectl, a controller binary, a Python client) replays it.
It serves HTTPS with a CA generated at start and requires a random bearer
token; --kubeconfig-out writes a kubeconfig with both as soon as the server
listens. The cassette is read meanwhile: requests that come first wait for
it, and a cassette found bad past its header (cut, corrupt) stops the
server with the error and removes the kubeconfig. Discovery is synthesized when the cassette did not record it. Edit
flags and --speed apply as for kwrec replay; an edit reaches every client
whose watch crosses its point, whatever its request, and when the server
stops it warns about every edit that never fired. It stops on Ctrl-C or
SIGTERM.

Every client shares one world clock (--clock world, the default): the
world starts at --at (a duration from the recording's start, an RFC 3339
time, rv=RESOURCEVERSION or end; default the start) and plays on at
--speed, so a kubectl get issued t seconds after the start shows the
cluster as it was at --at plus speed times t, with no watch open, and a
watch sends each recorded change once the world reaches it. --speed 0 and
--paused hold the world where it is; kwrec ctl plays, pauses, seeks and
sets the speed while it serves. --clock consumption is the clock of
controller tests (replaytest): "now" moves as each client consumes the
recording, a watch is paced from its own start, and --speed 0 serves every
recorded change as fast as the client reads.

With --writes overlay, a write that matches no recorded one (create,
update, patch including server-side apply, delete, deletecollection, the
status, scale, eviction, binding, token and approval subresources) is
applied to the recorded world as the API server would, and every watch,
list and get sees it from then on; --writes-out keeps those writes as a
cassette that kwrec show reads. What a write deletes takes its dependents
with it, as kube-controller-manager's garbage collector does on a cluster;
--no-garbage-collection leaves them, as envtest does. resourceVersions are then the recorded ones
times 1000, so that writes fit between recorded events. With the default
--writes strict, a write must match a recorded one; any other is answered
500 InternalError naming the nearest recorded requests.`,
		Example: `  kwrec serve cm.kwrec.zst --kubeconfig-out /tmp/replay.kubeconfig &
  kubectl --kubeconfig /tmp/replay.kubeconfig get configmaps -w
  kwrec serve cm.kwrec.zst --speed 1 --watch-error request=2,after=1,code=410 --kubeconfig-out k.yaml
  kwrec serve cm.kwrec.zst --edit watch-error:resource=configmaps,rv=201,code=410 --edit error:resource=configmaps,verb=list,nth=2,status=503
  kwrec serve cm.kwrec.zst --writes overlay --writes-out writes.kwrec --edit error:resource=configmaps,verb=update,nth=1,status=409
  kwrec serve 'rec-*.kwrec.zst' --speed 10   # the parts of kwrec record --max-size, as one`,
		Args: oneCassette,
		RunE: func(cmd *cobra.Command, args []string) error {
			return serveRun(cmd, &f, args[0])
		},
	}
	f.register(cmd)
	return cmd
}

// register adds serve's flags, the edit flags last, to cmd.
func (f *serveFlags) register(cmd *cobra.Command) {
	fs := cmd.Flags()
	fs.StringVar(&f.listen, "listen", "127.0.0.1:0", "address to listen on; loopback only unless --allow-remote")
	fs.BoolVar(&f.allowRemote, "allow-remote", false, "allow a --listen address other hosts can reach (dangerous)")
	fs.StringVar(&f.kubeconfig, "kubeconfig-out", "", "write a kubeconfig for the server here once it is ready")
	fs.Float64Var(&f.speed, "speed", 1, "replay speed: 1 real time, 10 ten times faster; 0 holds the world clock, or on the consumption clock serves as fast as the client reads")
	fs.StringVar(&f.clock, "clock", "world", "world: every client sees the cluster at the world's time, which plays at --speed from --at; consumption: now moves as each client consumes the recording (controller tests)")
	fs.StringVar(&f.at, "at", "", "with --clock world, where the world starts: a duration from the recording's start (14m), an RFC 3339 time, rv=RESOURCEVERSION or end")
	fs.BoolVar(&f.paused, "paused", false, "with --clock world, hold the world at --at until kwrec ctl play")
	fs.BoolVar(&f.plainHTTP, "plain-http", false, "serve plain HTTP without the token check")
	fs.BoolVar(&f.strict, "strict", false, "answer recorded requests only (no Kubernetes-aware recovery)")
	fs.StringVar(&f.writes, "writes", "strict", "what a write that matches no recorded one does: strict (fails) or overlay (is applied to the recorded world)")
	fs.StringVar(&f.writesOut, "writes-out", "", "with --writes overlay, keep the writes applied as a cassette here")
	fs.BoolVar(&f.noGC, "no-garbage-collection", false, "with --writes overlay, leave the dependents of deleted objects, as envtest does")
	fs.StringSliceVar(&f.crds, "crds", nil, "with --writes overlay, CustomResourceDefinition manifests (files, or directories such as config/crd/bases) created before anything is served, as envtest installs them; repeat or separate with commas")
	f.edits.add(cmd)
}

// options checks f and returns the replay options it asks for, but for
// the cassette of --writes-out, which serveRun creates.
func (f *serveFlags) options(stderr io.Writer) (replay.Options, error) {
	if err := checkSpeed(f.speed); err != nil {
		return replay.Options{}, err
	}
	es, err := f.edits.parse()
	if err != nil {
		return replay.Options{}, err
	}
	mode, err := replay.ParseWriteMode(f.writes)
	if err != nil {
		return replay.Options{}, err
	}
	if f.writesOut != "" && mode != replay.WritesOverlay {
		return replay.Options{}, errors.New("--writes-out needs --writes overlay")
	}
	if f.noGC && mode != replay.WritesOverlay {
		return replay.Options{}, errors.New("--no-garbage-collection needs --writes overlay")
	}
	opts := replay.Options{Speed: f.speed, Edits: es, Strict: f.strict, Writes: mode, DisableGarbageCollection: f.noGC}
	if mode == replay.WritesOverlay {
		opts.Logf = func(format string, args ...any) { fmt.Fprintf(stderr, "kwrec: "+format+"\n", args...) }
	}
	if len(f.crds) > 0 {
		if mode != replay.WritesOverlay {
			return replay.Options{}, errors.New("--crds needs --writes overlay: the definitions are created in the replay's world")
		}
		if opts.CRDs, err = replay.LoadCRDs(f.crds...); err != nil {
			return replay.Options{}, fmt.Errorf("--crds: %w", err)
		}
	}
	clock := f.clock
	if f.strict && !f.clockSet {
		clock = "consumption" // --strict replays the recorded requests as they came
	}
	switch clock {
	case "world":
		if f.strict {
			return replay.Options{}, errors.New("--strict needs --clock consumption: the world clock answers from the recorded timelines that --strict turns off")
		}
		if f.at != "" {
			// Its syntax now, before anything is served; its range once
			// the recording is read.
			if _, err := timepoint.Parse(f.at); err != nil {
				return replay.Options{}, fmt.Errorf("--at: %w", err)
			}
		}
		opts.WorldClock, opts.At, opts.Paused = true, f.at, f.paused
	case "consumption":
		if f.at != "" || f.paused {
			return replay.Options{}, errors.New("--at and --paused need --clock world")
		}
	default:
		return replay.Options{}, fmt.Errorf("--clock %q: want world or consumption", f.clock)
	}
	return opts, nil
}

// serveRun is serve's RunE: it checks f, creates the cassette of
// --writes-out, tells at once what can be told of the cassette name, then
// serves it until the command's context is done.
func serveRun(cmd *cobra.Command, f *serveFlags, name string) error {
	f.clockSet = cmd.Flags().Changed("clock")
	opts, err := f.options(cmd.ErrOrStderr())
	if err != nil {
		return err
	}
	if f.writesOut != "" {
		w, err := cassettes.Create(f.writesOut, cassettes.Header{RecordedAt: time.Now().UTC(), Labels: map[string]string{"writes-of": name}}, cassettes.WriterOptions{})
		if err != nil {
			return err
		}
		defer func() {
			if cerr := w.Close(); cerr != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: %s: %v\n", f.writesOut, cerr)
			}
		}()
		opts.WritesOut = w
	}
	endStartGC := startGC(cassetteBytes(name))
	defer endStartGC()
	// What can be told at once (a missing file, not a cassette, an
	// unknown version) is, before anything is served.
	head, err := cassettes.Open(name)
	if err != nil {
		return err
	}
	head.Close()
	return serveCassette(cmd, f, name, opts, endStartGC)
}

// serveCassette serves the cassette name with opts until the command's
// context is done, and writes --kubeconfig-out as soon as the server
// listens; endStartGC is called once the cassette is read.
func serveCassette(cmd *cobra.Command, f *serveFlags, name string, opts replay.Options, endStartGC func()) error {
	// The cassette is read while the server starts and the
	// kubeconfig is written: clients may connect at once, and
	// their requests wait for the read.
	srv := &replay.Server{Open: func() (*replay.Replayer, error) { return replay.Open(name, opts) },
		PlainHTTP: f.plainHTTP, Addr: f.listen, AllowRemote: f.allowRemote,
		Logf: func(format string, args ...any) { fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: "+format+"\n", args...) }}
	if f.allowRemote {
		fmt.Fprintln(cmd.ErrOrStderr(), "kwrec: warning: --allow-remote: anyone who reaches the port with the token can read this cassette")
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer srv.Close()
	if f.kubeconfig != "" {
		if err := srv.WriteKubeconfig(f.kubeconfig); err != nil {
			return err
		}
	}
	fmt.Fprintf(cmd.OutOrStdout(), "serving %s at %s\n", name, srv.URL())
	if f.kubeconfig != "" {
		fmt.Fprintf(cmd.OutOrStdout(), "kubeconfig: %s\n", f.kubeconfig)
	}
	r, err := srv.Ready(cmd.Context())
	if err != nil {
		if cmd.Context().Err() != nil {
			return srv.Close()
		}
		// A cassette found bad past its header (cut, corrupt, an
		// edit that names nothing): no kubeconfig is left behind
		// for a server that never answered.
		if f.kubeconfig != "" {
			os.Remove(f.kubeconfig)
		}
		return err
	}
	endStartGC()
	if wc := r.WorldClock(); wc != nil {
		s := wc.State()
		fmt.Fprintf(cmd.OutOrStdout(), "world clock at %v of %v (%s), speed %v%s: kwrec ctl play|pause|seek POINT|speed X\n",
			s.At, s.Length, s.Time.UTC().Format(time.RFC3339), s.Speed, map[bool]string{true: ", paused"}[s.Paused])
	}
	<-cmd.Context().Done()
	err = srv.Close()
	warnUnfired(cmd.ErrOrStderr(), r)
	return err
}

// startGCPercent is the garbage collector's GOGC while kwrec serve starts
// a small cassette, up to its ready line. The open of a cassette allocates
// its buffers (a zstd window, a text buffer of 4 MiB, batches of frames) on
// a heap of a few MiB, so at the default of 100 the collector ran several
// times during the open of the start benchmark's cassette; at 400 it runs
// at most once, which shortens the start and its CPU (BENCHMARKS.md). The
// default is back once the server is ready.
const startGCPercent = 400

// startGCMaxBytes is the largest cassette (its files on disk) whose start
// runs at startGCPercent. A large cassette's open keeps tens of MB (the
// index and timelines of a million events), and at 400 the heap could
// grow to five times what it keeps where 100 allows two: the peak of a
// large serve would rise by more than the start saves.
const startGCMaxBytes = 16 << 20

// startGC sets the collector's percent to [startGCPercent] for a cassette
// of size bytes, unless it is larger than [startGCMaxBytes] or the GOGC
// environment variable chose one, and returns the function that sets it
// back; calling that again does nothing.
func startGC(size int64) (end func()) {
	if _, set := os.LookupEnv("GOGC"); set || size > startGCMaxBytes {
		return func() {}
	}
	old := debug.SetGCPercent(startGCPercent)
	ended := false
	return func() {
		if !ended {
			ended = true
			debug.SetGCPercent(old)
		}
	}
}

// cassetteBytes returns the size on disk of the cassette name (a file, or
// a rotated recording's parts), or a size past [startGCMaxBytes] when it
// cannot tell: the open reports why.
func cassetteBytes(name string) int64 {
	parts, err := cassettes.Parts(name)
	if err != nil {
		return math.MaxInt64
	}
	n, err := filesSize(parts)
	if err != nil {
		return math.MaxInt64
	}
	return n
}

// filesSize returns the total size of the files names.
func filesSize(names []string) (int64, error) {
	var n int64
	for _, p := range names {
		st, err := os.Stat(p)
		if err != nil {
			return 0, err
		}
		n += st.Size()
	}
	return n, nil
}
