package conformance_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kwrec/kwrec/internal/testkit/conformance"
)

// The differential fuzzer's runner: a sequence of requests sent to both
// sides with their watches open, the fake client beside them, and the
// shrinking of a sequence that differs.

// fuzzStats are a run's counts, by request name ("watch" for a seed
// whose watches saw different events), and the fake client's.
type fuzzStats struct {
	total, differ      map[string]int
	events             int
	liveTime, overTime time.Duration
	// fakes takes the requests the fake client is to answer too.
	fakes chan<- fakeCall
}

// log logs the counts of a run of ran seeds and the requests a second
// each side answered.
func (st *fuzzStats) log(t *testing.T, ran int) {
	var b strings.Builder
	n, bad := 0, 0
	for _, k := range slices.Sorted(maps.Keys(st.total)) {
		fmt.Fprintf(&b, "\n  %-34s %5d requests, %d differ", k, st.total[k], st.differ[k])
		n += st.total[k]
		bad += st.differ[k]
	}
	t.Logf("differential fuzz, %d seeds: %d requests, %d differ; watches: %d events, %d seeds' differ%s",
		ran, n, bad, st.events, st.differ["watch"], b.String())
	t.Logf("requests a second, one at a time: kube-apiserver %.0f, the overlay (in process) %.0f",
		float64(n)/st.liveTime.Seconds(), float64(n)/st.overTime.Seconds())
}

// fuzzDiff is a difference a sequence showed: at a request, or (at -1)
// in what its watches saw.
type fuzzDiff struct {
	at   int
	name string // the request's name, or "watch"
	text string
}

// runSequence sends rows to both sides in order, with a watch of each of
// ns's collections open on each from before the first, and returns the
// differences; st, when not nil, counts them, times the requests and
// compares the fake client's answers.
func (w *world) runSequence(t *testing.T, ns string, rows []row, st *fuzzStats) []fuzzDiff {
	t.Helper()
	live, over := w.sides()
	lw, ow := w.watchAll(t, live, ns), w.watchAll(t, over, ns)
	var diffs []fuzzDiff
	for i, r := range rows {
		la, lr, lt := w.send(t, live, r)
		oa, _, ot := w.send(t, over, r)
		if st != nil {
			st.total[r.name]++
			st.liveTime, st.overTime = st.liveTime+lt, st.overTime+ot
			st.fake(r, lr, la)
		}
		if d := diffAnswers(la, oa); d != "" {
			if st != nil {
				st.differ[r.name]++
			}
			lb, _ := json.Marshal(la)
			ob, _ := json.Marshal(oa)
			diffs = append(diffs, fuzzDiff{at: i, name: r.name, text: fmt.Sprintf("request %d: %s %s %s\n(-server +overlay):\n%s\nserver: %.600s\noverlay: %.600s", i, r.method, r.path, r.body, d, lb, ob)})
		}
	}
	le, oe := w.endWatches(t, live, ns, lw), w.endWatches(t, over, ns, ow)
	if st != nil {
		for _, c := range le {
			st.events += len(c.([]any)) - 1 // the first is the collection's path
		}
	}
	if d := diffAnswers(answer{Body: le}, answer{Body: oe}); d != "" {
		if st != nil {
			st.differ["watch"]++
		}
		diffs = append(diffs, fuzzDiff{at: -1, name: "watch", text: "watches (-server +overlay):\n" + d})
	}
	return diffs
}

// fakeCall is a request for the fake client: r as generated, lr as sent
// to the server, la the server's answer.
type fakeCall struct {
	r, lr row
	la    answer
}

// fake queues r for the fake client, when it can be asked it.
func (st *fuzzStats) fake(r, lr row, la answer) {
	if fakeComparable(r) {
		st.fakes <- fakeCall{r, lr, la}
	}
}

// fakeRun is the fake client answering the fuzzer's requests on the
// side, in their order, so that its slowness does not hold up the
// server's answers and the overlay's.
type fakeRun struct {
	calls  chan fakeCall
	done   chan struct{}
	total  map[string]int
	differ map[string]map[string]int
}

// startFake starts a fakeRun over a fake client holding seeds namespaces.
func startFake(t *testing.T, seeds int) *fakeRun {
	f := &fakeRun{calls: make(chan fakeCall, 1024), done: make(chan struct{}), total: map[string]int{}, differ: map[string]map[string]int{}}
	go func() {
		defer close(f.done)
		fc := fakeClient(seeds)
		for c := range f.calls {
			c.compare(t, fc, f.total, f.differ)
		}
	}()
	return f
}

// log waits for the fake client's last answer and logs the counts.
func (f *fakeRun) log(t *testing.T) {
	close(f.calls)
	<-f.done
	logFake(t, f.total, f.differ)
}

// compare makes the call through fc and counts, by request name, how its
// answer differs from the server's.
func (c fakeCall) compare(t *testing.T, fc client.Client, total map[string]int, differ map[string]map[string]int) {
	total[c.r.name]++
	fk := fakeDo(t.Context(), fc, c.lr)
	how := fakeDiffers(c.la, fk, c.r)
	if how == "" {
		return
	}
	if os.Getenv("KWREC_FAKE_SAMPLES") != "" && differ[c.r.name][how] < 2 {
		t.Logf("fake %s %s: %s %s %s\n(-server +fake):\n%s", c.r.name, how, c.r.method, c.r.path, c.r.body, diffAnswers(c.la, fk))
	}
	if differ[c.r.name] == nil {
		differ[c.r.name] = map[string]int{}
	}
	differ[c.r.name][how]++
}

// shrinkSeed returns the fewest of seed s's rows (up to the first
// difference d's request) that still show a difference at a request of
// d's name, each try re-run on fresh namespaces on both sides.
func (w *world) shrinkSeed(t *testing.T, s int, rows []row, d fuzzDiff) []row {
	t.Helper()
	if d.at >= 0 {
		rows = rows[:d.at+1]
	}
	from := fmt.Sprintf("fuzz-%d", s)
	runs := 0
	return conformance.Shrink(rows, func(rs []row) bool {
		if runs++; runs > fuzzShrinkRuns {
			return false
		}
		ns := fmt.Sprintf("%s-s%d", from, runs)
		live, over := w.sides()
		for _, side := range []*fuzzSide{live, over} {
			if a, _, _ := w.send(t, side, namespaceRow(ns)); a.Code != http.StatusCreated {
				t.Fatalf("namespace %s: %d %v", ns, a.Code, a.Body)
			}
		}
		renamed := make([]row, len(rs))
		for i, r := range rs {
			r.path, r.body = strings.ReplaceAll(r.path, from, ns), strings.ReplaceAll(r.body, from, ns)
			renamed[i] = r
		}
		for _, got := range w.runSequence(t, ns, renamed, nil) {
			if got.name == d.name {
				return true
			}
		}
		return false
	})
}

// goRows prints rows of namespace ns as Go rows for conformance_live_test.go's
// table, in its namespace conf, named label and their step.
func goRows(rows []row, ns, label string) string {
	var b strings.Builder
	for i, r := range rows {
		path, body := strings.ReplaceAll(r.path, ns, "conf"), strings.ReplaceAll(r.body, ns, "conf")
		p := strconv.Quote(path)
		for prefix, name := range map[string]string{"/api/v1/namespaces/conf": "ns", "/apis/apps/v1/namespaces/conf": "apps", "/apis/rbac.authorization.k8s.io/v1/namespaces/conf": "rbac"} {
			if rest, ok := strings.CutPrefix(path, prefix+"/"); ok {
				p = name + " + " + strconv.Quote("/"+rest)
			}
		}
		fmt.Fprintf(&b, "\t\t{name: %q, method: %q, path: %s", fmt.Sprintf("%s step %d, %s", label, i+1, r.name), r.method, p)
		if r.ct != "" {
			fmt.Fprintf(&b, ", ct: %q", r.ct)
		}
		if body != "" {
			if strings.Contains(body, "`") {
				fmt.Fprintf(&b, ", body: %q", body)
			} else {
				fmt.Fprintf(&b, ", body: `%s`", body)
			}
		}
		b.WriteString("},\n")
	}
	return b.String()
}
