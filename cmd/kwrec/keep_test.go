package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	clocktesting "k8s.io/utils/clock/testing"
)

// keptParts copies internal/cut's three-part recording to a temporary
// directory and returns the -o its parts are named from.
func keptParts(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	for _, n := range []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"} {
		b, err := os.ReadFile(filepath.Join("internal", "cut", "testdata", n))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, n), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "rec.kwrec")
}

func TestRetentionDropsTheOldestPartsAfterWritingTheStateBeforeTheOldestKept(t *testing.T) {
	start := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name     string
		keep     int
		keepFor  time.Duration
		ages     []time.Duration // how long ago parts 1, 2 and 3 ended (part k+1 started)
		newest   int
		finished bool
		left     []string
		log      string
	}{{
		name:   "keep 2 while part 3 is written drops part 1: the state where part 2 starts replaces it",
		keep:   2,
		newest: 3,
		left:   []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"},
		log:    "kwrec: keep: dropped part 1; REC-0001.kwrec, rebased, now holds only the state at resourceVersion 100, where part 2 starts (2352 bytes)\n",
	}, {
		name:   "keep 3 of 3 parts deletes nothing",
		keep:   3,
		newest: 3,
		left:   []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"},
	}, {
		name:    "keep-for 1h deletes the parts that ended before the last hour",
		keepFor: time.Hour,
		ages:    []time.Duration{2 * time.Hour, 30 * time.Minute},
		newest:  3,
		left:    []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"},
		log:     "kwrec: keep: dropped part 1; REC-0001.kwrec, rebased, now holds only the state at resourceVersion 100, where part 2 starts (2352 bytes)\n",
	}, {
		name:    "keep-for keeps the whole part before the one being written however old",
		keepFor: time.Hour,
		ages:    []time.Duration{3 * time.Hour, 2 * time.Hour},
		newest:  3,
		left:    []string{"rec-0001.kwrec", "rec-0002.kwrec", "rec-0003.kwrec"},
		log:     "kwrec: keep: dropped part 1; REC-0001.kwrec, rebased, now holds only the state at resourceVersion 100, where part 2 starts (2352 bytes)\n",
	}, {
		name:     "keep-for at the end of a recording may keep its last part alone, after its state",
		keepFor:  time.Hour,
		ages:     []time.Duration{3 * time.Hour, 2 * time.Hour, 0},
		newest:   3,
		finished: true,
		left:     []string{"rec-0002.kwrec", "rec-0003.kwrec"},
		log:      "kwrec: keep: dropped parts 1-2; REC-0002.kwrec, rebased, now holds only the state at resourceVersion 103, where part 3 starts (2483 bytes)\n",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			out := keptParts(t)
			var log bytes.Buffer
			clk := clocktesting.NewFakeClock(start)
			r := newRetention(retentionOptions{Out: out, Keep: tc.keep, KeepFor: tc.keepFor, Clock: clk, Log: &log})
			// Parts end in order, the oldest first.
			for k := range tc.ages {
				clk.SetTime(start.Add(3*time.Hour - tc.ages[k]))
				r.ended[k+1] = clk.Now()
			}
			clk.SetTime(start.Add(3 * time.Hour))
			r.seen = tc.newest
			if err := r.apply(tc.newest, tc.finished); err != nil {
				t.Fatal(err)
			}
			m, _ := filepath.Glob(filepath.Join(filepath.Dir(out), "rec-*.kwrec"))
			var left []string
			for _, f := range m {
				left = append(left, filepath.Base(f))
			}
			if d := cmp.Diff(tc.left, left); d != "" {
				t.Errorf("parts left (-want +got):\n%s", d)
			}
			got := string(bytes.ReplaceAll(log.Bytes(), []byte(filepath.Join(filepath.Dir(out), "rec-")), []byte("REC-")))
			if got != tc.log {
				t.Errorf("log:\n%s\nwant:\n%s", got, tc.log)
			}
			// What is left is whole: it replays from its oldest part.
			if msg := lintKept(m); msg != "" {
				t.Errorf("the kept parts are not whole: %s", msg)
			}
		})
	}
}

func TestRetentionWaitsForTheOldestEndedPartToAgePastKeepFor(t *testing.T) {
	start := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		keepFor time.Duration
		seen    int           // the part being written
		age     time.Duration // how long ago part 1 ended
		want    time.Duration
		ok      bool
	}{
		{"a part that ended 30m ago under --keep-for 1h expires in 30m", time.Hour, 3, 30 * time.Minute, 30*time.Minute + time.Millisecond, true},
		{"a part already past --keep-for expires at once", time.Hour, 3, 2 * time.Hour, time.Millisecond, true},
		{"the newest whole part never expires", time.Hour, 2, 2 * time.Hour, 0, false},
		{"without --keep-for nothing expires", 0, 3, 2 * time.Hour, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(start)
			r := newRetention(retentionOptions{Out: "rec.kwrec", KeepFor: tc.keepFor, Clock: clk})
			r.ended[1] = start
			r.seen = tc.seen
			clk.SetTime(start.Add(tc.age))
			got, ok := r.untilExpiry()
			if got != tc.want || ok != tc.ok {
				t.Errorf("untilExpiry() = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestBudgetDropsTheFewestPartsThatLeaveRoomForTheState(t *testing.T) {
	for _, tc := range []struct {
		name  string
		b     budget
		sizes []int64
		drop  int
		fits  bool
	}{{
		name:  "without a state, the parts kept leave room for the part being written",
		b:     budget{total: 4000, part: 1000, largest: 1000},
		sizes: []int64{1000, 1000, 1000, 1000},
		drop:  1,
		fits:  true,
	}, {
		name:  "parts that fit with the state and the part being written are all kept",
		b:     budget{total: 4000, part: 1000, largest: 1000, state: 500},
		sizes: []int64{1000, 1000},
		fits:  true,
	}, {
		name:  "a state of half a part takes a part's place",
		b:     budget{total: 4000, part: 1000, largest: 1000, state: 500},
		sizes: []int64{1000, 1000, 1000},
		drop:  1,
		fits:  true,
	}, {
		name:  "parts that end a flush past the size leave room for the largest",
		b:     budget{total: 4000, part: 1000, largest: 1300},
		sizes: []int64{1300, 1000, 1000},
		drop:  1,
		fits:  true,
	}, {
		name:  "a state larger than a part leaves room beside it for the next one",
		b:     budget{total: 8000, part: 1000, largest: 1000, state: 1800},
		sizes: []int64{1000, 1000, 1000, 1000, 1000},
		drop:  1,
		fits:  true,
	}, {
		name:  "at the end nothing is being written: the state and the parts fill the budget",
		b:     budget{total: 4000, part: 1000, largest: 1000, state: 500, finished: true},
		sizes: []int64{1000, 1000, 1000, 1000},
		drop:  1,
		fits:  true,
	}, {
		name:  "the newest whole part is kept even when it and the state do not fit",
		b:     budget{total: 2000, part: 1000, largest: 1000, state: 1500},
		sizes: []int64{1000, 1000},
		drop:  1,
		fits:  false,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			drop, fits := tc.b.drop(tc.sizes)
			if drop != tc.drop || fits != tc.fits {
				t.Errorf("drop(%v) = %d, %v; want %d, %v", tc.sizes, drop, fits, tc.drop, tc.fits)
			}
		})
	}
}

// errKilled is what a test's Step hook returns to kill the retention.
var errKilled = errors.New("killed")

func TestRetentionKilledAtAnyStepLeavesAWholeRecordingWithinBudget(t *testing.T) {
	for _, tc := range []struct {
		name    string
		ext     string // of the parts
		maxSize int64
		keep    int
		events  int
	}{{
		name:    "plain parts kept 4 by 4, the state under half a part",
		ext:     ".kwrec",
		maxSize: 6000,
		keep:    4,
		events:  240,
	}, {
		name:    "compressed parts kept 3 by 3",
		ext:     ".kwrec.zst",
		maxSize: 1500,
		keep:    3,
		events:  400,
	}, {
		name:    "plain parts kept 2 by 2, the least, over the budget by the state but within a part more",
		ext:     ".kwrec",
		maxSize: 8000,
		keep:    2,
		events:  400,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			src := keepRecording(t, t.TempDir(), tc.ext, tc.maxSize, tc.events)
			if len(src) < tc.keep+3 {
				t.Fatalf("the recording has %d parts: too few to drop any", len(src))
			}
			limit := int64(tc.keep)*tc.maxSize + tc.maxSize
			// The whole run, every step counted.
			run := keepRun{t: t, src: src, ext: tc.ext, opts: retentionOptions{Keep: tc.keep, MaxSize: tc.maxSize}, limit: limit}
			if err := run.play(-1); err != nil {
				t.Fatal(err)
			}
			steps := run.steps
			if steps == 0 {
				t.Fatal("the retention took no step")
			}
			run.check(len(src))
			t.Logf("%d parts, %d steps; disk peak %d bytes, budget and a part %d; the state %d bytes", len(src), steps, run.peak, limit, run.state)
			// Killed before each step.
			for i := range steps {
				kill := keepRun{t: t, src: src, ext: tc.ext, opts: retentionOptions{Keep: tc.keep, MaxSize: tc.maxSize}, limit: limit}
				err := kill.play(i)
				want := fmt.Sprintf("keeping parts from %s: killed", cassettes.PartName(kill.out, kill.at.Part))
				if err == nil || err.Error() != want || !errors.Is(err, errKilled) {
					t.Fatalf("killed before step %d (%s %s): got %v\nwant %s", i, kill.at.Op, filepath.Base(kill.at.Name), err, want)
				}
				kill.check(kill.written)
			}
		})
	}
}

// keepRun plays a recorder writing the parts src under a retention: each
// part on disk first as its header line alone (a part just started), the
// retention's pass run, then the whole part; the last pass at the end.
type keepRun struct {
	t       *testing.T
	src     []string
	ext     string
	opts    retentionOptions
	limit   int64 // the most bytes the directory may hold
	out     string
	steps   int      // steps taken
	at      keepStep // the step killed before
	peak    int64
	written int   // the parts written whole
	state   int64 // the bytes of the last state written
}

// play plays the run, killing the retention before step kill (-1: never),
// and returns the retention's error.
func (k *keepRun) play(kill int) error {
	t := k.t
	dir := t.TempDir()
	k.out = filepath.Join(dir, "rec"+k.ext)
	k.opts.Out = k.out
	k.opts.Step = func(s keepStep) error {
		k.measure()
		if k.steps == kill {
			k.at = s
			return errKilled
		}
		k.steps++
		return nil
	}
	r := newRetention(k.opts)
	for i, p := range k.src {
		name := cassettes.PartName(k.out, i+1)
		h, err := cassettes.ReadHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		w, err := cassettes.NewWriter(f, h, cassettes.WriterOptions{Compress: strings.HasSuffix(k.ext, ".zst"), FlushInterval: time.Hour, Clock: clocktesting.NewFakeClock(time.Time{})})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		f.Close()
		k.measure()
		if i > 0 {
			r.started(i + 1)
			if err := r.apply(i+1, false); err != nil {
				return err
			}
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, b, 0o644); err != nil {
			t.Fatal(err)
		}
		k.written = i + 1
		k.measure()
	}
	err := r.apply(len(k.src), true)
	k.measure()
	k.state = r.state
	return err
}

// measure checks the bytes of every file in the run's directory against
// the limit.
func (k *keepRun) measure() {
	k.t.Helper()
	n := dirBytes(k.t, filepath.Dir(k.out))
	k.peak = max(k.peak, n)
	if n > k.limit {
		k.t.Fatalf("%d bytes on disk after %d steps: over the budget and a part, %d", n, k.steps, k.limit)
	}
}

// check checks that what the run left on disk reads as a whole
// recording (kwrec lint's reading, interactions open at the end allowed
// but for the last part written) that ends in the state of the first
// written parts of src.
func (k *keepRun) check(written int) {
	t := k.t
	t.Helper()
	parts, err := cassettes.Parts(filepath.Join(filepath.Dir(k.out), "rec-*"+k.ext))
	if err != nil {
		t.Fatal(err)
	}
	if msg := lintKept(parts); msg != "" {
		t.Fatalf("the kept parts are not whole: %s", msg)
	}
	got, err := playedForward(parts...)
	if err != nil {
		t.Fatal(err)
	}
	want, err := playedForward(k.src[:written]...)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("the kept parts' state (-whole +kept) after %d steps:\n%s", k.steps, d)
	}
}

// dirBytes is the bytes of the regular files in dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range es {
		if fi, err := e.Info(); err == nil && fi.Mode().IsRegular() {
			n += fi.Size()
		}
	}
	return n
}

// playedForward plays the recording names names forward: each list of a
// collection replaces its objects, each watch event adds, changes or
// removes one. It returns every object's resourceVersion by collection
// path and namespace/name.
func playedForward(names ...string) (map[string]map[string]string, error) {
	rd, err := cassettes.Open(names...)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	type meta struct {
		Metadata struct{ Namespace, Name, ResourceVersion string }
	}
	state := map[string]map[string]string{}
	paths, watches := map[int]string{}, map[int]bool{}
	for {
		e, err := rd.Next()
		if err == io.EOF || errors.Is(err, cassettes.ErrOpenAtEnd) {
			return state, nil
		}
		if err != nil {
			return nil, err
		}
		switch {
		case e.Request != nil:
			u, err := url.Parse(e.Request.URL)
			if err != nil {
				return nil, err
			}
			paths[e.ID], watches[e.ID] = u.Path, u.Query().Get("watch") == "true"
		case e.Frame != nil && !watches[e.ID]:
			var l struct{ Items []meta }
			if err := json.Unmarshal(e.Frame.Data, &l); err != nil {
				return nil, err
			}
			objs := map[string]string{}
			for _, o := range l.Items {
				objs[o.Metadata.Namespace+"/"+o.Metadata.Name] = o.Metadata.ResourceVersion
			}
			state[paths[e.ID]] = objs
		case e.Frame != nil:
			var ev struct {
				Type   string
				Object meta
			}
			if err := json.Unmarshal(e.Frame.Data, &ev); err != nil {
				return nil, err
			}
			objs := state[paths[e.ID]]
			key := ev.Object.Metadata.Namespace + "/" + ev.Object.Metadata.Name
			if ev.Type == "DELETED" {
				delete(objs, key)
			} else {
				objs[key] = ev.Object.Metadata.ResourceVersion
			}
		}
	}
}

// keepRecording writes a rotated recording of ConfigMaps and Namespaces,
// each listed then watched through events changes, to dir as rec+ext in
// parts of maxSize bytes, and returns the parts.
func keepRecording(t *testing.T, dir, ext string, maxSize int64, events int) []string {
	t.Helper()
	out := filepath.Join(dir, "rec"+ext)
	h := cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC), Server: "v1.37.2", Redactions: []string{"header:Authorization"}}
	w, err := cassettes.Create(out, h, cassettes.WriterOptions{MaxSize: maxSize, FlushInterval: time.Hour, Clock: clocktesting.NewFakeClock(h.RecordedAt)})
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil { // a part starts at the line after MaxSize bytes
			t.Fatal(err)
		}
	}
	const host = "https://127.0.0.1:6443"
	accept := http.Header{"Accept": {"application/json"}}
	ok := cassettes.Response{Status: 200, Latency: time.Millisecond, Header: http.Header{"Content-Type": {"application/json"}}}
	cm := func(name string, rv int) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":%q,"namespace":"default","resourceVersion":"%d"},"data":{"k":"%d"}}`, name, rv, rv)
	}
	ns := func(name string, rv int) string {
		return fmt.Sprintf(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q,"resourceVersion":"%d"}}`, name, rv)
	}
	var items []string
	for i := range 6 {
		items = append(items, cm(fmt.Sprintf("cm-%d", i), 10+i))
	}
	lists := []struct{ path, body string }{
		{"/api/v1/namespaces/default/configmaps", `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + strings.Join(items, ",") + `]}`},
		{"/api/v1/namespaces", `{"kind":"NamespaceList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + ns("default", 5) + `]}`},
	}
	for i, l := range lists {
		id, at := i+1, time.Duration(i)*time.Millisecond
		must(w.RequestAs(id, at, cassettes.Request{Method: "GET", URL: host + l.path + "?limit=500&resourceVersion=0", Header: accept}))
		must(w.Response(id, ok))
		must(w.Frame(id, cassettes.Frame{Data: []byte(l.body + "\n")}))
		must(w.End(id, cassettes.End{Reason: cassettes.EndEOF}))
	}
	for i, l := range lists {
		id, at := i+3, time.Duration(10+i)*time.Millisecond
		must(w.RequestAs(id, at, cassettes.Request{Method: "GET", URL: host + l.path + "?allowWatchBookmarks=true&resourceVersion=100&timeoutSeconds=412&watch=true", Header: accept}))
		must(w.Response(id, ok))
	}
	for i := range events {
		rv := 101 + i
		at := time.Duration(i+1) * 100 * time.Millisecond
		var ev string
		switch {
		case i%10 == 9:
			ev = `{"type":"ADDED","object":` + ns(fmt.Sprintf("ns-%d", (i/10)%4), rv) + "}"
		case i%7 == 3:
			ev = `{"type":"DELETED","object":` + cm(fmt.Sprintf("cm-%d", (i/7)%6), rv) + "}"
		case i%7 == 5:
			ev = `{"type":"ADDED","object":` + cm(fmt.Sprintf("cm-%d", (i/7)%6), rv) + "}"
		default:
			ev = `{"type":"MODIFIED","object":` + cm(fmt.Sprintf("cm-%d", i%6), rv) + "}"
		}
		id := 3
		if i%10 == 9 {
			id = 4
		}
		must(w.Frame(id, cassettes.Frame{At: at, Data: []byte(ev + "\n")}))
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	parts, err := cassettes.Parts(cassettes.PartName(out, 1))
	if err != nil {
		t.Fatal(err)
	}
	return parts
}
