package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// The differential fuzzer: seeded random sequences of requests (creates,
// gets, lists, updates, the four patch types, server-side apply, deletes,
// dry runs, field validation) over ConfigMaps, Secrets and the Widgets of
// a CRD with a structural schema, each sent to kube-apiserver and to the
// overlay of its recording, with the answers compared as the table's rows
// are. Each seed has a namespace of its own, so that one difference does
// not spread to the others' requests.
const (
	fuzzSeeds    = 50
	fuzzRequests = 200 // per seed
	// rvToken in a generated body stands for the object's current
	// resourceVersion on the side it is sent to (each side has its own).
	rvToken = "@RV@"
)

// fuzzNames are the names generated requests use: valid ones, and some
// each kind refuses (a ConfigMap's name is a DNS subdomain).
var fuzzNames = []string{"a", "b", "c", "d.e", "f-1", "Upper", "x_y", ""}

// fuzzGen makes the requests of one seed.
type fuzzGen struct {
	r  *rand.Rand
	ns string // the seed's namespace
}

func (g *fuzzGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// name is mostly a valid name, sometimes one the server refuses.
func (g *fuzzGen) name() string {
	if g.r.IntN(10) == 0 {
		return g.pick(fuzzNames[5:]...)
	}
	return g.pick(fuzzNames[:5]...)
}

func (g *fuzzGen) labels() string {
	switch g.r.IntN(4) {
	case 0:
		return ""
	case 1:
		return `,"labels":{"app":"x"}`
	case 2:
		return `,"labels":{"app":"y","tier":"` + g.pick("gold", "silver") + `"}`
	}
	return `,"labels":{"bad label":"x"}`
}

func (g *fuzzGen) data() string {
	var kv []string
	for i := range g.r.IntN(3) + 1 {
		kv = append(kv, fmt.Sprintf(`"k%d":%q`, i+g.r.IntN(2), g.pick("1", "two", "")))
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// query adds the write options a client may send.
func (g *fuzzGen) query(write bool) string {
	var q []string
	if write && g.r.IntN(8) == 0 {
		q = append(q, "dryRun=All")
	}
	if write && g.r.IntN(6) == 0 {
		q = append(q, "fieldValidation="+g.pick("Strict", "Warn", "Ignore"))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + strings.Join(q, "&")
}

// next returns the seed's next request.
func (g *fuzzGen) next() row {
	kind := g.r.IntN(10)
	switch {
	case kind < 6:
		return g.configMap()
	case kind < 8:
		return g.secret()
	}
	return g.widget()
}

func (g *fuzzGen) configMap() row {
	base := "/api/v1/namespaces/" + g.ns + "/configmaps"
	n := g.name()
	obj := func(extra string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q%s%s},"data":%s%s}`, n, g.labels(), extra, g.data(),
			map[bool]string{true: `,"bogus":1`}[g.r.IntN(8) == 0])
	}
	switch g.r.IntN(11) {
	case 0, 1:
		return row{name: "configmap: create", method: "POST", path: base + g.query(true), body: obj("")}
	case 2:
		return row{name: "configmap: get", method: "GET", path: base + "/" + n}
	case 3:
		q := g.pick("", "?labelSelector=app%3Dx", "?fieldSelector=metadata.name%3D"+n, "?labelSelector=tier+in+%28gold%29")
		return row{name: "configmap: list", method: "GET", path: base + q}
	case 4:
		rv := g.pick("", `,"resourceVersion":"`+rvToken+`"`, `,"resourceVersion":"1"`)
		return row{name: "configmap: update", method: "PUT", path: base + "/" + n + g.query(true), body: obj(rv)}
	case 5:
		return row{name: "configmap: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: fmt.Sprintf(`{"metadata":{"labels":{"app":%s}},"data":{"k0":%s}}`, g.pick(`"x"`, `null`, `"y"`), g.pick(`"9"`, `null`))}
	case 6:
		return row{name: "configmap: strategic merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "smp",
			body: fmt.Sprintf(`{"data":{"k1":%s},"immutable":%s}`, g.pick(`"s"`, `null`), g.pick("false", "false", "true"))}
	case 7:
		op := g.pick("add", "replace", "remove", "test")
		p := fmt.Sprintf(`{"op":%q,"path":"/data/k%d"`, op, g.r.IntN(2))
		if op != "remove" {
			p += `,"value":"` + g.pick("1", "two") + `"`
		}
		return row{name: "configmap: json patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "jsonpatch", body: "[" + p + "}]"}
	case 8:
		mgr := g.pick("m1", "m2")
		q := "?fieldManager=" + mgr + g.pick("", "&force=true")
		return row{name: "configmap: apply", method: "PATCH", path: base + "/" + n + q, ct: "apply",
			body: fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  k%d: %s\n", n, g.r.IntN(2), g.pick(mgr, "same"))}
	case 9:
		body := g.pick("", `{"preconditions":{"resourceVersion":"1"}}`, `{"preconditions":{"resourceVersion":"`+rvToken+`"}}`, `{"dryRun":["All"]}`)
		return row{name: "configmap: delete", method: "DELETE", path: base + "/" + n, body: body}
	}
	return row{name: "configmap: delete collection", method: "DELETE", path: base + "?labelSelector=app%3Dy" + strings.ReplaceAll(g.query(true), "?", "&")}
}

func (g *fuzzGen) secret() row {
	base := "/api/v1/namespaces/" + g.ns + "/secrets"
	n := g.name()
	typ := g.pick("", `,"type":"Opaque"`, `,"type":"example.com/x"`)
	switch g.r.IntN(6) {
	case 0, 1:
		return row{name: "secret: create", method: "POST", path: base + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"s":%q}%s%s}`, n, g.pick("a", "b"), typ,
				g.pick("", `,"data":{"d":"dg=="}`, `,"immutable":true`))}
	case 2:
		return row{name: "secret: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "secret: update", method: "PUT", path: base + "/" + n + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"data":{"d":"eA=="}%s}`, n, typ)}
	case 4:
		return row{name: "secret: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: fmt.Sprintf(`{"stringData":{"s":%q}%s}`, g.pick("c", "d"), g.pick("", `,"type":"example.com/y"`, `,"immutable":true`))}
	}
	return row{name: "secret: delete", method: "DELETE", path: base + "/" + n}
}

func (g *fuzzGen) widget() row {
	base := "/apis/example.com/v1/namespaces/" + g.ns + "/widgets"
	n := g.name()
	spec := func() string {
		var f []string
		if g.r.IntN(6) != 0 {
			f = append(f, fmt.Sprintf(`"size":%d`, g.pick2(-1, 0, 1, 5, 99, 100, 150)))
		}
		if g.r.IntN(2) == 0 {
			f = append(f, `"color":"`+g.pick("blue", "red", "green", "purple")+`"`)
		}
		if g.r.IntN(3) == 0 {
			f = append(f, `"tags":[`+strings.Repeat(`"t",`, g.r.IntN(5))+`"u"]`)
		}
		if g.r.IntN(8) == 0 {
			f = append(f, `"bogus":true`)
		}
		return "{" + strings.Join(f, ",") + "}"
	}
	switch g.r.IntN(6) {
	case 0, 1:
		return row{name: "widget: create", method: "POST", path: base + g.query(true), body: widget(n, spec())}
	case 2:
		return row{name: "widget: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "widget: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge", body: `{"spec":` + spec() + `}`}
	case 4:
		return row{name: "widget: status patch", method: "PATCH", path: base + "/" + n + "/status", ct: "merge",
			body: `{"status":{"phase":"` + g.pick("Ready", "Gone") + `"},"spec":{"size":7}}`}
	}
	return row{name: "widget: delete", method: "DELETE", path: base + "/" + n}
}

func (g *fuzzGen) pick2(xs ...int) int { return xs[g.r.IntN(len(xs))] }

// TestLiveDifferentialFuzz sends fuzzSeeds seeds of fuzzRequests
// generated requests each to kube-apiserver and to the overlay, and
// compares every answer.
func TestLiveDifferentialFuzz(t *testing.T) {
	w := newWorld(t, controlplanetest.Start(t))
	if a := w.do(t, w.live, w.liveHost, row{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: widgetCRD}); a.Code != http.StatusCreated && a.Code != http.StatusConflict {
		t.Fatalf("creating the CRD: %d %v", a.Code, a.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for w.do(t, w.live, w.liveHost, row{method: "GET", path: "/apis/example.com/v1/widgets"}).Code != http.StatusOK {
		select {
		case <-ctx.Done():
			t.Fatal("the CRD was not served within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	for s := range fuzzSeeds {
		if a := w.do(t, w.live, w.liveHost, row{method: "POST", path: "/api/v1/namespaces", body: fmt.Sprintf(`{"metadata":{"name":"fuzz-%d"}}`, s)}); a.Code != http.StatusCreated {
			t.Fatalf("namespace fuzz-%d: %d %v", s, a.Code, a.Body)
		}
	}
	w.record(t, []string{"/api/v1/namespaces", "/api/v1/configmaps", "/api/v1/secrets",
		"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/apis/example.com/v1/widgets"},
		replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})

	differ := map[string]int{}
	total := map[string]int{}
	fc := fakeClient(fuzzSeeds)
	fakeTotal, fakeDiff := map[string]int{}, map[string]map[string]int{}
	var first []string
	var liveTime, overTime time.Duration
	for s := range fuzzSeeds {
		g := &fuzzGen{r: rand.New(rand.NewPCG(uint64(s), 42)), ns: fmt.Sprintf("fuzz-%d", s)}
		for i := range fuzzRequests {
			r := g.next()
			total[r.name]++
			lr, or := w.resolveRV(t, w.live, w.liveHost, r), w.resolveRV(t, w.overlay, w.oHost, r)
			t0 := time.Now()
			live := w.do(t, w.live, w.liveHost, lr)
			t1 := time.Now()
			over := w.do(t, w.overlay, w.oHost, or)
			liveTime, overTime = liveTime+t1.Sub(t0), overTime+time.Since(t1)
			if fakeComparable(r) {
				fakeTotal[r.name]++
				fk := fakeDo(t.Context(), fc, lr)
				if how := fakeDiffers(live, fk, r); how != "" {
					if os.Getenv("KWREC_FAKE_SAMPLES") != "" && fakeDiff[r.name][how] < 2 {
						t.Logf("fake %s %s: %s %s %s\n(-server +fake):\n%s", r.name, how, r.method, r.path, r.body, diffAnswers(live, fk))
					}
					if fakeDiff[r.name] == nil {
						fakeDiff[r.name] = map[string]int{}
					}
					fakeDiff[r.name][how]++
				}
			}
			if d := diffAnswers(live, over); d != "" {
				differ[r.name]++
				if len(first) < 12 {
					lb, _ := json.Marshal(live)
					ob, _ := json.Marshal(over)
					first = append(first, fmt.Sprintf("seed %d request %d: %s %s %s\n(-server +overlay):\n%s\nserver: %.600s\noverlay: %.600s", s, i, r.method, r.path, r.body, d, lb, ob))
				}
			}
		}
	}
	var b strings.Builder
	n, bad := 0, 0
	names := make([]string, 0, len(total))
	for k := range total {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		fmt.Fprintf(&b, "\n  %-34s %5d requests, %d differ", k, total[k], differ[k])
		n += total[k]
		bad += differ[k]
	}
	t.Logf("differential fuzz, %d seeds: %d requests, %d differ%s", fuzzSeeds, n, bad, b.String())
	t.Logf("requests a second, one at a time: kube-apiserver %.0f, the overlay (in process) %.0f",
		float64(n)/liveTime.Seconds(), float64(n)/overTime.Seconds())
	logFake(t, fakeTotal, fakeDiff)
	for _, f := range first {
		t.Error(f)
	}
}

// resolveRV returns r with rvToken replaced by the object's current
// resourceVersion on the side hc reaches, or dropped with its field when
// the object does not exist there.
func (w *world) resolveRV(t *testing.T, hc *http.Client, host string, r row) row {
	t.Helper()
	if !strings.Contains(r.body, rvToken) {
		return r
	}
	path, _, _ := strings.Cut(r.path, "?")
	req, err := http.NewRequestWithContext(t.Context(), "GET", host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	json.NewDecoder(resp.Body).Decode(&obj)
	rv := obj.Metadata.ResourceVersion
	if rv == "" {
		rv = "1"
	}
	r.body = strings.ReplaceAll(r.body, rvToken, rv)
	return r
}

// logFake logs how many of the fake client's answers differ from the
// server's, by request and by how.
func logFake(t *testing.T, total map[string]int, differ map[string]map[string]int) {
	var b strings.Builder
	n, bad := 0, 0
	names := make([]string, 0, len(total))
	for k := range total {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d := differ[k]
		m := d["status"] + d["reason"] + d["identity"] + d["object"]
		fmt.Fprintf(&b, "\n  %-34s %5d requests, %4d differ (status %d, reason %d, no uid or creationTimestamp %d, object %d)", k, total[k], m, d["status"], d["reason"], d["identity"], d["object"])
		n += total[k]
		bad += m
	}
	t.Logf("controller-runtime's fake client on the same requests (ConfigMaps and Secrets): %d requests, %d differ from kube-apiserver%s", n, bad, b.String())
}
