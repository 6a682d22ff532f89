package benchmarks_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/internal/wire"
)

// recordForEnv overrides how long BenchmarkRecordAll records (a Go
// duration, default 10m), for a quicker look: KWREC_BENCH_RECORD_FOR=2m.
const recordForEnv = "KWREC_BENCH_RECORD_FOR"

func recordFor() time.Duration {
	if d, err := time.ParseDuration(os.Getenv(recordForEnv)); err == nil && d > 0 {
		return d
	}
	return 10 * time.Minute
}

// The cluster BenchmarkRecordAll records, and the load on it.
const (
	captureObjects      = 10_000
	captureNamespaces   = 4
	captureCreators     = 16 // concurrent creates while setting up
	captureChangesPerS  = 50
	captureChangeWorker = 8 // concurrent changes of the load generator
)

// BenchmarkRecordAll is target 11 (issue 27): the cost of a flight
// recording. On a control plane holding 10,000 objects of 20 kinds (8
// built-in namespaced ones and 12 custom resources) in 4 namespaces,
// `kwrec record --all --duration D` runs as a child process (the binary
// built once with go build) while a load generator makes 50 changes a
// second (labels, annotations, data; 5% deletes, 5% creates) from the
// moment kwrec says every collection is listed until it exits. D is 10
// minutes, or $KWREC_BENCH_RECORD_FOR. Skipped without the control plane
// binaries (see internal/testkit/controlplanetest).
//
// Metrics: the recorder's CPU (user+sys from its rusage) and CPU per wall
// second, its peak RSS (rusage maxrss); events, the ADDED, MODIFIED and
// DELETED frames of the JSON watches in the cassette (bookmarks, ERROR
// frames and the Table-form watches kwrec records beside them for kubectl
// are counted apart); the cassette's bytes per event; and the same
// traffic as a go-vcr v3 YAML cassette (every interaction, a watch's body
// its frames end to end, as target 3 does: go-vcr itself cannot record a
// watch) compressed with the zstd CLI at -19, its bytes per event and
// cassette/go-vcr-zstd19 (left out without the CLI); and the same for the
// cassette after `kwrec compact` (object deltas, zstd's better level).
// With $KWREC_BENCH_RECORD_KEEP set, the recording is kept under that
// name (the last round's), for measuring other forms of the same traffic.
func BenchmarkRecordAll(b *testing.B) {
	cp, load := loadedControlPlane(b, captureObjects)
	bin := kwrecBinary(b)
	d := recordFor()
	path := filepath.Join(tempDir(b), "recordall.kwrec.zst")
	for b.Loop() {
		run := recordAllOnce(b, bin, cp.Kubeconfig, path, d, load)
		b.StopTimer()
		reportRecordAll(b, bin, path, run)
		if keep := os.Getenv("KWREC_BENCH_RECORD_KEEP"); keep != "" {
			if err := os.Rename(path, keep); err != nil {
				b.Fatal(err)
			}
		}
		os.Remove(path)
		b.StartTimer()
	}
}

// loadedControlPlane starts a control plane holding n objects of the
// capture kinds, and returns it with the load that made them.
func loadedControlPlane(b *testing.B, n int) (*controlplanetest.ControlPlane, *captureLoad) {
	cp := controlplanetest.Start(b)
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	load := &captureLoad{dyn: dyn, kinds: captureKinds()}
	start := time.Now()
	if err := load.populate(context.Background(), n); err != nil {
		b.Fatal(err)
	}
	b.Logf("setup: %d objects of %d kinds in %d namespaces in %v", n, len(load.kinds), captureNamespaces, time.Since(start).Round(time.Millisecond))
	return cp, load
}

// recordAllRun is what one run of the recorder measured.
type recordAllRun struct {
	wall, cpu time.Duration
	peakMB    float64
	changes   int64         // changes the load generator made
	loaded    time.Duration // how long it made them
}

// recordAllOnce runs `kwrec record --all` for d, writing path, with load
// running from its "is recorded; watching" line until it exits.
func recordAllOnce(b *testing.B, bin, kubeconfig, path string, d time.Duration, load *captureLoad) recordAllRun {
	cmd := exec.Command(bin, "record", "--all", "--kubeconfig", kubeconfig, "--duration", d.String(), "-o", path)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	var lines []string
	var changes atomic.Int64
	var loadStart time.Time
	var wg sync.WaitGroup
	sc := bufio.NewScanner(stderr)
	// The summary is one line naming every resource.
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if strings.Contains(sc.Text(), "is recorded; watching") && loadStart.IsZero() {
			loadStart = time.Now()
			wg.Go(func() { changes.Store(load.run(ctx)) })
		}
	}
	io.Copy(io.Discard, stderr) // after a line too long, so that kwrec never blocks writing
	err = cmd.Wait()
	wall := time.Since(start)
	stop()
	wg.Wait()
	if err != nil {
		b.Fatalf("kwrec record --all: %v\n%s", err, strings.Join(lines, "\n"))
	}
	if loadStart.IsZero() {
		b.Fatalf("kwrec record --all never said the initial state was recorded:\n%s", strings.Join(lines, "\n"))
	}
	b.Logf("kwrec record --all, the load from %v: %s", loadStart.Sub(start).Round(time.Millisecond), lines[len(lines)-1])
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return recordAllRun{wall: wall, cpu: rusageCPU(ru), peakMB: float64(ru.Maxrss) / 1024,
		changes: changes.Load(), loaded: wall - loadStart.Sub(start)}
}

// reportRecordAll reads the cassette at path and reports run's metrics
// and the sizes.
func reportRecordAll(b *testing.B, bin, path string, run recordAllRun) {
	st, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	c, err := cassettes.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	n := countWatchFrames(c)
	b.Logf("%d interactions; JSON watches: %d events, %d bookmarks, %d other frames; Table watches: %d frames",
		len(c.Interactions), n.events, n.bookmarks, n.other, n.table)
	if n.events == 0 {
		b.Fatal("the cassette holds no watch events")
	}
	ev := float64(n.events)
	b.ReportMetric(run.cpu.Seconds(), "record-cpu-s")
	b.ReportMetric(run.cpu.Seconds()/run.wall.Seconds(), "record-cpu/s")
	b.ReportMetric(run.peakMB, "record-peak-MB")
	b.ReportMetric(run.wall.Seconds(), "record-wall-s")
	b.ReportMetric(float64(run.changes), "changes")
	b.ReportMetric(float64(run.changes)/run.loaded.Seconds(), "changes/s")
	b.ReportMetric(ev, "events")
	b.ReportMetric(float64(n.table), "table-events")
	b.ReportMetric(float64(st.Size())/1e6, "MB-cassette")
	b.ReportMetric(float64(st.Size())/ev, "B/event-cassette")
	compacted := compactSize(b, bin, path)
	b.ReportMetric(float64(compacted)/ev, "B/event-compacted")
	start := time.Now()
	yml, zst := vcrZstd19Of(b, c)
	if zst == 0 {
		b.Log("no zstd CLI: the go-vcr YAML + zstd -19 side left out")
		return
	}
	b.Logf("go-vcr YAML %.1f MB, zstd -19 of it %.2f MB in %v", float64(yml)/1e6, float64(zst)/1e6, time.Since(start).Round(time.Second))
	b.ReportMetric(float64(yml)/1e6, "MB-go-vcr-yaml")
	b.ReportMetric(float64(zst)/1e6, "MB-go-vcr-yaml-zstd19")
	b.ReportMetric(float64(zst)/ev, "B/event-go-vcr-zstd19")
	b.ReportMetric(float64(st.Size())/float64(zst), "cassette/go-vcr-zstd19")
	b.ReportMetric(float64(compacted)/float64(zst), "compacted/go-vcr-zstd19")
}

// compactSize is the size of `kwrec compact` of the cassette at path
// (object deltas, the better zstd level), what a recording kept for long
// is made into.
func compactSize(tb testing.TB, bin, path string) int64 {
	out := strings.TrimSuffix(path, ".kwrec.zst") + ".compact.kwrec.zst"
	if msg, err := exec.Command(bin, "compact", path, out).CombinedOutput(); err != nil {
		tb.Fatalf("kwrec compact: %v\n%s", err, msg)
	}
	defer os.Remove(out)
	st, err := os.Stat(out)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size()
}

// watchFrames counts a cassette's watch frames.
type watchFrames struct {
	events    int // ADDED, MODIFIED and DELETED of the JSON watches
	bookmarks int
	other     int // ERROR, or not a watch event
	table     int // every frame of the Table-form watches
}

func countWatchFrames(c *cassettes.Cassette) watchFrames {
	var n watchFrames
	for _, in := range c.Interactions {
		u, err := url.Parse(in.Request.URL)
		if err != nil || in.Request.Method != http.MethodGet || !wire.IsWatchURL(u) {
			continue
		}
		if strings.Contains(in.Request.Header.Get("Accept"), "as=Table") {
			n.table += len(in.Frames)
			continue
		}
		for _, f := range in.Frames {
			switch watchEventType(f.Data) {
			case "ADDED", "MODIFIED", "DELETED":
				n.events++
			case "BOOKMARK":
				n.bookmarks++
			default:
				n.other++
			}
		}
	}
	return n
}

// watchEventType is the type of a JSON watch event frame, "" if it is
// none. A redacted Secret's event is written back with its fields in
// another order ("object" first), which wire.EventKey does not take for
// an event: those are decoded.
func watchEventType(frame []byte) string {
	if typ, _, ok := wire.EventKey(frame); ok {
		return typ
	}
	var ev struct{ Type string }
	if json.Unmarshal(frame, &ev) != nil {
		return ""
	}
	return ev.Type
}

// vcrZstd19Of writes c as go-vcr v3 YAML, every interaction with a
// response (the fields cassettes.ExportVCR writes, but watches too, each
// body its frames end to end), and returns its size and the size of
// `zstd -19` of it, 0 without the CLI.
func vcrZstd19Of(tb testing.TB, c *cassettes.Cassette) (yml, zst int64) {
	vc := cassette.Cassette{Version: cassettes.VCRVersion}
	for _, in := range c.Interactions {
		if in.Response == nil {
			continue
		}
		body := string(in.Body())
		host := ""
		if u, err := url.Parse(in.Request.URL); err == nil {
			host = u.Host
		}
		vc.Interactions = append(vc.Interactions, &cassette.Interaction{ID: len(vc.Interactions),
			Request: cassette.Request{Method: in.Request.Method, URL: in.Request.URL, Host: host, Headers: in.Request.Header,
				Body: string(in.Request.Body), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(in.Request.Body))},
			Response: cassette.Response{Code: in.Response.Status, Status: strconv.Itoa(in.Response.Status) + " " + http.StatusText(in.Response.Status),
				Headers: in.Response.Header, Body: body, Duration: in.Response.Latency,
				Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, ContentLength: int64(len(body))},
		})
	}
	path := filepath.Join(tempDir(tb), "recordall.yaml")
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(path)
	bw := bufio.NewWriterSize(f, 1<<20)
	enc := yaml.NewEncoder(bw)
	enc.SetIndent(4)
	if err := enc.Encode(&vc); err != nil {
		tb.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		tb.Fatal(err)
	}
	return st.Size(), zstd19(tb, path)
}

// captureKind is one of BenchmarkRecordAll's 20 kinds.
type captureKind struct {
	gvr  schema.GroupVersionResource
	kind string
	// body returns an object's fields beside metadata.
	body func(ns, name string, rng *rand.Rand) map[string]any
	// data returns a merge patch of its data or spec; nil: the kind's
	// changes are labels and annotations only.
	data func(rng *rand.Rand) map[string]any
}

var captureWords = strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november " +
	"oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu cluster node pod service " +
	"deploy replica volume claim lease event watch list bookmark controller informer reflector cache store")

// captureText is n bytes or so of words.
func captureText(rng *rand.Rand, n int) string {
	var sb strings.Builder
	for sb.Len() < n {
		sb.WriteString(captureWords[rng.IntN(len(captureWords))])
		sb.WriteByte(' ')
	}
	return sb.String()
}

// captureCRDs are the plurals of the 12 custom resources, in group
// bench.kwrec.dev.
var captureCRDs = strings.Fields("widgets gadgets sprockets gizmos flanges valves pumps rotors gears levers pulleys cogs")

func captureKinds() []captureKind {
	kinds := []captureKind{
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, kind: "ConfigMap",
			body: func(_, _ string, rng *rand.Rand) map[string]any {
				return map[string]any{"data": map[string]any{"config.yaml": captureText(rng, 600), "mode": "active"}}
			},
			data: func(rng *rand.Rand) map[string]any {
				return map[string]any{"data": map[string]any{"config.yaml": captureText(rng, 600)}}
			}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "secrets"}, kind: "Secret",
			body: func(_, _ string, rng *rand.Rand) map[string]any {
				return map[string]any{"type": "Opaque", "data": map[string]any{"token": captureSecret(rng), "user": base64.StdEncoding.EncodeToString([]byte("svc"))}}
			},
			data: func(rng *rand.Rand) map[string]any {
				return map[string]any{"data": map[string]any{"token": captureSecret(rng)}}
			}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "services"}, kind: "Service",
			body: func(_, name string, _ *rand.Rand) map[string]any {
				// Headless: envtest's service range has 254 addresses.
				return map[string]any{"spec": map[string]any{"clusterIP": "None", "selector": map[string]any{"app": name},
					"ports": []any{map[string]any{"name": "http", "port": int64(80), "targetPort": int64(8080)}}}}
			}},
		{gvr: schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, kind: "ServiceAccount",
			body: func(string, string, *rand.Rand) map[string]any {
				return map[string]any{"automountServiceAccountToken": false}
			}},
		captureRole,
		{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, kind: "RoleBinding",
			body: func(ns, name string, _ *rand.Rand) map[string]any {
				return map[string]any{"roleRef": map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
					"subjects": []any{map[string]any{"kind": "ServiceAccount", "name": name, "namespace": ns}}}
			}},
		{gvr: schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, kind: "Deployment",
			body: func(_, name string, rng *rand.Rand) map[string]any {
				return map[string]any{"spec": map[string]any{"replicas": int64(1 + rng.IntN(3)),
					"selector": map[string]any{"matchLabels": map[string]any{"app": name}},
					"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"app": name}},
						"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "registry.example.com/app:1." + strconv.Itoa(rng.IntN(40)),
							"ports": []any{map[string]any{"containerPort": int64(8080)}},
							"env":   []any{map[string]any{"name": "MODE", "value": captureText(rng, 40)}}}}}}}}
			},
			data: func(rng *rand.Rand) map[string]any {
				return map[string]any{"spec": map[string]any{"minReadySeconds": int64(rng.IntN(1e6))}}
			}},
		{gvr: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, kind: "Job",
			body: func(string, string, *rand.Rand) map[string]any {
				return map[string]any{"spec": map[string]any{"suspend": true, "template": map[string]any{"spec": map[string]any{
					"restartPolicy": "Never", "containers": []any{map[string]any{"name": "job", "image": "busybox:1.37", "command": []any{"sh", "-c", "true"}}}}}}}
			}},
	}
	for _, plural := range captureCRDs {
		kinds = append(kinds, captureKind{gvr: schema.GroupVersionResource{Group: "bench.kwrec.dev", Version: "v1", Resource: plural},
			kind: strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s"),
			body: func(_, _ string, rng *rand.Rand) map[string]any {
				return map[string]any{"spec": map[string]any{"size": int64(rng.IntN(100)), "owner": captureText(rng, 20), "notes": captureText(rng, 300)}}
			},
			data: func(rng *rand.Rand) map[string]any {
				return map[string]any{"spec": map[string]any{"size": int64(rng.IntN(1e6)), "notes": captureText(rng, 300)}}
			}})
	}
	return kinds
}

var captureRole = captureKind{gvr: schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, kind: "Role",
	body: func(string, string, *rand.Rand) map[string]any {
		return map[string]any{"rules": []any{map[string]any{"apiGroups": []any{""}, "resources": []any{"configmaps", "secrets"},
			"verbs": []any{"get", "list", "watch"}}}}
	}}

func captureSecret(rng *rand.Rand) string {
	b := make([]byte, 48)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return base64.StdEncoding.EncodeToString(b)
}

// captureName is an object of one of the kinds.
type captureName struct{ ns, name string }

// captureLoad makes the objects and then the changes of
// BenchmarkRecordAll.
type captureLoad struct {
	dyn   dynamic.Interface
	kinds []captureKind

	mu    sync.Mutex
	names [][]captureName // live objects, by kind
	next  int             // suffix of the next object's name
}

func (l *captureLoad) object(k captureKind, n captureName, rng *rand.Rand) *unstructured.Unstructured {
	obj := k.body(n.ns, n.name, rng)
	obj["apiVersion"] = k.gvr.GroupVersion().String()
	obj["kind"] = k.kind
	obj["metadata"] = map[string]any{"name": n.name, "namespace": n.ns,
		"labels": map[string]any{"app": n.name, "tier": captureWords[rng.IntN(len(captureWords))]}}
	return &unstructured.Unstructured{Object: obj}
}

// populate makes the namespaces, the custom resources' definitions and
// n objects, an equal share of each kind spread over the namespaces, with
// captureCreators creates at a time.
func (l *captureLoad) populate(ctx context.Context, n int) error {
	if err := l.installCRDs(ctx); err != nil {
		return err
	}
	nsGVR := schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	for i := range captureNamespaces {
		ns := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Namespace",
			"metadata": map[string]any{"name": fmt.Sprintf("bench-%d", i)}}}
		if _, err := l.dyn.Resource(nsGVR).Create(ctx, ns, metav1.CreateOptions{}); err != nil {
			return err
		}
		// The Role every RoleBinding names.
		role := l.object(captureRole, captureName{ns: fmt.Sprintf("bench-%d", i), name: "reader"}, rand.New(rand.NewPCG(1, 1)))
		if _, err := l.dyn.Resource(captureRole.gvr).Namespace(role.GetNamespace()).Create(ctx, role, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	l.names = make([][]captureName, len(l.kinds))
	jobs := make(chan int)
	errs := make(chan error, captureCreators)
	var wg sync.WaitGroup
	for w := range captureCreators {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(11, uint64(w)))
			for i := range jobs {
				if err := l.create(ctx, i%len(l.kinds), rng); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	var err error
feed:
	for i := range n {
		select {
		case jobs <- i:
		case err = <-errs:
			break feed
		}
	}
	close(jobs)
	wg.Wait()
	close(errs)
	if err == nil {
		err = <-errs
	}
	return err
}

// create makes a new object of kind k.
func (l *captureLoad) create(ctx context.Context, k int, rng *rand.Rand) error {
	l.mu.Lock()
	n := captureName{ns: fmt.Sprintf("bench-%d", l.next%captureNamespaces), name: fmt.Sprintf("%s-%05d", strings.ToLower(l.kinds[k].kind), l.next)}
	l.next++
	l.mu.Unlock()
	kind := l.kinds[k]
	if _, err := l.dyn.Resource(kind.gvr).Namespace(n.ns).Create(ctx, l.object(kind, n, rng), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating %s %s/%s: %w", kind.kind, n.ns, n.name, err)
	}
	l.mu.Lock()
	l.names[k] = append(l.names[k], n)
	l.mu.Unlock()
	return nil
}

// installCRDs installs captureCRDs, namespaced, any fields kept, and
// waits until each is established.
func (l *captureLoad) installCRDs(ctx context.Context) error {
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	crds := l.dyn.Resource(crdGVR)
	for _, k := range l.kinds {
		if k.gvr.Group != "bench.kwrec.dev" {
			continue
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": k.gvr.Resource + "." + k.gvr.Group},
			"spec": map[string]any{"group": k.gvr.Group, "scope": "Namespaced",
				"names": map[string]any{"plural": k.gvr.Resource, "singular": strings.ToLower(k.kind), "kind": k.kind, "listKind": k.kind + "List"},
				"versions": []any{map[string]any{"name": "v1", "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}},
		}}
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("installing %s: %w", crd.GetName(), err)
		}
	}
	// Setup, not a measurement: poll until each definition is served.
	deadline := time.Now().Add(time.Minute)
	for _, k := range l.kinds {
		for k.gvr.Group == "bench.kwrec.dev" {
			_, err := l.dyn.Resource(k.gvr).List(ctx, metav1.ListOptions{Limit: 1})
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("%s not served after a minute: %w", k.gvr.Resource, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return nil
}

// run makes captureChangesPerS changes a second, from a ticker, with
// captureChangeWorker at a time, until ctx is done, and returns how many
// it made. A tick that finds every worker busy is dropped.
func (l *captureLoad) run(ctx context.Context) int64 {
	var made atomic.Int64
	ticks := make(chan struct{})
	var wg sync.WaitGroup
	for w := range captureChangeWorker {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(27, uint64(w)))
			for range ticks {
				if l.change(ctx, rng) == nil {
					made.Add(1)
				}
			}
		})
	}
	t := time.NewTicker(time.Second / captureChangesPerS)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			close(ticks)
			wg.Wait()
			return made.Load()
		case <-t.C:
			select {
			case ticks <- struct{}{}:
			default:
			}
		}
	}
}

// change makes one change on a random object: 5% a delete, 5% a create,
// else a merge patch of a label (40%), an annotation (30%) or its data
// (20%; an annotation for kinds with none). An object another worker
// deleted meanwhile is an error, not counted.
func (l *captureLoad) change(ctx context.Context, rng *rand.Rand) error {
	k := rng.IntN(len(l.kinds))
	kind := l.kinds[k]
	p := rng.IntN(100)
	if p < 5 {
		return l.create(ctx, k, rng)
	}
	l.mu.Lock()
	if len(l.names[k]) == 0 {
		l.mu.Unlock()
		return l.create(ctx, k, rng)
	}
	i := rng.IntN(len(l.names[k]))
	n := l.names[k][i]
	if p < 10 {
		l.names[k][i] = l.names[k][len(l.names[k])-1]
		l.names[k] = l.names[k][:len(l.names[k])-1]
	}
	l.mu.Unlock()
	ri := l.dyn.Resource(kind.gvr).Namespace(n.ns)
	var patch map[string]any
	switch {
	case p < 10:
		return ri.Delete(ctx, n.name, metav1.DeleteOptions{})
	case p < 50:
		patch = map[string]any{"metadata": map[string]any{"labels": map[string]any{"rev": strconv.Itoa(rng.IntN(1e9))}}}
	case p < 80 || kind.data == nil:
		patch = map[string]any{"metadata": map[string]any{"annotations": map[string]any{"bench.kwrec.dev/note": captureText(rng, 60)}}}
	default:
		patch = kind.data(rng)
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, n.name, types.MergePatchType, data, metav1.PatchOptions{})
	return err
}
