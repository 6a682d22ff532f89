package push

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/clock"
)

// ErrRefused means the target refused a write and --on-error stop ended
// the push there.
var ErrRefused = errors.New("the target refused a write")

// ErrTargetGone means the target stopped answering (no connection, or
// 5xx) through every retry.
var ErrTargetGone = errors.New("the target does not answer")

// OnError is what a push does when the target refuses a write.
type OnError int

const (
	// Skip names the refused write on [Config.Log], counts it, and goes
	// on (--on-error skip, the default).
	Skip OnError = iota
	// Stop ends the push with an error wrapping [ErrRefused] (--on-error
	// stop).
	Stop
)

// Config configures [Run]. Client is required; the zero value of every
// other field works.
type Config struct {
	// Client writes to the target; its rest.Config sets QPS and burst.
	Client dynamic.Interface
	// Speed scales the recorded times: 2 pushes twice as fast, 0 (the
	// default) as fast as the target takes the writes.
	Speed float64
	// OnError is [Skip] (default) or [Stop].
	OnError OnError
	// HasStatus reports whether a resource has a status subresource;
	// nil finds out: the push tries /status, and a 404 there means the
	// resource has none.
	HasStatus func(schema.GroupVersionResource) bool
	// Workers is how many writes run at once: of the state at the start,
	// and of changes due while others are in flight (see the package
	// doc's Time); 0 means 8.
	Workers int
	// Clock paces the changes; nil is the real clock.
	Clock clock.WithTicker
	// Log gets one line per refused write; nil discards them.
	Log io.Writer
	// Progress gets the progress line every second and at the end; nil
	// discards it.
	Progress io.Writer
	// Backoff is how a write the target did not answer is retried
	// before [ErrTargetGone]; the zero value is 200 ms doubling to 5 s,
	// 6 tries.
	Backoff wait.Backoff
}

// Result is what a push did.
type Result struct {
	// Pushed counts the writes the target took; Total is the plan's.
	Pushed, Total int
	// Errors counts refused writes by reason (AlreadyExists, Invalid,
	// NotFound, Forbidden, ...).
	Errors map[string]int
	// Lateness is, for each change made, how long after its recorded
	// time (scaled by the speed) the target had taken it: the push's lag.
	Lateness []time.Duration
	// Elapsed is the push's duration, state included.
	Elapsed time.Duration
	// Stopped is true when the context ended the push (SIGTERM) before
	// the plan's end.
	Stopped bool
	// ChangesAt is when the push began the changes, the state at the
	// start made: the time the window's start is at on the target.
	ChangesAt time.Time
}

// Percentile returns the p-th percentile (0 to 100) of the lateness, 0
// when no change was made.
func (r *Result) Percentile(p float64) time.Duration {
	if len(r.Lateness) == 0 {
		return 0
	}
	l := slices.Clone(r.Lateness)
	slices.Sort(l)
	i := int(float64(len(l)-1) * p / 100)
	return l[i]
}

// ErrorSummary is "AlreadyExists 2, Invalid 1", by reason, or "none".
func (r *Result) ErrorSummary() string {
	if len(r.Errors) == 0 {
		return "none"
	}
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(r.Errors)) {
		parts = append(parts, fmt.Sprintf("%s %d", k, r.Errors[k]))
	}
	return strings.Join(parts, ", ")
}

// pusher is one push in progress.
type pusher struct {
	cfg  Config
	clk  clock.WithTicker
	mu   sync.Mutex
	res  Result
	uids map[types.UID]types.UID // recorded → target
	lag  time.Duration           // the latest change's
	crds map[string]bool         // group/resource of the CRDs pushed
	// rvs are the resourceVersions the push last wrote each object at
	// (by [Step.id]): an update goes over it, and reads the object only
	// when the target answers that someone wrote it since.
	rvs map[string]string
	// statusless are the resources whose /status answered 404.
	statusless map[schema.GroupVersionResource]bool
	start      time.Time
	// out serializes the lines of Log and Progress, often one stderr.
	out sync.Mutex
}

// say writes line to w, one line at a time whoever writes.
func (p *pusher) say(w io.Writer, line string) {
	p.out.Lock()
	defer p.out.Unlock()
	fmt.Fprintln(w, line)
}

// Run pushes plan into the target cfg.Client writes to: the namespaces
// and the state at the start, then each change at its recorded time
// divided by cfg.Speed. It returns when the plan is done, when ctx ends
// (Result.Stopped, no error), or on an error wrapping [ErrRefused] (with
// [Stop]) or [ErrTargetGone]; the Result is what was done either way.
func Run(ctx context.Context, plan *Plan, cfg Config) (*Result, error) {
	p := &pusher{cfg: cfg, clk: cfg.Clock, uids: map[types.UID]types.UID{}, crds: map[string]bool{},
		statusless: map[schema.GroupVersionResource]bool{}, rvs: map[string]string{}}
	if p.clk == nil {
		p.clk = clock.RealClock{}
	}
	if p.cfg.Workers <= 0 {
		p.cfg.Workers = 8
	}
	if p.cfg.Backoff.Steps == 0 {
		p.cfg.Backoff = wait.Backoff{Duration: 200 * time.Millisecond, Factor: 2, Steps: 6, Cap: 5 * time.Second}
	}
	if p.cfg.Log == nil {
		p.cfg.Log = io.Discard
	}
	p.res = Result{Total: len(plan.Namespaces) + len(plan.Start) + len(plan.Changes), Errors: map[string]int{}}
	p.start = p.clk.Now()
	stopProgress := p.progress()
	err := p.run(ctx, plan)
	stopProgress()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.res.Elapsed = p.clk.Since(p.start)
	if ctx.Err() != nil && !errors.Is(err, ErrRefused) && !errors.Is(err, ErrTargetGone) {
		p.res.Stopped, err = true, nil
	}
	res := p.res
	return &res, err
}

// run makes the namespaces, the state tier by tier, then the changes.
func (p *pusher) run(ctx context.Context, plan *Plan) error {
	for _, ns := range plan.Namespaces {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("v1")
		u.SetKind("Namespace")
		u.SetName(ns)
		st := &Step{Verb: Create, GVR: schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, Name: ns, Kind: "Namespace", Object: u}
		if err := p.step(ctx, st, true); err != nil {
			return err
		}
	}
	for i := 0; i < len(plan.Start); {
		j := i + 1
		for j < len(plan.Start) && tier(&plan.Start[j]) == tier(&plan.Start[i]) && plan.Start[j].depth == plan.Start[i].depth {
			j++
		}
		if err := p.parallel(ctx, plan.Start[i:j]); err != nil {
			return err
		}
		if tier(&plan.Start[i]) == 1 {
			if err := p.established(ctx, plan.Start[i:j]); err != nil {
				return err
			}
		}
		i = j
	}
	return p.changes(ctx, plan.Changes)
}

// parallel makes steps, which depend on none of each other, with
// cfg.Workers at once.
func (p *pusher) parallel(ctx context.Context, steps []Step) error {
	var wg sync.WaitGroup
	var failed atomic.Bool // no step starts after one fails
	sem := make(chan struct{}, p.cfg.Workers)
	errs := make([]error, len(steps))
	for i := range steps {
		sem <- struct{}{}
		if ctx.Err() != nil || failed.Load() {
			break
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if errs[i] = p.step(ctx, &steps[i], false); errs[i] != nil {
				failed.Store(true)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// changes makes each change at its time, in a [flight]: as soon as it
// is due and what it depends on is done, cfg.Workers at once.
func (p *pusher) changes(ctx context.Context, steps []Step) error {
	start := p.clk.Now()
	p.mu.Lock()
	p.res.ChangesAt = start
	p.mu.Unlock()
	dues := dueTimes(steps, start, p.cfg.Speed)
	f := newFlight(p.cfg.Workers)
	for i := range steps {
		if p.sleepUntil(ctx, dues[i]) != nil {
			break // stopped: Run says so
		}
		started := f.start(&steps[i], func() error {
			err := p.step(ctx, &steps[i], false)
			if p.cfg.Speed > 0 {
				p.mu.Lock()
				p.lag = max(p.clk.Since(dues[i]), 0)
				p.res.Lateness = append(p.res.Lateness, p.lag)
				p.mu.Unlock()
			}
			return err
		})
		if !started {
			break
		}
	}
	return f.wait()
}

// dueTimes returns when each of steps is due: its recorded time from the
// window's start divided by speed, after start, but never before a step
// before it; at speed 0, start. Changes come in the order the server
// made them (resourceVersion); their recorded times are when each watch
// delivered them, and watches of distinct resources deliver apart (on a
// loaded recorder by hundreds of milliseconds): a change the server made
// after another cannot be made before it, and is due with it. Its
// lateness is then the push's, not the recorder's.
func dueTimes(steps []Step, start time.Time, speed float64) []time.Time {
	dues := make([]time.Time, len(steps))
	var at time.Duration
	for i := range steps {
		if speed > 0 {
			at = max(at, time.Duration(float64(steps[i].At)/speed))
		}
		dues[i] = start.Add(at)
	}
	return dues
}

// sleepUntil waits on the clock until t, or for ctx.
func (p *pusher) sleepUntil(ctx context.Context, t time.Time) error {
	d := t.Sub(p.clk.Now())
	if d <= 0 {
		return ctx.Err()
	}
	tm := p.clk.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-tm.C():
		return nil
	}
}

// step makes one write, retried while the target does not answer. A
// refusal is logged and counted (and returned with [Stop]); tolerate
// lets an AlreadyExists pass (a namespace the target already has).
func (p *pusher) step(ctx context.Context, st *Step, tolerate bool) error {
	err := p.retried(ctx, st, func() error { return p.write(ctx, st) })
	switch {
	case err == nil, tolerate && apierrors.IsAlreadyExists(err):
		p.mu.Lock()
		p.res.Pushed++
		p.mu.Unlock()
		return nil
	case ctx.Err() != nil:
		return nil
	case errors.Is(err, ErrTargetGone):
		return err
	}
	reason := string(apierrors.ReasonForError(err))
	if reason == "" {
		reason = "Unknown"
	}
	p.mu.Lock()
	p.res.Errors[reason]++
	p.mu.Unlock()
	p.say(p.cfg.Log, fmt.Sprintf("kwrec: push: refused: %s: %s: %v", st, reason, err))
	if p.cfg.OnError == Stop {
		return fmt.Errorf("%w: %s: %v (--on-error skip pushes on past refusals)", ErrRefused, st, err)
	}
	return nil
}

// retried runs write until the target answers it, with cfg.Backoff, or
// returns an error wrapping [ErrTargetGone]. A 429 never gets here:
// client-go retries it itself, after the Retry-After the target sends.
// A create's 404 of a resource of a CRD the push made is retried too:
// the API server serves a new CRD's resource a moment after it is
// established.
func (p *pusher) retried(ctx context.Context, st *Step, write func() error) error {
	b := p.cfg.Backoff
	for {
		err := write()
		gone := err != nil && !isAnswer(err)
		served := apierrors.IsNotFound(err) && st.Verb == Create && p.crd(st.GVR)
		if !gone && !served {
			return err
		}
		if b.Steps <= 1 {
			if gone {
				return fmt.Errorf("%w: %s: %v; is the cluster up? check --kubeconfig and --server", ErrTargetGone, st, err)
			}
			return err
		}
		if err := p.sleepUntil(ctx, p.clk.Now().Add(b.Step())); err != nil {
			return err
		}
	}
}

// isAnswer reports whether err is the target's answer to a write (a
// status it sent back), not a failure to reach it or a 5xx of an
// overloaded or restarting server.
func isAnswer(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	code := st.Status().Code
	return code < 500 || code == 501
}

func (p *pusher) crd(gvr schema.GroupVersionResource) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.crds[gvr.Group+"/"+gvr.Resource]
}

// write makes one step's write: the object, then its status. The status
// goes with the object too: a resource without a status subresource
// keeps it from there, one with it ignores it, and takes it through
// /status, tried once per resource: a 404 there means it has none.
func (p *pusher) write(ctx context.Context, st *Step) error {
	u := p.repoint(st.Object.DeepCopy())
	p.repointJob(st, u)
	if st.Status != nil {
		u.Object["status"] = st.Status
	}
	ri := p.cfg.Client.Resource(st.GVR).Namespace(st.Namespace)
	var got *unstructured.Unstructured
	var err error
	switch st.Verb {
	case Delete:
		p.mu.Lock()
		delete(p.rvs, st.id())
		p.mu.Unlock()
		return ri.Delete(ctx, st.Name, metav1.DeleteOptions{})
	case Create:
		got, err = ri.Create(ctx, u, metav1.CreateOptions{FieldManager: FieldManager})
	case Update:
		if st.MetaWithStatus && p.hasStatus(st.GVR) {
			return p.metaWithStatus(ctx, ri, st, u)
		}
		got, err = p.update(ctx, ri, st.id(), u)
	}
	if err != nil {
		return err
	}
	p.created(st, got)
	if st.Status == nil || !p.hasStatus(st.GVR) {
		return nil
	}
	err = p.updateStatus(ctx, ri, st.id(), got, st.Status)
	if apierrors.IsNotFound(err) {
		p.mu.Lock()
		p.statusless[st.GVR] = true
		p.mu.Unlock()
		return nil
	}
	return err
}

// metaWithStatus writes u, whose metadata and status changed, through
// /status, then PUTs it if the target kept the metadata out of that.
func (p *pusher) metaWithStatus(ctx context.Context, ri dynamic.ResourceInterface, st *Step, u *unstructured.Unstructured) error {
	cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	u.SetResourceVersion(cur.GetResourceVersion())
	if err := p.updateStatus(ctx, ri, st.id(), u, st.Status); err != nil {
		return err
	}
	got, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
	if err != nil {
		return err
	}
	if equalJSON(got.GetAnnotations(), st.Object.GetAnnotations()) && equalJSON(got.GetLabels(), st.Object.GetLabels()) {
		return nil
	}
	_, err = p.update(ctx, ri, st.id(), u)
	return err
}

// hasStatus reports whether gvr has a status subresource: as
// cfg.HasStatus says, else until a write to it answered 404.
func (p *pusher) hasStatus(gvr schema.GroupVersionResource) bool {
	if p.cfg.HasStatus != nil {
		return p.cfg.HasStatus(gvr)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.statusless[gvr]
}

// updateStatus PUTs status over u's through /status, at the target's
// current resourceVersion when a controller wrote u since.
func (p *pusher) updateStatus(ctx context.Context, ri dynamic.ResourceInterface, id string, u *unstructured.Unstructured, status map[string]any) error {
	for range 3 {
		u.Object["status"] = status
		got, err := ri.UpdateStatus(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			p.rv(id, got.GetResourceVersion())
		}
		if !apierrors.IsConflict(err) {
			return err
		}
		if u, err = ri.Get(ctx, u.GetName(), metav1.GetOptions{}); err != nil {
			return err
		}
	}
	return fmt.Errorf("the status of %s %s changed under three updates in a row", u.GetKind(), key(u.GetNamespace(), u.GetName()))
}

// FieldManager is the field manager of a push's writes.
const FieldManager = "kwrec-push"

// update PUTs u over the target's object at the resourceVersion the push
// last wrote it at; when the target answers 409 (its controllers wrote
// it since) or the push never wrote it, it reads the object's first.
func (p *pusher) update(ctx context.Context, ri dynamic.ResourceInterface, id string, u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	rv := p.rv(id, "")
	for range 3 {
		if rv == "" {
			cur, err := ri.Get(ctx, u.GetName(), metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			rv = cur.GetResourceVersion()
		}
		u.SetResourceVersion(rv)
		got, err := ri.Update(ctx, u, metav1.UpdateOptions{FieldManager: FieldManager})
		if err == nil {
			p.rv(id, got.GetResourceVersion())
		}
		if !apierrors.IsConflict(err) {
			return got, err
		}
		rv = "" // written since: read it again
	}
	return nil, fmt.Errorf("%s %s changed under three updates in a row", u.GetKind(), key(u.GetNamespace(), u.GetName()))
}

// rv returns the resourceVersion the push last wrote object id at, ""
// when it knows none, and files set as the new one unless "".
func (p *pusher) rv(id, set string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.rvs[id]
	if set != "" {
		p.rvs[id] = set
	}
	return old
}

// created files the target's UID of what st made, and a CRD's resource.
func (p *pusher) created(st *Step, got *unstructured.Unstructured) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if st.UID != "" && got != nil {
		p.uids[st.UID] = got.GetUID()
	}
	if got != nil {
		p.rvs[st.id()] = got.GetResourceVersion()
	}
	if tier(st) == 1 && got != nil {
		g, _, _ := unstructured.NestedString(got.Object, "spec", "group")
		r, _, _ := unstructured.NestedString(got.Object, "spec", "names", "plural")
		p.crds[g+"/"+r] = true
	}
}

// repoint re-points u's ownerReferences at the target's UIDs of the
// owners the push made; a reference to an owner it has not made (yet,
// or refused) is dropped, as the target would delete an object whose
// owner it cannot find.
func (p *pusher) repoint(u *unstructured.Unstructured) *unstructured.Unstructured {
	refs := u.GetOwnerReferences()
	if len(refs) == 0 {
		return u
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	kept := refs[:0]
	for _, r := range refs {
		if uid, ok := p.uids[r.UID]; ok {
			r.UID = uid
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		unstructured.RemoveNestedField(u.Object, "metadata", "ownerReferences")
	} else {
		u.SetOwnerReferences(kept)
	}
	return u
}

// jobUIDLabels are the labels of the selector kube-apiserver generates
// for a Job, in its spec.selector and its Pod template, each the Job's
// UID: batch.kubernetes.io/controller-uid and the legacy controller-uid
// (k8s.io/kubernetes' batch.LegacyControllerUidLabel).
var jobUIDLabels = []string{batchv1.ControllerUidLabel, "controller-uid"}

// repointJob re-points the selector kube-apiserver generated for a Job
// (one without spec.manualSelector) at the Job's UID on the target: the
// recorded one names the recorded UID, which the target refuses
// ("`selector` not auto-generated"). A create leaves those labels out
// for the target to generate; an update, whose selector is immutable,
// names the UID the target gave the Job. Labels that do not hold the
// recorded UID are the user's, and kept.
func (p *pusher) repointJob(st *Step, u *unstructured.Unstructured) {
	if st.GVR.Group != "batch" || st.Kind != "Job" || st.UID == "" {
		return
	}
	if manual, _, _ := unstructured.NestedBool(u.Object, "spec", "manualSelector"); manual {
		return
	}
	p.mu.Lock()
	uid, known := p.uids[st.UID]
	p.mu.Unlock()
	for _, path := range [][]string{{"spec", "selector", "matchLabels"}, {"spec", "template", "metadata", "labels"}} {
		m, found, _ := unstructured.NestedStringMap(u.Object, path...)
		if !found {
			continue
		}
		for _, l := range jobUIDLabels {
			switch {
			case m[l] != string(st.UID):
			case known:
				m[l] = string(uid)
			default:
				delete(m, l)
			}
		}
		if len(m) == 0 {
			unstructured.RemoveNestedField(u.Object, path...)
		} else {
			_ = unstructured.SetNestedStringMap(u.Object, m, path...)
		}
	}
	if sel, _, _ := unstructured.NestedMap(u.Object, "spec", "selector"); sel != nil && len(sel) == 0 {
		unstructured.RemoveNestedField(u.Object, "spec", "selector")
	}
}

// established waits until each CRD of steps the target took is
// Established, polling on the clock, at most a minute.
func (p *pusher) established(ctx context.Context, steps []Step) error {
	ri := p.cfg.Client.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"})
	deadline := p.clk.Now().Add(time.Minute)
	for i := range steps {
		for {
			u, err := ri.Get(ctx, steps[i].Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				break // refused, said so
			}
			if err == nil && isEstablished(u) {
				break
			}
			if p.clk.Now().After(deadline) {
				return fmt.Errorf("%w: CustomResourceDefinition %s is not established after a minute", ErrTargetGone, steps[i].Name)
			}
			if err := p.sleepUntil(ctx, p.clk.Now().Add(100*time.Millisecond)); err != nil {
				return nil
			}
		}
	}
	return nil
}

func isEstablished(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Established" && m["status"] == "True" {
			return true
		}
	}
	return false
}

// progress writes the progress line to cfg.Progress every second until
// the returned function is called, which writes the last one.
func (p *pusher) progress() (stop func()) {
	if p.cfg.Progress == nil {
		return func() {}
	}
	t := p.clk.NewTicker(time.Second)
	done, exited := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(exited)
		for {
			select {
			case <-done:
				return
			case <-t.C():
				p.say(p.cfg.Progress, p.line())
			}
		}
	}()
	return func() {
		t.Stop()
		close(done)
		<-exited
		p.say(p.cfg.Progress, p.line())
	}
}

// line is the progress line: "kwrec: push: 120/400 pushed, lag 12ms,
// errors: AlreadyExists 2".
func (p *pusher) line() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return fmt.Sprintf("kwrec: push: %d/%d pushed, lag %v, errors: %s", p.res.Pushed, p.res.Total, p.lag.Round(time.Millisecond), p.res.ErrorSummary())
}
