package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/url"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/watcher"
)

// target is one collection a cassette lists or watches, with the options
// its recorded requests used, so the watcher asks the same questions.
type target struct {
	gvr       schema.GroupVersionResource
	namespace string
	cfg       watcher.Config
	label     string
}

// targets finds the collections of c in the order first seen.
func targets(ivs []*cassettes.Interaction) []target {
	seen := map[string]*target{}
	var out []*target
	for _, in := range ivs {
		if in.Request.Method != "GET" {
			continue
		}
		if _, ok := table.Wants(in.Request.Header.Get("Accept")); ok {
			continue // the Table form recorded for kubectl, not a watcher's request
		}
		u, err := url.Parse(in.Request.URL)
		if err != nil {
			continue
		}
		p, ok := apipath.Parse(u.Path)
		if !ok || p.Name != "" { // a named object is not a collection
			continue
		}
		gvr, ns := p.GroupVersionResource(), p.Namespace
		key := ns + "/" + gvr.String()
		t := seen[key]
		if t == nil {
			t = &target{gvr: gvr, namespace: ns, label: gvr.Resource}
			if gvr.Group != "" {
				t.label += "." + gvr.Group
			}
			seen[key] = t
			out = append(out, t)
		}
		q := u.Query()
		t.cfg.LabelSelector = q.Get("labelSelector")
		t.cfg.FieldSelector = q.Get("fieldSelector")
		if q.Get("sendInitialEvents") == "true" {
			t.cfg.InitialList = watcher.StreamingList
		}
		if l, err := strconv.ParseInt(q.Get("limit"), 10, 64); err == nil && l > 0 && q.Get("watch") == "" {
			t.cfg.PageSize = l
		}
	}
	res := make([]target, len(out))
	for i, t := range out {
		res[i] = *t
	}
	return res
}

type replayFlags struct {
	edits    editFlags
	speed    float64
	strict   bool
	asJSON   bool
	maxCount int
}

func newReplayCmd() *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay FILE",
		Short: "Replay a cassette through the watcher and print its events",
		Long: `Replay a cassette offline through kwrec's watcher (the one that runs against
live clusters) and print its events, one per line: Init, InitApply NS/NAME,
InitDone, Apply NS/NAME, Delete NS/NAME, Error(...). Edit flags inject
failures; the watcher recovers as it would from a real server (a 410 leads to
a re-list, a reset to a re-watch from the last resourceVersion), answered
from the recorded timeline of each collection.

The replay ends when the cassette is consumed.`,
		Example: `  kwrec replay cm.kwrec.zst
  kwrec replay cm.kwrec.zst --watch-error request=2,after=1,code=410
  kwrec replay cm.kwrec.zst --speed 1 --json
  kwrec replay 'rec-*.kwrec.zst'   # the parts of kwrec record --max-size, as one`,
		Args: oneCassette,
		RunE: func(cmd *cobra.Command, args []string) error {
			return replayCassette(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), args[0], &f)
		},
	}
	cmd.Flags().Float64Var(&f.speed, "speed", 0, "replay speed: 1 real time, 10 ten times faster, 0 as fast as the client reads")
	cmd.Flags().BoolVar(&f.strict, "strict", false, "answer recorded requests only (no Kubernetes-aware recovery)")
	cmd.Flags().BoolVar(&f.asJSON, "json", false, "print one JSON object per event")
	cmd.Flags().IntVar(&f.maxCount, "max-events", 10000, "stop after this many events (a guard against a replay that loops)")
	f.edits.add(cmd)
	return cmd
}

// warnUnfired tells about every edit no client reached: a failure the
// user meant to inject that never happened.
func warnUnfired(w io.Writer, r *replay.Replayer) {
	for _, e := range r.Edits() {
		if e.Fired == 0 {
			fmt.Fprintf(w, "kwrec: warning: edit %s did not fire: no client reached %s\n", e.Edit, e.Where)
		}
	}
}

// checkSpeed validates a --speed flag.
func checkSpeed(v float64) error {
	if !(v >= 0) || math.IsInf(v, 0) {
		return fmt.Errorf("--speed %v: want a number >= 0 (0: as fast as the client reads, 1: real time, 10: ten times faster)", v)
	}
	return nil
}

type eventLine struct {
	Resource        string `json:"resource,omitempty"`
	Type            string `json:"type"`
	Key             string `json:"key,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
	Error           string `json:"error,omitempty"`
}

func replayCassette(ctx context.Context, out, stderr io.Writer, path string, f *replayFlags) error {
	if err := checkSpeed(f.speed); err != nil {
		return err
	}
	edits, err := f.edits.parse()
	if err != nil {
		return err
	}
	r, err := replay.Open(path, replay.Options{Speed: f.speed, Edits: edits, Strict: f.strict, ErrorWhenExhausted: true})
	if err != nil {
		return err
	}
	defer r.Close()
	defer warnUnfired(stderr, r)
	ts := targets(r.Interactions())
	if len(ts) == 0 {
		return fmt.Errorf("%s: no list or watch of a collection to replay", path)
	}
	dyn, err := dynamic.NewForConfig(r.Config())
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	o := &replayOutput{out: out, enc: json.NewEncoder(out), asJSON: f.asJSON, maxCount: f.maxCount, cancel: cancel}
	var wg sync.WaitGroup
	for _, t := range ts {
		var ri dynamic.ResourceInterface = dyn.Resource(t.gvr)
		if t.namespace != "" {
			ri = dyn.Resource(t.gvr).Namespace(t.namespace)
		}
		w := watcher.New[*unstructured.Unstructured](watcher.FromDynamic(ri), t.cfg)
		resource := ""
		if len(ts) > 1 {
			resource = t.label
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			o.watch(ctx, w, resource)
		}()
	}
	wg.Wait()
	if o.failure != nil {
		return fmt.Errorf("%s: %w", path, o.failure)
	}
	if o.count >= f.maxCount {
		return fmt.Errorf("stopped after %d events (--max-events); the cassette is not consumed, the watcher may be looping", o.count)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	fmt.Fprintf(stderr, "kwrec: replayed %d event(s) from %s; the cassette is consumed\n", o.count, path)
	return nil
}

// replayOutput prints the events of a replay's watchers, one at a time,
// and keeps what ends the replay: the count of events printed, which
// stops it at --max-events, and the first failure.
type replayOutput struct {
	out      io.Writer
	enc      *json.Encoder
	asJSON   bool
	maxCount int
	cancel   context.CancelFunc // stops the replay

	mu      sync.Mutex
	count   int
	failure error
}

// watch prints the events of w, named by resource when it is not "",
// until the cassette is consumed, ctx is done, or the cassette cannot
// answer w: then it keeps the failure and stops the replay.
func (o *replayOutput) watch(ctx context.Context, w *watcher.Watcher[*unstructured.Unstructured], resource string) {
	for ev := range w.Events(ctx) {
		if ev.Type == watcher.Error && replay.IsExhausted(ev.Err) {
			return // the cassette is consumed: this watcher is done
		}
		if ev.Type == watcher.Error && replay.IsNoMatch(ev.Err) {
			// The cassette cannot answer what the watcher asks
			// (strict mode, or state it cannot rebuild): retrying
			// would ask the same forever.
			o.mu.Lock()
			if o.failure == nil {
				o.failure = ev.Err
			}
			o.mu.Unlock()
			o.cancel()
			return
		}
		o.print(ev, resource)
	}
}

// print prints ev, named by resource when it is not "", as a line of text
// or JSON, and stops the replay at --max-events.
func (o *replayOutput) print(ev watcher.Event[*unstructured.Unstructured], resource string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	line := eventLine{Type: ev.Type.String(), Resource: resource}
	if ev.Type == watcher.Error {
		line.Error = ev.Err.Error()
	} else if ev.Type != watcher.Init && ev.Type != watcher.InitDone {
		line.Key, line.ResourceVersion = watcher.Key(ev.Object), ev.Object.GetResourceVersion()
	}
	if o.asJSON {
		o.enc.Encode(line)
	} else {
		prefix := ""
		if line.Resource != "" {
			prefix = line.Resource + ": "
		}
		fmt.Fprintln(o.out, prefix+ev.String())
	}
	o.count++
	if o.count >= o.maxCount {
		o.cancel()
	}
}
