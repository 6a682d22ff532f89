package benchmarks_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay"
)

// The serve target (issue 16), against k8shark, a mock API server that
// replays cluster captures, on its own benchmark's shape: 2,000 ConfigMaps
// of 4 KB of word-like text, listed in pages of 500 as client-go does,
// then a watch of 1,200 changes.
const (
	serveObjects = 2000
	serveChanges = 1200
)

// BenchmarkServeStartsFast measures, per op and alternating which goes
// first:
//
//   - serve: `kwrec serve --speed 0` (the binary, built once) from exec to its
//     "kubeconfig:" line (ready-ms, the mean, target < 50; ready-p50-ms
//     and ready-max-ms of the starts), then one client-go informer
//     through its kubeconfig until the informer holds every ConfigMap at
//     its final resourceVersion (serve-final-ms); the
//     server's CPU from exec to that point is its rusage after SIGTERM
//     (serve-cpu-ms);
//   - in-process: replay.Open of the same file and the same informer on
//     Replayer.Config() until the same final state; its CPU is the whole
//     process's rusage across it, the informer's included
//     (inprocess-cpu-ms, inprocess-final-ms).
//
// serve/inprocess-cpu is the target's ratio: at most 1.2.
func BenchmarkServeStartsFast(b *testing.B) {
	path, final := serveCassette(b)
	bin := kwrecBinary(b)
	var ready, serveFinal, serveCPU, inFinal, inCPU time.Duration
	var readies []time.Duration
	for i := range b.N {
		sides := []func(){
			func() {
				r, f, c := serveRound(b, bin, path, final)
				ready, serveFinal, serveCPU = ready+r, serveFinal+f, serveCPU+c
				readies = append(readies, r)
			},
			func() {
				f, c := inProcessRound(b, path, final)
				inFinal, inCPU = inFinal+f, inCPU+c
			},
		}
		if i%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			side()
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(b.N) / 1e6 }
	b.ReportMetric(ms(ready), "ready-ms")
	slices.Sort(readies)
	b.ReportMetric(float64(readies[len(readies)/2])/1e6, "ready-p50-ms")
	b.ReportMetric(float64(readies[len(readies)-1])/1e6, "ready-max-ms")
	b.ReportMetric(ms(serveFinal), "serve-final-ms")
	b.ReportMetric(ms(serveCPU), "serve-cpu-ms")
	b.ReportMetric(ms(inFinal), "inprocess-final-ms")
	b.ReportMetric(ms(inCPU), "inprocess-cpu-ms")
	b.ReportMetric(float64(serveCPU)/float64(inCPU), "serve/inprocess-cpu")
}

// serveRound runs kwrec serve and one informer to the final state.
func serveRound(b *testing.B, bin, path string, final map[string]string) (ready, toFinal, cpu time.Duration) {
	cmd, cfg, start, ready := startServe(b, bin, path)
	defer cmd.Process.Kill()
	informUntil(b, cfg, final)
	toFinal = time.Since(start)
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	return ready, toFinal, rusageCPU(ru)
}

// startServe runs `kwrec serve --speed 0 --clock consumption` of path and returns it, a
// config from the kubeconfig it wrote, when it was started and how long
// it took to print its "kubeconfig:" line.
func startServe(b *testing.B, bin, path string) (cmd *exec.Cmd, cfg *rest.Config, start time.Time, ready time.Duration) {
	kc := filepath.Join(b.TempDir(), "kubeconfig")
	cmd = exec.Command(bin, "serve", path, "--speed", "0", "--clock", "consumption", "--kubeconfig-out", kc)
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	start = time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() && !strings.HasPrefix(lines.Text(), "kubeconfig:") {
	}
	ready = time.Since(start)
	go func() {
		for lines.Scan() {
		}
	}()
	cfg, err = clientcmd.BuildConfigFromFlags("", kc)
	if err != nil {
		cmd.Process.Kill()
		b.Fatalf("kwrec serve wrote no kubeconfig: %v", err)
	}
	return cmd, cfg, start, ready
}

// inProcessRound opens the cassette and runs the informer on it in process.
func inProcessRound(b *testing.B, path string, final map[string]string) (toFinal, cpu time.Duration) {
	before := selfCPU(b)
	start := time.Now()
	r, err := replay.Open(path, replay.Options{})
	if err != nil {
		b.Fatal(err)
	}
	informUntil(b, r.Config(), final)
	toFinal = time.Since(start)
	r.Close()
	return toFinal, selfCPU(b) - before
}

// informUntil runs a ConfigMap informer in namespace default until it
// holds every object of final at its final resourceVersion.
func informUntil(b *testing.B, cfg *rest.Config, final map[string]string) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace("default"))
	inf := f.Core().V1().ConfigMaps().Informer()
	var mu sync.Mutex
	at := map[string]string{}
	done := make(chan struct{})
	matched := 0
	note := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		was := at[cm.Name] == final[cm.Name]
		at[cm.Name] = cm.ResourceVersion
		now := cm.ResourceVersion == final[cm.Name]
		switch {
		case now && !was:
			matched++
		case was && !now:
			matched--
		}
		if matched == len(final) {
			select {
			case <-done:
			default:
				close(done)
			}
		}
	}
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note,
		UpdateFunc: func(_, obj any) { note(obj) },
	})
	f.Start(ctx.Done())
	select {
	case <-done:
	case <-ctx.Done():
		b.Fatalf("the informer did not reach the final state in a minute: %d of %d objects", matched, len(final))
	}
	cancel()
	f.Shutdown()
}

func rusageCPU(ru *syscall.Rusage) time.Duration {
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func selfCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return rusageCPU(&ru)
}

// kwrecBinary builds cmd/kwrec once per process.
var kwrecBinary = func() func(testing.TB) string {
	var once sync.Once
	var bin string
	var err error
	return func(tb testing.TB) string {
		once.Do(func() {
			bin = filepath.Join(tempDir(tb), "kwrec")
			var out []byte
			out, err = exec.Command("go", "build", "-o", bin, "github.com/kwrec/kwrec/cmd/kwrec").CombinedOutput()
			if err != nil {
				err = fmt.Errorf("go build cmd/kwrec: %v\n%s", err, out)
			}
		})
		if err != nil {
			tb.Fatal(err)
		}
		return bin
	}
}()

// serveCassette writes, once per process, the recording as `kwrec record
// configmaps -n default` would: the list in pages of 500, then a watch
// from the list's resourceVersion with 1,200 MODIFIED events, 5 ms apart.
// final maps each name to its last resourceVersion.
var serveCassette = func() func(testing.TB) (string, map[string]string) {
	var once sync.Once
	var path string
	var final map[string]string
	var err error
	return func(tb testing.TB) (string, map[string]string) {
		once.Do(func() {
			path = filepath.Join(tempDir(tb), "configmaps-2000.kwrec.zst")
			final, err = writeServeCassette(path)
		})
		if err != nil {
			tb.Fatal(err)
		}
		return path, final
	}
}()

func writeServeCassette(path string) (map[string]string, error) {
	rng := rand.New(rand.NewPCG(2000, 1200))
	words := strings.Fields("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november " +
		"oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu cluster node pod service " +
		"deploy replica volume claim lease event watch list bookmark controller informer reflector cache store")
	text := func() string {
		var sb strings.Builder
		for sb.Len() < 4096 {
			sb.WriteString(words[rng.IntN(len(words))])
			sb.WriteByte(' ')
		}
		return sb.String()[:4096]
	}
	created := time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
	// Objects as the API server writes them: kind and apiVersion (in a
	// watch event, not in a list item), metadata, then data.
	object := func(i int, rv int64, data string, typeMeta bool) json.RawMessage {
		cm := corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("cm-%04d", i), Namespace: "default", ResourceVersion: fmt.Sprint(rv),
				UID:               types.UID(fmt.Sprintf("%08x-0000-4000-8000-%012x", i, i*7919)),
				CreationTimestamp: metav1.NewTime(created.Add(time.Duration(i) * time.Millisecond)),
				ManagedFields: []metav1.ManagedFieldsEntry{{
					Manager: "seed", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
					Time: &metav1.Time{Time: created}, FieldsType: "FieldsV1",
					FieldsV1: metav1.NewFieldsV1(`{"f:data":{".":{},"f:text":{}}}`),
				}},
			},
			Data: map[string]string{"text": data},
		}
		if typeMeta {
			cm.Kind, cm.APIVersion = "ConfigMap", "v1"
		}
		b, err := json.Marshal(&cm)
		if err != nil {
			panic(err)
		}
		return b
	}
	w, err := cassettes.Create(path, cassettes.Header{RecordedAt: created, Server: "v1.37.2"}, cassettes.WriterOptions{Compress: true})
	if err != nil {
		return nil, err
	}
	const base = "https://127.0.0.1:6443/api/v1/namespaces/default/configmaps"
	hdr := http.Header{"Accept": {"application/json, */*"}}
	resp := cassettes.Response{Status: 200, Latency: 5 * time.Millisecond, Header: http.Header{"Content-Type": {"application/json"}}}
	listRV := int64(1000 + serveObjects)
	final := map[string]string{}
	at := time.Duration(0)
	const page = 500
	cont := ""
	for start := 0; start < serveObjects; start += page {
		u := base + "?limit=500"
		if cont != "" {
			u = base + "?continue=" + cont + "&limit=500"
		}
		id, err := w.Request(at, cassettes.Request{Method: "GET", URL: u, Header: hdr})
		if err != nil {
			return nil, err
		}
		items := make([]any, 0, page)
		for i := start; i < start+page; i++ {
			rv := int64(1001 + i)
			items = append(items, object(i, rv, text(), false))
			final[fmt.Sprintf("cm-%04d", i)] = fmt.Sprint(rv)
		}
		meta := map[string]any{"resourceVersion": fmt.Sprint(listRV)}
		cont = ""
		if rest := serveObjects - start - page; rest > 0 {
			cont = base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, `{"v":"meta.k8s.io/v1","rv":%d,"start":"cm-%04d\u0000"}`, listRV, start+page-1))
			meta["continue"], meta["remainingItemCount"] = cont, rest
		}
		body, err := json.Marshal(struct {
			Kind       string         `json:"kind"`
			APIVersion string         `json:"apiVersion"`
			Metadata   map[string]any `json:"metadata"`
			Items      []any          `json:"items"`
		}{"ConfigMapList", "v1", meta, items})
		if err != nil {
			return nil, err
		}
		if err := w.Response(id, resp); err != nil {
			return nil, err
		}
		if err := w.Frame(id, cassettes.Frame{At: 20 * time.Millisecond, Data: append(body, '\n')}); err != nil {
			return nil, err
		}
		if err := w.End(id, cassettes.End{At: 20 * time.Millisecond, Reason: cassettes.EndEOF}); err != nil {
			return nil, err
		}
		at += 30 * time.Millisecond
	}
	u := fmt.Sprintf("%s?allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=600&watch=true", base, listRV)
	id, err := w.Request(at, cassettes.Request{Method: "GET", URL: u, Header: hdr})
	if err != nil {
		return nil, err
	}
	if err := w.Response(id, resp); err != nil {
		return nil, err
	}
	frameAt := time.Duration(0)
	for c := range serveChanges {
		i := rng.IntN(serveObjects)
		rv := listRV + 1 + int64(c)
		frameAt += 5 * time.Millisecond
		ev := wire.WatchEventJSON("MODIFIED", object(i, rv, text(), true))
		if err := w.Frame(id, cassettes.Frame{At: frameAt, Data: ev}); err != nil {
			return nil, err
		}
		final[fmt.Sprintf("cm-%04d", i)] = fmt.Sprint(rv)
	}
	if err := w.End(id, cassettes.End{At: frameAt + time.Second, Reason: cassettes.EndStopped}); err != nil {
		return nil, err
	}
	return final, w.Close()
}

// recordedCassette is what `kwrec record configmaps -n default` wrote
// against kube-apiserver v1.37.2 while 2,000 ConfigMaps of 4 KB of
// word-like text existed and then 1,000 were updated and 200 deleted:
// discovery, the 1.6 MB OpenAPI v3 document of api/v1, the JSON list (4
// pages of 500) and watch, and kubectl's Table-form list (4 pages) and
// watch (issue 30's shape: 3.2 MB).
const recordedCassette = "testdata/recorded-2000cm.kwrec.zst"

// BenchmarkServeStartsFastOnARecording measures `kwrec serve --speed 0` of
// [recordedCassette] as a user meets it: from exec to its "kubeconfig:"
// line (ready-ms, the mean; ready-p50-ms and ready-max-ms, target < 50),
// and to the answer of a first request, a get of one ConfigMap
// (first-p50-ms and first-max-ms): the cassette is read after the
// kubeconfig is written and the first request waits for it. Sub-benchmarks:
// the recording as written, and without its discovery and OpenAPI
// interactions (what a hand-built cassette lacks).
func BenchmarkServeStartsFastOnARecording(b *testing.B) {
	bin := kwrecBinary(b)
	bare := filepath.Join(b.TempDir(), "no-discovery.kwrec.zst")
	c, err := cassettes.Load(recordedCassette)
	if err != nil {
		b.Fatal(err)
	}
	kept := c.Interactions[:0]
	for _, in := range c.Interactions {
		if strings.Contains(in.Request.URL, "/namespaces/") {
			kept = append(kept, in)
		}
	}
	c.Interactions = kept
	if err := cassettes.Save(bare, c); err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, path string }{{"recorded", recordedCassette}, {"without-discovery", bare}} {
		b.Run(bc.name, func(b *testing.B) {
			var readies, firsts []time.Duration
			var sum time.Duration
			for range b.N {
				r, f := startRound(b, bin, bc.path)
				readies, firsts, sum = append(readies, r), append(firsts, f), sum+r
			}
			slices.Sort(readies)
			slices.Sort(firsts)
			ms := func(d time.Duration) float64 { return float64(d) / 1e6 }
			b.ReportMetric(ms(sum)/float64(b.N), "ready-ms")
			b.ReportMetric(ms(readies[len(readies)/2]), "ready-p50-ms")
			b.ReportMetric(ms(readies[len(readies)-1]), "ready-max-ms")
			b.ReportMetric(ms(firsts[len(firsts)/2]), "first-p50-ms")
			b.ReportMetric(ms(firsts[len(firsts)-1]), "first-max-ms")
		})
	}
}

// startRound starts kwrec serve of path and returns the time from exec to
// its kubeconfig line, and to the answer of one get through a client made
// from the kubeconfig.
func startRound(b *testing.B, bin, path string) (ready, first time.Duration) {
	cmd, cfg, start, ready := startServe(b, bin, path)
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(context.Background(), "cm-0001", metav1.GetOptions{}); err != nil {
		b.Fatalf("the first get: %v", err)
	}
	return ready, time.Since(start)
}
