package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/watcher"
)

type recordFlags struct {
	kube          kubeFlags
	out           string
	selector      string
	fieldSelector string
	duration      time.Duration
	events        int
	streamingList bool
	proxy         bool
	noRedact      bool
	labels        []string
	maxSize       string
	rotate        time.Duration
	deltas        bool
	listDeltas    bool
	all           bool
	include       []string
	exclude       []string
	keep          int
	keepFor       time.Duration
	// onReady, when set, is called once the initial state of every
	// collection is recorded (kwrec push -o starts pushing then).
	onReady func()
}

// recordLong is record's --help text.
const recordLong = `Record list and watch traffic from a live cluster into a cassette.

With resources, kwrec lists and watches each the way a controller does,
until --duration passes, --events events were seen, or Ctrl-C / SIGTERM;
the cassette is then saved. Resources are named as kubectl get names them,
through the server's discovery: plurals, singulars, kinds, short names,
categories, resource.group, resource.version.group (configmaps.v1.), CRDs,
and comma lists (cm,deploy). Namespaced ones are recorded in -n, else the
kubeconfig context's namespace, else default; -A records all namespaces;
-l and --field-selector select as kubectl's do, on the list and the watch.
It first records the server's discovery (/version, /api, /apis, the
resources' group versions and their OpenAPI v3 documents), so that kubectl
against a replay finds short names, categories and explain as it did live.

With --all, kwrec records every resource the server's discovery lists with
the list and watch verbs (the preferred version of each group; no
subresources), in every namespace, or with -n only the namespaced ones in
that namespace. Events (core and events.k8s.io) and Leases
(coordination.k8s.io) churn without end and are left out unless --include
names them (--include events,leases). --exclude drops more. Both take
comma lists of: a group (apps, coordination.k8s.io; core for the core
group), which names all its resources; a resource's plural, singular,
kind or short name (secrets, Secret), in every group; any of those with
.GROUP (events.events.k8s.io, deploy.apps). kwrec first makes each
resource's list and watch once, unrecorded, with -l and --field-selector:
a resource the server refuses (forbidden to these credentials, a field
selector it does not support, an API that is down) is skipped, named on
stderr and in the cassette header's "skipped" list, and the rest are
recorded.

With --proxy, kwrec starts a recording proxy on 127.0.0.1, runs COMMAND
with KUBECONFIG pointing at it and records everything COMMAND does, until it
exits (or --duration passes, or Ctrl-C / SIGTERM, which stop COMMAND).

The cluster is reached with kubectl's connection flags (--kubeconfig,
--context, --cluster, --user, --server, --token, --certificate-authority,
--as, --request-timeout, ...), which need no kubeconfig at all.

The output is compressed when FILE ends in .zst. Credentials, Secret values
and tokens are redacted unless --no-redact.

--max-size and --rotate split a long recording into numbered parts, each a
whole cassette: -o rec.kwrec.zst --max-size 100MB writes rec-0001.kwrec.zst,
rec-0002.kwrec.zst, ..., starting the next part once the current one holds
SIZE bytes (or is DURATION old). Every kwrec command that reads a cassette,
and replay.Open, takes the parts as one recording by a quoted pattern
('rec-*.kwrec.zst') or the first part. kwrec says on stderr when each part
starts.

--keep N and --keep-for DURATION bound what a rotated recording keeps on
disk: once a part starts, the oldest parts beyond the N newest, and those
whose last line is older than DURATION by the recorder's clock, are
dropped, the part being written and the one before it always kept. First
the state where the oldest part kept starts, a list of every collection
recorded (as the collection's list request asked, whole in one page, at
the resourceVersion the dropped parts had reached) and the watches open
then, going on from it, is written over the part before it, atomically,
as a rebased part (its header says "rebased":true); then the parts before
are deleted. So the kept parts replay, lint and diff as a whole recording
from the rebased part on: kwrec serve 'rec-*.kwrec.zst'. A recorder
stopped at any moment leaves a whole recording: parts before the rebased
one, which every reader skips, and perhaps a hidden temporary file.
With --max-size, --keep N is a budget of N parts, the state included: it
keeps the newest parts that leave room for the state and the part being
written (fewer than N when the state takes room), and while it writes the
next state beside the old one the disk holds at most one part more.
--keep needs at least 2 (3 for the budget to hold a state); neither works
with --deltas (a delta may name a frame in a deleted part: run kwrec
compact on the kept parts instead).`

// recordExample holds the examples of record's --help.
const recordExample = `  kwrec record configmaps -n default --duration 30s -o cm.kwrec.zst
  kwrec record cm,secrets -A --events 100 -o cluster.kwrec.zst
  kwrec record deploy -l app=web --streaming-list -o web.kwrec.zst
  kwrec record configmaps.v1. --server https://10.0.0.1:6443 --token "$TOKEN" --certificate-authority ca.crt -n default -o cm.kwrec
  kwrec record --proxy -o kubectl.kwrec.zst -- kubectl get configmaps -w
  kwrec record --all --exclude secrets,configmaps.core --max-size 100MB -o cluster.kwrec.zst
  kwrec record --all --include events -n web --duration 10m -o web.kwrec.zst
  kwrec record pods -A --max-size 100MB --rotate 1h -o pods.kwrec.zst   # pods-0001.kwrec.zst, ...
  kwrec record pods -A --rotate 1h --keep-for 24h -o pods.kwrec.zst    # the last day, replayable`

func newRecordCmd() *cobra.Command {
	var f recordFlags
	cmd := &cobra.Command{
		Use:     "record [RESOURCE...] -o FILE | record --all -o FILE | record --proxy -o FILE -- COMMAND [ARGS...]",
		Short:   "Record list and watch traffic from a live cluster",
		Long:    recordLong,
		Example: recordExample,
		RunE: func(cmd *cobra.Command, args []string) error {
			return recordRun(cmd, &f, args)
		},
	}
	f.register(cmd)
	return cmd
}

// register adds record's flags, kubectl's connection flags first, to cmd.
func (f *recordFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.kube.add(cmd)
	fl.StringVarP(&f.out, "output", "o", "", "the cassette to write (.zst: compressed)")
	fl.StringVarP(&f.selector, "selector", "l", "", "label selector as kubectl's (=, ==, !=, in, notin, exists: -l 'app=web,tier in (a,b)'), on the list and the watch")
	fl.StringVar(&f.fieldSelector, "field-selector", "", "field selector as kubectl's (=, ==, !=: --field-selector metadata.name=a), on the list and the watch")
	fl.DurationVar(&f.duration, "duration", 0, "stop after this long (default: until Ctrl-C, --events or COMMAND exits)")
	fl.IntVar(&f.events, "events", 0, "stop after this many object events in all (default: no limit)")
	fl.BoolVar(&f.streamingList, "streaming-list", false, "start with a streaming list (sendInitialEvents) instead of a paged list")
	fl.BoolVar(&f.proxy, "proxy", false, "record COMMAND through a recording proxy")
	fl.BoolVar(&f.noRedact, "no-redact", false, "record credentials, Secret values and tokens as they are (dangerous)")
	fl.StringArrayVar(&f.labels, "label", nil, "KEY=VALUE note stored in the cassette header (repeatable)")
	fl.StringVar(&f.maxSize, "max-size", "", "split the recording into numbered parts of about this size (100MB, 1GiB): FILE-0001.EXT, FILE-0002.EXT, ...")
	fl.DurationVar(&f.rotate, "rotate", 0, "start the next numbered part after this long (1h), as --max-size does by size")
	fl.BoolVar(&f.all, "all", false, "record every resource that can be listed and watched, in every namespace (or -n's); events and leases only with --include")
	fl.StringSliceVar(&f.include, "include", nil, "with --all: record these too, of what it leaves out (events, leases)")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "with --all: leave out these resources or groups (secrets, deploy.apps, coordination.k8s.io; core is the core group)")
	fl.IntVar(&f.keep, "keep", 0, "with --max-size or --rotate: keep the N newest parts, deleting older ones as the recording goes, after the full state where the oldest kept starts (at least 2; with --max-size, within N parts' bytes, the state included)")
	fl.DurationVar(&f.keepFor, "keep-for", 0, "with --max-size or --rotate: delete the parts whose last line is older than this (24h), by the recorder's clock, after the full state where the oldest kept starts")
	fl.BoolVar(&f.listDeltas, "list-deltas", true, "write a watch event of an object in a list recorded before as a delta against its item there, when that is less than half the event (.zst only; not with --keep or --keep-for, which delete the parts the lists are in): a third smaller for 2,000 ConfigMaps changed once, and readers and the recorder hold the lists so used, at most 32 MiB of list text, packed to about a tenth")
	fl.BoolVar(&f.deltas, "deltas", false, "write each watch event as a delta against its object's previous version (.zst only): about a third of the size for objects that change often, 14% smaller for a 10-minute record --all, but every reader keeps up to 64 MiB of frames, packed (kwrec compact does this afterwards)")
}

// check validates the flags and args of record that need no cluster: the
// output, its parts and their retention, and which of resources, --all
// and --proxy was asked for.
func (f *recordFlags) check(args []string) error {
	if f.out == "" {
		return errors.New("record needs -o FILE")
	}
	if _, err := parseSize(f.maxSize); err != nil {
		return fmt.Errorf("--max-size %q: %v", f.maxSize, err)
	}
	if f.rotate < 0 {
		return fmt.Errorf("--rotate %v: want a positive duration such as 1h", f.rotate)
	}
	if err := f.checkKeep(); err != nil {
		return err
	}
	// Before any cluster traffic: a typo in -o should not cost a
	// connection to find out.
	if _, err := os.Stat(filepath.Dir(f.out)); err != nil {
		return fmt.Errorf("-o %s: the output directory does not exist", f.out)
	}
	if f.all && f.proxy {
		return errors.New("record --all and --proxy: choose one")
	}
	if f.all && len(args) > 0 {
		return fmt.Errorf("record --all takes no resources (got %s): it records every one; --exclude drops some", strings.Join(args, " "))
	}
	if !f.all && (len(f.include) > 0 || len(f.exclude) > 0) {
		return errors.New("--include and --exclude need --all")
	}
	return nil
}

// recordRun is record's RunE: it checks f and args, then records COMMAND
// through the proxy, every resource (--all) or the resources args name.
func recordRun(cmd *cobra.Command, f *recordFlags, args []string) error {
	if err := f.check(args); err != nil {
		return err
	}
	if f.proxy {
		if cmd.ArgsLenAtDash() != 0 || len(args) == 0 {
			return errors.New("record --proxy needs a command after --: kwrec record --proxy -o FILE -- COMMAND [ARGS...]")
		}
		return recordProxy(cmd, f, args)
	}
	if len(args) == 0 && !f.all {
		return errors.New("record needs at least one resource (e.g. configmaps, pods), --all or --proxy")
	}
	// Parsed as the API server parses them, before connecting: a
	// bad selector would otherwise fail every list and watch.
	if _, err := labels.Parse(f.selector); err != nil {
		return fmt.Errorf("-l %q: %v", f.selector, err)
	}
	if _, err := fields.ParseSelector(f.fieldSelector); err != nil {
		return fmt.Errorf("--field-selector %q: %v", f.fieldSelector, err)
	}
	if f.all {
		return recordAll(cmd, f)
	}
	return recordResources(cmd, f, args)
}

// session is a recording in progress: cassette writer and recorder.
type session struct {
	w   *cassettes.Writer
	rec *recorder.Recorder
	out string
	// ret deletes the oldest parts as new ones start (--keep,
	// --keep-for), nil without; retDone ends its watch.
	ret     *retention
	retStop chan struct{}
	retDone chan struct{}
	retErr  error
}

// startSession starts the cassette and its recorder; skipped goes into the
// header (see [cassettes.Header.Skipped]).
func startSession(cmd *cobra.Command, f *recordFlags, cfg *rest.Config, skipped []string) (*session, error) {
	opts := recorder.Options{DisableRedaction: f.noRedact}
	if f.noRedact {
		fmt.Fprintln(cmd.ErrOrStderr(), "kwrec: warning: --no-redact: credentials, Secret values and tokens will be written to "+f.outName())
	}
	server := ""
	if dc, err := discovery.NewDiscoveryClientForConfig(cfg); err == nil {
		if v, err := dc.ServerVersion(); err == nil {
			server = v.GitVersion
		}
	}
	h := recorder.Header(server, opts)
	h.Skipped = skipped
	for _, l := range f.labels {
		k, v, ok := strings.Cut(l, "=")
		if !ok {
			return nil, fmt.Errorf("--label %q: want KEY=VALUE", l)
		}
		if h.Labels == nil {
			h.Labels = map[string]string{}
		}
		h.Labels[k] = v
	}
	size, _ := parseSize(f.maxSize) // checked before
	wopts := cassettes.WriterOptions{MaxSize: size, Rotate: f.rotate, Deltas: f.deltas,
		ListDeltas: f.listDeltas && f.keep == 0 && f.keepFor == 0}
	var parts chan struct{} // a new part started, for the retention
	if f.keep > 0 || f.keepFor > 0 {
		parts = make(chan struct{}, 1)
		wopts.OnPart = func(int) {
			select {
			case parts <- struct{}{}:
			default: // the retention has yet to see the last: it reads Part
			}
		}
	}
	if f.maxSize != "" || f.rotate != 0 {
		removeLeftovers(f.out, cmd.ErrOrStderr())
	}
	w, err := cassettes.Create(f.out, h, wopts)
	if err != nil {
		return nil, err
	}
	rec, err := recorder.New(w, opts)
	if err != nil {
		w.Close()
		return nil, err
	}
	s := &session{w: w, rec: rec, out: f.outName()}
	if f.keep > 0 || f.keepFor > 0 {
		s.ret = newRetention(retentionOptions{Out: f.out, Keep: f.keep, KeepFor: f.keepFor, MaxSize: size, Log: cmd.ErrOrStderr()})
		s.retStop, s.retDone = make(chan struct{}), make(chan struct{})
		go s.retain(parts)
	}
	return s, nil
}

// retain applies the retention as parts start (parts), and as the oldest
// kept part ages past --keep-for, until finish. After a failed pass it
// waits for the next part.
func (s *session) retain(parts <-chan struct{}) {
	defer close(s.retDone)
	failed := false
	for {
		var expiry <-chan time.Time
		var timer clock.Timer
		if d, ok := s.ret.untilExpiry(); ok && !failed {
			timer = s.ret.opts.Clock.NewTimer(d)
			expiry = timer.C()
		}
		select {
		case <-s.retStop:
		case <-parts:
			failed = false
		case <-expiry:
		}
		if timer != nil {
			timer.Stop()
		}
		if isDone(s.retStop) {
			return
		}
		p := s.w.Part()
		s.ret.started(p)
		if err := s.ret.apply(p, false); err != nil {
			failed = true
			if s.retErr == nil {
				s.retErr = err
				fmt.Fprintf(s.ret.opts.Log, "kwrec: warning: %v\n", err)
			}
		}
	}
}

func isDone(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// finish stops the recorder and closes the cassette; it reports what was
// saved only when everything was written.
func (s *session) finish() error {
	rerr, werr := s.rec.Close(), s.w.Close()
	if s.ret != nil {
		close(s.retStop)
		<-s.retDone
		if werr == nil {
			p := s.w.Part()
			s.ret.started(p)
			if err := s.ret.apply(p, true); err != nil {
				werr = err
			}
		}
	}
	// Both report the writer's sticky error when the disk filled: once.
	if rerr != nil && werr != nil && strings.Contains(rerr.Error(), werr.Error()) {
		return rerr
	}
	if rerr != nil && werr != nil && strings.Contains(werr.Error(), rerr.Error()) {
		return werr
	}
	return errors.Join(rerr, werr)
}

// resourceStats are one resource's live counters.
type resourceStats struct {
	name   string
	events atomic.Int64
	errs   atomic.Int64
	bytes  atomic.Int64
}

// countingBody counts the bytes a client reads.
type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (c countingBody) Read(p []byte) (int, error) {
	n, err := c.ReadCloser.Read(p)
	c.n.Add(int64(n))
	return n, err
}

type countingRT struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingRT) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if resp != nil && resp.Body != nil {
		resp.Body = countingBody{resp.Body, c.n}
	}
	return resp, err
}

func recordResources(cmd *cobra.Command, f *recordFlags, args []string) error {
	cfg, err := f.kube.config()
	if err != nil {
		return err
	}
	ns, err := f.kube.namespace()
	if err != nil {
		return err
	}
	res, err := resolveResources(f.kube.conn, args)
	if err != nil {
		return err
	}
	cfg.WarningHandler = &serverWarnings{w: cmd.ErrOrStderr()}
	return recordCollections(cmd, f, cfg, res, ns, nil)
}

// recordAll is record --all: every resource discovery lists that the
// server lets these credentials list and watch (see [selectAll] and
// [probeAll]), the others named on stderr and in the header.
func recordAll(cmd *cobra.Command, f *recordFlags) error {
	cfg, err := f.kube.config()
	if err != nil {
		return err
	}
	ns := allNamespace(&f.kube)
	stderr := cmd.ErrOrStderr()
	cfg.WarningHandler = &serverWarnings{w: stderr}
	lists, skipped, err := discoverAll(cmd.Context(), cfg)
	if err != nil {
		return fmt.Errorf("discovering the resources to record: %v", err)
	}
	res, warnings := selectAll(lists, allSelection{namespaced: ns != "", include: f.include, exclude: f.exclude})
	for _, w := range warnings {
		fmt.Fprintln(stderr, "kwrec: warning: "+w)
	}
	res, refused, err := probeAll(cmd.Context(), cfg, res, ns, f.selector, f.fieldSelector)
	if err != nil {
		return fmt.Errorf("asking the server for the resources to record: %v", err)
	}
	skipped = append(skipped, refused...)
	for _, s := range skipped {
		fmt.Fprintln(stderr, "kwrec: recording: skipped "+s)
	}
	if len(res) == 0 {
		return errors.New("record --all: nothing to record: the server refused every resource (see above)")
	}
	return recordCollections(cmd, f, cfg, res, ns, skipped)
}

// recordCollections records res (namespaced ones in ns, "" for all) until
// the recording stops, then prints the summary; skipped goes into the
// header.
func recordCollections(cmd *cobra.Command, f *recordFlags, cfg *rest.Config, res []resource, ns string, skipped []string) error {
	s, err := startSession(cmd, f, cfg, skipped)
	if err != nil {
		return err
	}
	// First, so that a replay serves the recorded server's discovery (and
	// kubectl's short names, categories and explain work against it).
	if err := recordDiscovery(cmd.Context(), cfg, s.rec, res); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: warning: recording discovery: %v\n", err)
	}
	ctx, cancel := context.WithCancel(cmd.Context())
	defer cancel()
	if f.duration > 0 {
		// A cancel, not a deadline: the streams end as "stopped".
		t := time.AfterFunc(f.duration, cancel)
		defer t.Stop()
	}
	rw := &recordWatches{ctx: ctx, cancel: cancel, cmd: cmd, f: f, cfg: cfg, s: s, ns: ns, n: len(res),
		listing: make(chan struct{}, initialLists)}
	stats := make([]*resourceStats, len(res))
	start := time.Now()
	for i, r := range res {
		stats[i] = &resourceStats{name: resourceName(r.gvr)}
		if err := rw.start(r, stats[i]); err != nil {
			cancel()
			rw.wg.Wait()
			return errors.Join(err, s.finish())
		}
	}
	go recordStopOnWriteError(ctx, cancel, s.w)
	endProgress := recordProgress(cmd.ErrOrStderr(), stats, start)
	<-ctx.Done()
	rw.wg.Wait()
	endProgress() // the line is cleared before the summary
	if err := s.finish(); err != nil {
		return fmt.Errorf("recording stopped with errors; %s holds only what was written before: %v", s.out, err)
	}
	fmt.Fprintln(cmd.ErrOrStderr(), summary(stats, time.Since(start), s.out))
	return nil
}

// recordWatches are the watches of one recording in progress (of
// recordCollections) and what they share: the recording's context, whose
// cancel stops them all, and the counters that end it.
type recordWatches struct {
	ctx    context.Context
	cancel context.CancelFunc
	cmd    *cobra.Command
	f      *recordFlags
	cfg    *rest.Config
	s      *session
	ns     string // namespaced collections' namespace, "" with -A
	n      int    // the collections recorded
	wg     sync.WaitGroup
	// total counts the object events of all collections, for --events.
	total atomic.Int64
	// ready counts the collections whose initial state is recorded: once
	// all are, kwrec says so, for whoever waits to make changes.
	ready atomic.Int64
	// listing holds a token for each initial list under way (see
	// initialLists).
	listing chan struct{}
}

// initialLists is how many collections' initial lists (the JSON list and
// the Table-form one each count) a recording runs at once. Each page of
// 500 objects is held several times while it is listed: read whole by
// the client, as one frame by the recorder, decoded; at the start of a
// record --all of 10,000 objects (target 11) every collection listing at
// once made the recorder's peak.
const initialLists = 4

// startList waits for a turn to run an initial list and returns the
// function that ends it, which may be called more than once; ok is false
// once the recording is stopped.
func (rw *recordWatches) startList() (done func(), ok bool) {
	select {
	case rw.listing <- struct{}{}:
	case <-rw.ctx.Done():
		return func() {}, false
	}
	var once sync.Once
	return func() { once.Do(func() { <-rw.listing }) }, true
}

// start starts the watch of r through the recorder, counted in st, and
// the recording of its Table form, each in a goroutine of rw.wg.
func (rw *recordWatches) start(r resource, st *resourceStats) error {
	f := rw.f
	c := rest.CopyConfig(rw.cfg)
	rw.s.rec.WrapConfig(c)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingRT{rt, &st.bytes} })
	dyn, err := dynamic.NewForConfig(c)
	if err != nil {
		return err
	}
	tns := ""
	if r.namespaced {
		tns = rw.ns // "" with -A
	}
	ri := dyn.Resource(r.gvr).Namespace(tns)
	wcfg := watcher.Config{LabelSelector: f.selector, FieldSelector: f.fieldSelector}
	if f.streamingList {
		wcfg.InitialList = watcher.StreamingList
	}
	w := watcher.New[*unstructured.Unstructured](watcher.FromDynamic(ri), wcfg)
	tc := rest.CopyConfig(rw.cfg)
	rw.s.rec.WrapConfig(tc)
	rw.wg.Add(1)
	go func() {
		defer rw.wg.Done()
		// What kubectl's default output needs: best effort, the JSON
		// recording is what a replay is made of.
		recordTable(rw.ctx, tc, collectionPath(r.gvr, tns), f.selector, f.fieldSelector, rw.startList)
	}()
	rw.wg.Add(1)
	go func() {
		defer rw.wg.Done()
		rw.count(w, st)
	}()
	return nil
}

// count counts the events of w into st and rw until the recording stops,
// says when every collection's initial state is recorded, and stops the
// recording at --events.
func (rw *recordWatches) count(w *watcher.Watcher[*unstructured.Unstructured], st *resourceStats) {
	listDone, ok := rw.startList()
	defer listDone()
	if !ok {
		return
	}
	listed := false
	for ev := range w.Events(rw.ctx) {
		switch ev.Type {
		case watcher.InitDone:
			if !listed {
				listed = true
				listDone()
				if rw.ready.Add(1) == int64(rw.n) {
					fmt.Fprintf(rw.cmd.ErrOrStderr(), "kwrec: recording: the initial state of %d collection(s) is recorded; watching\n", rw.n)
					if rw.f.onReady != nil {
						rw.f.onReady()
					}
				}
			}
		case watcher.InitApply, watcher.Apply, watcher.Delete:
			st.events.Add(1)
			if n := rw.total.Add(1); rw.f.events > 0 && n >= int64(rw.f.events) {
				rw.cancel()
			}
		case watcher.Error:
			st.errs.Add(1)
			listDone() // a list that fails retries without a turn
		}
	}
}

// recordStopOnWriteError cancels the recording as soon as w fails to
// write, and returns when ctx is done: a write error (a full disk) stops
// the recording at once, as recording on would only lose more. finish
// reports the error.
func recordStopOnWriteError(ctx context.Context, cancel context.CancelFunc, w *cassettes.Writer) {
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if w.Err() != nil {
				cancel()
				return
			}
		}
	}
}

// recordProgress shows the live progress line of stats on stderr when it
// is a terminal, and returns the function that clears it and returns once
// it is cleared.
func recordProgress(stderr io.Writer, stats []*resourceStats, start time.Time) (end func()) {
	progressDone := make(chan struct{})
	progressGone := make(chan struct{})
	if fd, ok := stderr.(*os.File); ok && term.IsTerminal(int(fd.Fd())) {
		go func() {
			defer close(progressGone)
			t := time.NewTicker(250 * time.Millisecond)
			defer t.Stop()
			for {
				select {
				case <-progressDone:
					fmt.Fprint(fd, "\r\033[K")
					return
				case <-t.C:
					fmt.Fprint(fd, "\r\033[K"+progressLine(stats, time.Since(start)))
				}
			}
		}()
	} else {
		close(progressGone)
	}
	return func() {
		close(progressDone)
		<-progressGone
	}
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// progressLine is the live line on a terminal: each resource's counters,
// or with more than four (record --all) their sums, which fit a line.
func progressLine(stats []*resourceStats, elapsed time.Duration) string {
	if len(stats) > 4 {
		var ev, n int64
		for _, st := range stats {
			ev += st.events.Load()
			n += st.bytes.Load()
		}
		rate := float64(ev) / max(elapsed.Seconds(), 0.001)
		return fmt.Sprintf("recording %s | %d resources: %d events, %s, %.1f/s", elapsed.Round(time.Second), len(stats), ev, humanBytes(n), rate)
	}
	parts := make([]string, len(stats))
	for i, st := range stats {
		ev := st.events.Load()
		rate := float64(ev) / max(elapsed.Seconds(), 0.001)
		parts[i] = fmt.Sprintf("%s: %d events, %s, %.1f/s", st.name, ev, humanBytes(st.bytes.Load()), rate)
	}
	return fmt.Sprintf("recording %s | %s", elapsed.Round(time.Second), strings.Join(parts, " | "))
}

func summary(stats []*resourceStats, elapsed time.Duration, out string) string {
	parts := make([]string, len(stats))
	for i, st := range stats {
		parts[i] = fmt.Sprintf("%s %d events (%s", st.name, st.events.Load(), humanBytes(st.bytes.Load()))
		if e := st.errs.Load(); e > 0 {
			parts[i] += fmt.Sprintf(", %d watch errors", e)
		}
		parts[i] += ")"
	}
	sort.Strings(parts)
	return fmt.Sprintf("kwrec: recorded %s in %s to %s", strings.Join(parts, ", "), elapsed.Round(time.Millisecond), out)
}

func recordProxy(cmd *cobra.Command, f *recordFlags, command []string) error {
	cfg, err := f.kube.config()
	if err != nil {
		return err
	}
	s, err := startSession(cmd, f, cfg, nil)
	if err != nil {
		return err
	}
	p, err := recorder.NewProxy(cfg, s.rec)
	if err != nil {
		return errors.Join(err, s.finish())
	}
	dir, err := os.MkdirTemp("", "kwrec-proxy-")
	if err != nil {
		return errors.Join(err, p.Close(), s.finish())
	}
	defer os.RemoveAll(dir)
	kc := filepath.Join(dir, "kubeconfig")
	if err := p.WriteKubeconfig(kc); err != nil {
		return errors.Join(err, p.Close(), s.finish())
	}
	child := exec.Command(command[0], command[1:]...)
	child.Env = append(os.Environ(), "KUBECONFIG="+kc)
	child.Stdin, child.Stdout, child.Stderr = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
	if err := child.Start(); err != nil {
		return errors.Join(fmt.Errorf("starting %s: %v", command[0], err), p.Close(), s.finish())
	}
	waited := make(chan error, 1)
	go func() { waited <- child.Wait() }()
	ctx := cmd.Context()
	if f.duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, f.duration)
		defer cancel()
	}
	var werr error
	select {
	case werr = <-waited:
	case <-ctx.Done():
		recordStopChild(child.Process, waited)
		// We stopped it: its exit status is ours to ignore.
	}
	if err := errors.Join(p.Close(), s.finish()); err != nil {
		return fmt.Errorf("recording stopped with errors; %s holds only what was written before: %v", s.out, err)
	}
	fmt.Fprintf(cmd.ErrOrStderr(), "kwrec: recorded %s through the proxy to %s\n", strings.Join(command, " "), s.out)
	var ee *exec.ExitError
	if errors.As(werr, &ee) {
		return &exitError{code: ee.ExitCode(), msg: fmt.Sprintf("%s exited with status %d (the recording is saved)", command[0], ee.ExitCode())}
	}
	return werr
}

// recordStopChild stops the command --proxy runs, child, as Ctrl-C would,
// then gives it a moment before it kills it; it returns once waited, the
// result of child's Wait, came.
func recordStopChild(child *os.Process, waited <-chan error) {
	_ = child.Signal(syscall.SIGTERM)
	select {
	case <-waited:
	case <-time.After(5 * time.Second):
		_ = child.Kill()
		<-waited
	}
}

// serverWarnings prints each distinct warning the server sends (a
// deprecated API's, such as v1 Endpoints') once, as kwrec's own warning,
// where client-go's default logs it on every request: a recording lists
// and watches again and again for hours.
type serverWarnings struct {
	w    io.Writer
	mu   sync.Mutex
	seen map[string]bool
}

var _ rest.WarningHandler = (*serverWarnings)(nil)

// HandleWarningHeader prints text the first time it comes.
func (s *serverWarnings) HandleWarningHeader(code int, _ string, text string) {
	if code != 299 || text == "" {
		return
	}
	s.mu.Lock()
	first := !s.seen[text]
	if s.seen == nil {
		s.seen = map[string]bool{}
	}
	s.seen[text] = true
	s.mu.Unlock()
	if first {
		fmt.Fprintf(s.w, "kwrec: warning: the server warns: %s\n", text)
	}
}
