package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/push"
	"github.com/kwrec/kwrec/internal/timepoint"
)

// pushFlags are the flags of kwrec push.
type pushFlags struct {
	kube             kubeFlags
	from, to         string
	speed            float64
	roots, all       bool
	include, exclude []string
	nsMap            []string
	dryRun           bool
	out              string
	onError          string
	qps              float32
	burst            int
	workers          int
	settle           time.Duration
}

const pushLong = `Push a recording into a real cluster: create the recorded state at the
start (or at --from), then make each recorded change at its recorded time,
scaled by --speed, until the end (or --to), so that the target's own
controllers, scheduler and admission react to the recorded workload.

The state comes first: namespaces, then CustomResourceDefinitions (waited
for until established), then the other objects, owners before what they
own, then ServiceAccounts, Secrets and ConfigMaps before the workloads.
Each change is made when it is due, up to --workers at once, after the
changes before it that it depends on (of the same object, of its owners;
a Namespace's or a CRD's after all before it, and all after it wait), not
after the others: one slow write holds up only what needs it. A create
is a POST, an update a PUT over the version the push last wrote (read
again after a 409), with the status through /status where the resource
has that subresource, a delete a DELETE.

--roots (the default) pushes only objects no other recorded object owns
(by ownerReferences): Deployments and CronJobs, not their ReplicaSets,
Pods and Jobs, which the target's controllers make. The status of kinds
the target's controllers write (Deployment, ReplicaSet, StatefulSet,
DaemonSet, Job, CronJob, Pod, ReplicationController,
HorizontalPodAutoscaler, PersistentVolumeClaim, PersistentVolume, Service,
Namespace, Node, PodDisruptionBudget) is then not pushed. --all pushes
everything with its status, owners first, each ownerReference re-pointed
at the UID the target gave the owner: for a target whose controllers are
off. --include and --exclude choose resources as kwrec record --all's do.

Always stripped: uid, resourceVersion, creationTimestamp, managedFields,
generation, deletionTimestamp, deletionGracePeriodSeconds, selfLink, a
Service's clusterIP(s) (a headless Service keeps its None), and
ownerReferences to objects not pushed; a Job's generated selector is
re-pointed at the UID the target gives the Job. Always left out: what the target makes itself (the system namespaces and what
kube-system, kube-public and kube-node-lease hold, system: RBAC, the
kubernetes Service, kube-root-ca.crt ConfigMaps, default ServiceAccounts,
bootstrap flow control, automanaged APIServices). Secrets are pushed as
recorded: in a redacted recording (the default) each data value is
REDACTED.

A refused write (AlreadyExists, Invalid, Forbidden, a missing CRD) is
named on stderr and counted; --on-error stop ends the push there. A target
that does not answer is retried with backoff (200ms doubling, 6 tries),
then the push stops with an error. 429s are retried by client-go, after
the server's Retry-After. Ctrl-C or SIGTERM stops the push with its
summary. --qps and --burst are client-go's, 50 and 100 by default as
record --all's probes (kubectl's discovery takes 50 a second): at
client-go's own 5 and 10 a push made 5.4 objects a second where kubectl
apply --server-side made 30 (BENCHMARKS.md). An update is one PUT, two
requests when the target's controllers wrote the object since. At --speed
above 0 and without --qps, the limit is raised to twice the requests of
the recording's busiest second at that speed (and said so): under it,
every change after that second is late.

-o records the target (as kwrec record --all, in-process) while pushing,
from before the first write to --settle after the last, then prints per
kind the objects recorded against those on the target at points of the
window, Pods scheduled and pending apart; kwrec diff compares the two
recordings.`

func newPushCmd() *cobra.Command {
	var f pushFlags
	cmd := &cobra.Command{
		Use:   "push REC --kubeconfig K",
		Short: "Push a recording into a real cluster, paced, for its controllers to react to",
		Long:  pushLong,
		Example: `  kwrec push incident.kwrec.zst --kubeconfig test.kubeconfig --dry-run
  kwrec push rec.kwrec.zst --from 55m --to 1h5m --speed 10 --kubeconfig test.kubeconfig -o target.kwrec.zst
  kwrec push rec.kwrec.zst --all --namespace-map shop=shop-replay --kubeconfig test.kubeconfig`,
		Args: oneCassette,
		RunE: func(cmd *cobra.Command, args []string) error {
			return pushRun(cmd, &f, args[0])
		},
	}
	f.register(cmd)
	return cmd
}

// register adds push's flags, kubectl's connection flags first, to cmd.
func (f *pushFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	f.kube.conn = genericclioptions.NewConfigFlags(true)
	f.kube.conn.AddFlags(fl)
	fl.StringVar(&f.from, "from", "", "push from this point, as kwrec cut --from takes it (55m, an RFC 3339 time, rv=RESOURCEVERSION; default: the start)")
	fl.StringVar(&f.to, "to", "", "push up to this point, as kwrec cut --to takes it (default: the end)")
	fl.Float64Var(&f.speed, "speed", 1, "scale the recorded times: 1 as recorded, 10 ten times faster, 0 as fast as the target takes the writes")
	fl.BoolVar(&f.roots, "roots", true, "push only objects no other recorded object owns; the target's controllers make the rest (--roots=false is --all)")
	fl.BoolVar(&f.all, "all", false, "push every object, owners first (for a target whose controllers are off)")
	fl.StringSliceVar(&f.include, "include", nil, "push these too, of what record --all leaves out (events, leases)")
	fl.StringSliceVar(&f.exclude, "exclude", nil, "leave out these resources or groups, as record --all --exclude names them (secrets, deploy.apps, core)")
	fl.StringArrayVar(&f.nsMap, "namespace-map", nil, "FROM=TO: push the objects of namespace FROM into TO (repeatable)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print the plan (counts by kind, the first changes, the duration at --speed) and push nothing")
	fl.StringVarP(&f.out, "output", "o", "", "record the target while pushing into this cassette (.zst: compressed), then compare it with the recording")
	fl.StringVar(&f.onError, "on-error", "skip", "when the target refuses a write: skip (name it, count it, go on) or stop")
	fl.Float32Var(&f.qps, "qps", 50, "client-go's queries per second toward the target (kubectl's for discovery, record --all's probes'); unset, at --speed above 0, raised to twice the recording's busiest second")
	fl.IntVar(&f.burst, "burst", 100, "client-go's burst toward the target (as record --all's probes)")
	fl.IntVar(&f.workers, "workers", 8, "writes made at once: of the state at the start, and of changes due while others are in flight")
	fl.DurationVar(&f.settle, "settle", 5*time.Second, "with -o: how long to record after the last write, for the target's controllers to catch up")
}

// check validates what needs no recording and no cluster.
func (f *pushFlags) check(cmd *cobra.Command) (push.PlanOptions, push.OnError, error) {
	var opts push.PlanOptions
	if f.all && cmd.Flags().Changed("roots") && f.roots {
		return opts, 0, errors.New("push --roots and --all: choose one")
	}
	if f.all || !f.roots { // --roots=false is --all
		opts.Mode = push.All
	}
	if f.speed < 0 {
		return opts, 0, fmt.Errorf("--speed %v: want 0 (as fast as the target takes them) or more", f.speed)
	}
	for _, m := range f.nsMap {
		from, to, ok := strings.Cut(m, "=")
		if !ok || from == "" || to == "" {
			return opts, 0, fmt.Errorf("--namespace-map %q: want FROM=TO", m)
		}
		if opts.NamespaceMap == nil {
			opts.NamespaceMap = map[string]string{}
		}
		opts.NamespaceMap[from] = to
	}
	var onError push.OnError
	switch f.onError {
	case "skip":
	case "stop":
		onError = push.Stop
	default:
		return opts, 0, fmt.Errorf("--on-error %q: want skip or stop", f.onError)
	}
	return opts, onError, nil
}

// pushRun is push's RunE.
func pushRun(cmd *cobra.Command, f *pushFlags, in string) error {
	opts, onError, err := f.check(cmd)
	if err != nil {
		return err
	}
	p1, p2, err := parseWindow(f.from, f.to)
	if err != nil {
		return err
	}
	rec, err := cut.Read(in)
	if err != nil {
		return err
	}
	s, err := rec.Script(p1, p2)
	if err != nil {
		return err
	}
	stderr := cmd.ErrOrStderr()
	var cfg *rest.Config
	var lists []*metav1.APIResourceList
	if !f.dryRun || f.kube.conn.KubeConfig != nil && *f.kube.conn.KubeConfig != "" {
		if cfg, err = f.kube.config(); err != nil {
			return err
		}
		if lists, _, err = discoverAll(cmd.Context(), cfg); err != nil {
			return fmt.Errorf("discovering the target's resources: %v", err)
		}
	}
	sel, warnings := pushSelection(s, lists, allSelection{include: f.include, exclude: f.exclude})
	for _, w := range warnings {
		fmt.Fprintln(stderr, "kwrec: warning: "+w)
	}
	opts.Select = sel
	plan, err := push.NewPlan(s, opts)
	if err != nil {
		return err
	}
	if f.dryRun {
		printPlan(cmd.OutOrStdout(), plan, f.speed)
		return nil
	}
	cfg.QPS, cfg.Burst = pushRate(stderr, f, cmd.Flags().Changed("qps"), plan)
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pcfg := push.Config{Client: dyn, Speed: f.speed, OnError: onError,
		Workers: f.workers, Log: stderr, Progress: stderr}
	if f.out == "" {
		res, err := push.Run(cmd.Context(), plan, pcfg)
		printResult(stderr, plan, res)
		return err
	}
	return pushRecorded(cmd, f, s, plan, pcfg)
}

// pushRate returns the client-side rate limit of a push: --qps and
// --burst, but at --speed above 0 not under twice the requests of the
// recording's busiest second at that speed, unless --qps was given
// (then a warning says the changes will fall behind). A paced push is
// limited by the recording's pace; a limit under it would hold every
// change after its busiest second late. Twice: room for a 409's second
// request, and for changes a late push makes together.
func pushRate(stderr io.Writer, f *pushFlags, qpsSet bool, plan *push.Plan) (float32, int) {
	if f.speed == 0 {
		return f.qps, f.burst
	}
	busiest := plan.Busiest(f.speed)
	switch {
	case qpsSet && f.qps < float32(busiest):
		fmt.Fprintf(stderr, "kwrec: warning: --qps %v is under the %d requests of the recording's busiest second at --speed %v: its changes will fall behind\n",
			f.qps, busiest, f.speed)
	case !qpsSet && f.qps < float32(2*busiest):
		fmt.Fprintf(stderr, "kwrec: push: --qps %v raised to %d, twice the %d requests of the recording's busiest second at --speed %v\n",
			f.qps, 2*busiest, busiest, f.speed)
		return float32(2 * busiest), max(f.burst, 2*busiest)
	}
	return f.qps, f.burst
}

// pushRecorded pushes plan while recording the target into f.out, then
// compares the two.
func pushRecorded(cmd *cobra.Command, f *pushFlags, s *cut.Script, plan *push.Plan, pcfg push.Config) error {
	stderr := cmd.ErrOrStderr()
	ctx, stopRecording := context.WithCancel(cmd.Context())
	defer stopRecording()
	ready := make(chan struct{})
	rf := &recordFlags{kube: kubeFlags{conn: f.kube.conn, allNamespaces: true}, out: f.out, all: true,
		include: f.include, exclude: f.exclude, onReady: func() { close(ready) }}
	rcmd := &cobra.Command{}
	rcmd.SetContext(ctx)
	rcmd.SetErr(stderr)
	rcmd.SetOut(io.Discard)
	recorded := make(chan error, 1)
	go func() { recorded <- recordAll(rcmd, rf) }()
	select {
	case <-ready:
	case err := <-recorded:
		return fmt.Errorf("recording the target into %s: %v", f.out, err)
	}
	res, err := push.Run(cmd.Context(), plan, pcfg)
	printResult(stderr, plan, res)
	if err == nil && !res.Stopped && f.settle > 0 {
		select {
		case <-time.After(f.settle):
		case <-cmd.Context().Done():
		}
	}
	stopRecording()
	if rerr := <-recorded; rerr != nil {
		return errors.Join(err, fmt.Errorf("recording the target into %s: %v", f.out, rerr))
	}
	if err != nil {
		return err
	}
	return compareTarget(stderr, s, f.out, res, f.speed)
}

// compareTarget prints, per kind, the objects recorded against those in
// the recording of the target at points of the window.
func compareTarget(w io.Writer, s *cut.Script, out string, res *push.Result, speed float64) error {
	trec, err := cut.Read(out)
	if err != nil {
		return err
	}
	ts, err := trec.Script(timepoint.Point{}, timepoint.Point{})
	if err != nil {
		return err
	}
	offset := res.ChangesAt.Sub(trec.Header.RecordedAt)
	points := []time.Duration{0, s.Span / 4, s.Span / 2, 3 * s.Span / 4, s.Span}
	src, tgt := push.NewCensus(s), push.NewCensus(ts)
	var rows [][2]push.Count
	kinds := map[string]bool{}
	for _, p := range points {
		at := offset + res.Elapsed // speed 0: the end
		if speed > 0 {
			at = offset + time.Duration(float64(p)/speed) + res.Percentile(99)
		}
		r := [2]push.Count{src.At(p), tgt.At(at)}
		for _, c := range r {
			for _, k := range c.Kinds() {
				kinds[k] = true
			}
		}
		rows = append(rows, r)
	}
	fmt.Fprintf(w, "kwrec: push: objects by kind, recorded → target (%s), at points of the window:\n", out)
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "KIND")
	for _, p := range points {
		fmt.Fprintf(tw, "\t%v", p.Round(time.Millisecond))
	}
	fmt.Fprintln(tw)
	for _, k := range slices.Sorted(maps.Keys(kinds)) {
		fmt.Fprint(tw, k)
		for _, r := range rows {
			fmt.Fprintf(tw, "\t%d→%d", r[0][k], r[1][k])
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// pushSelection returns what --include and --exclude let a push write,
// as record --all's [selectAll] chooses: every resource the recording
// holds, named as the target's discovery names it (singular, short
// names) where it has it.
func pushSelection(s *cut.Script, target []*metav1.APIResourceList, sel allSelection) (func(group, resource, kind string) bool, []string) {
	known := map[schema.GroupResource]metav1.APIResource{}
	for _, l := range target {
		gv, _ := schema.ParseGroupVersion(l.GroupVersion)
		for _, r := range l.APIResources {
			known[schema.GroupResource{Group: gv.Group, Resource: r.Name}] = r
		}
	}
	byGV := map[schema.GroupVersion]*metav1.APIResourceList{}
	seen := map[schema.GroupResource]bool{}
	each := func(o cut.Object) {
		gr := schema.GroupResource{Group: o.Group, Resource: o.Resource}
		if seen[gr] {
			return
		}
		seen[gr] = true
		r, ok := known[gr]
		if !ok {
			var u unstructured.Unstructured
			_ = u.UnmarshalJSON(o.JSON)
			r = metav1.APIResource{Name: o.Resource, Kind: u.GetKind(), Namespaced: o.Namespace != ""}
		}
		r.Verbs = []string{"list", "watch"}
		gv := schema.GroupVersion{Group: o.Group, Version: o.Version}
		if byGV[gv] == nil {
			byGV[gv] = &metav1.APIResourceList{GroupVersion: gv.String()}
		}
		byGV[gv].APIResources = append(byGV[gv].APIResources, r)
	}
	for _, o := range s.Start {
		each(o)
	}
	for _, c := range s.Changes {
		each(c.Object)
	}
	res, warnings := selectAll(slices.Collect(maps.Values(byGV)), sel)
	ok := map[schema.GroupResource]bool{}
	for _, r := range res {
		ok[r.gvr.GroupResource()] = true
	}
	return func(group, resource, _ string) bool {
		return ok[schema.GroupResource{Group: group, Resource: resource}]
	}, warnings
}

// printPlan prints what --dry-run shows: counts by kind, the first
// changes, the duration at speed.
func printPlan(w io.Writer, plan *push.Plan, speed float64) {
	counts := map[string][3]int{}
	for _, st := range plan.Start {
		c := counts[st.Kind]
		c[0]++
		counts[st.Kind] = c
	}
	for _, st := range plan.Changes {
		c := counts[st.Kind]
		c[1]++
		counts[st.Kind] = c
	}
	fmt.Fprintf(w, "plan: %d namespace(s) to make, %d object(s) at the start, %d change(s)\n", len(plan.Namespaces), len(plan.Start), len(plan.Changes))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "KIND\tAT START\tCHANGES")
	for _, k := range slices.Sorted(maps.Keys(counts)) {
		fmt.Fprintf(tw, "%s\t%d\t%d\n", k, counts[k][0], counts[k][1])
	}
	tw.Flush()
	if l := leftOut(plan); l != "" {
		fmt.Fprintf(w, "left out: %s\n", l)
	}
	const first = 10
	for i, st := range plan.Changes {
		if i == first {
			fmt.Fprintf(w, "... and %d more change(s)\n", len(plan.Changes)-first)
			break
		}
		fmt.Fprintf(w, "  +%v %s\n", scaled(st.At, speed), st.String())
	}
	if speed == 0 {
		fmt.Fprintf(w, "duration: as fast as the target takes the writes (%v recorded)\n", plan.Span.Round(time.Millisecond))
		return
	}
	fmt.Fprintf(w, "duration: %v at speed %v (%v recorded), after the state at the start\n", scaled(plan.Span, speed), speed, plan.Span.Round(time.Millisecond))
}

func scaled(d time.Duration, speed float64) time.Duration {
	if speed == 0 {
		return 0
	}
	return time.Duration(float64(d) / speed).Round(time.Millisecond)
}

// printResult prints the push's summary.
func printResult(w io.Writer, plan *push.Plan, res *push.Result) {
	if res == nil {
		return
	}
	how := "pushed"
	if res.Stopped {
		how = "stopped: pushed"
	}
	fmt.Fprintf(w, "kwrec: push: %s %d of %d write(s) in %v; lateness p50 %v, p99 %v, max %v; errors: %s\n",
		how, res.Pushed, res.Total, res.Elapsed.Round(time.Millisecond),
		res.Percentile(50).Round(time.Millisecond), res.Percentile(99).Round(time.Millisecond), res.Percentile(100).Round(time.Millisecond), res.ErrorSummary())
	if !res.ChangesAt.IsZero() {
		// For kwrec diff --from and kwrec cut of a recording of the target.
		fmt.Fprintf(w, "kwrec: push: changes from %s\n", res.ChangesAt.UTC().Format(time.RFC3339Nano))
	}
	if l := leftOut(plan); l != "" {
		fmt.Fprintf(w, "kwrec: push: left out: %s\n", l)
	}
}

// leftOut words what plan leaves out: "cluster's own 188, owned 6,
// unchanged updates 12", "" for nothing.
func leftOut(plan *push.Plan) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(plan.Left)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, plan.Left[k]))
	}
	if plan.Unchanged > 0 {
		parts = append(parts, fmt.Sprintf("unchanged updates %d", plan.Unchanged))
	}
	return strings.Join(parts, ", ")
}
