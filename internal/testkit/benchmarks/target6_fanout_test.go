package benchmarks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay"
)

// fanWatchers is how many watchers target 6 serves at once: 1,000, or
// $KWREC_FAN_WATCHERS.
var fanWatchers = func() int {
	if n, err := strconv.Atoi(os.Getenv("KWREC_FAN_WATCHERS")); err == nil && n > 0 {
		return n
	}
	return 1000
}()

// fanTimeout bounds one fan-out run.
var fanTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("KWREC_FAN_TIMEOUT")); err == nil {
		return d
	}
	return 5 * time.Minute
}()

// fanRecording is a watch of one namespace's ConfigMaps from
// resourceVersion from: its event frames (JSON lines, as the API server
// sent them), when each came, and their resourceVersions, the sequence
// every watcher must receive.
type fanRecording struct {
	ns     string
	from   int64
	frames [][]byte
	at     []time.Duration
	rvs    []int64
}

// fanWords and fanNumbers are what a word of [fanPayload] is drawn from:
// one of the words, then a number below fanNumbers.
var fanWords = strings.Fields("replica shard leader lease zone rack node pod volume claim " +
	"bucket tenant region quota limit probe sidecar ingress route policy")

const fanNumbers = 1000

// fanPayload is a ConfigMap's data of about n bytes of word-like text,
// different for every i: words of [fanWords] and [fanNumbers], each drawn
// at random.
func fanPayload(i, n int) string {
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	var b strings.Builder
	for b.Len() < n {
		b.WriteString(fanWords[rng.IntN(len(fanWords))])
		b.WriteString(strconv.Itoa(rng.IntN(fanNumbers)))
		b.WriteByte(' ')
	}
	return b.String()
}

// synthRecording makes a recording without an API server: objs ConfigMaps
// created, then updated in turn, n events in all, every gap long, each
// shaped as kube-apiserver v1.37 writes it (uid, creationTimestamp,
// managedFields), data about size bytes.
func synthRecording(objs, n, size int, gap time.Duration) *fanRecording {
	rec := &fanRecording{ns: "fanout", from: 1000}
	for k := range n {
		i, typ := k%objs, "ADDED"
		if k >= objs {
			typ = "MODIFIED"
		}
		rv := rec.from + 1 + int64(k)
		obj := fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%04d","namespace":"fanout",`+
			`"uid":"6f1c2a53-0000-4000-8000-%012d","resourceVersion":"%d","creationTimestamp":"2026-12-01T10:00:00Z",`+
			`"managedFields":[{"manager":"kwrec-bench","operation":"Update","apiVersion":"v1","time":"2026-12-01T10:00:00Z",`+
			`"fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:payload":{}}}}]},"data":{"payload":%q}}`,
			i, i, rv, fanPayload(k, size))
		rec.frames = append(rec.frames, wire.WatchEventJSON(typ, []byte(obj)))
		rec.at = append(rec.at, time.Duration(k+1)*gap)
		rec.rvs = append(rec.rvs, rv)
	}
	return rec
}

// watchPath is the collection path of the recording's namespace.
func (rec *fanRecording) watchPath() string { return "/api/v1/namespaces/" + rec.ns + "/configmaps" }

// cassette writes the recording as a kwrec cassette (zstd) in dir, as
// kwrec record would have recorded a reflector: a list at from, then its
// watch from there. The benchmark's watchers ask for a watch without
// bookmarks (as kubectl get -w does), so every one of them is answered
// from the timeline, none byte for byte from the recorded interaction.
func (rec *fanRecording) cassette(tb testing.TB, dir string) string {
	path := filepath.Join(dir, fmt.Sprintf("fanout-%d-%d.kwrec.zst", len(rec.frames), rec.from))
	if _, err := os.Stat(path); err == nil {
		return path
	}
	w, err := cassettes.Create(path, cassettes.Header{Server: "v1.37.2"}, cassettes.WriterOptions{FlushInterval: time.Hour})
	if err != nil {
		tb.Fatal(err)
	}
	const host = "https://127.0.0.1:6443"
	jsonAccept := map[string][]string{"Accept": {"application/json"}}
	jsonType := map[string][]string{"Content-Type": {"application/json"}}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: host + rec.watchPath() + "?limit=500", Header: jsonAccept})
	w.Response(id, cassettes.Response{Status: 200, Header: jsonType})
	w.Frame(id, cassettes.Frame{Data: fmt.Appendf(nil, `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[]}`+"\n", rec.from)})
	w.End(id, cassettes.End{Reason: cassettes.EndEOF})
	id, _ = w.Request(time.Millisecond, cassettes.Request{Method: "GET",
		URL: host + rec.watchPath() + "?allowWatchBookmarks=true&resourceVersion=" + strconv.FormatInt(rec.from, 10) + "&timeoutSeconds=540&watch=true", Header: jsonAccept})
	w.Response(id, cassettes.Response{Status: 200, Header: jsonType})
	for k, f := range rec.frames {
		if err := w.Frame(id, cassettes.Frame{At: rec.at[k], Data: f}); err != nil {
			tb.Fatal(err)
		}
	}
	w.End(id, cassettes.End{At: rec.at[len(rec.at)-1] + time.Second, Reason: cassettes.EndStopped})
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return path
}

// fanClient is a raw watch client of one server: client-go's own
// transport (rest.HTTPClientFor: HTTP/2, the watches of a process
// multiplexed over a few connections), asking what kubectl get -w asks,
// reading frames as they come. It decodes nothing but each event's
// resourceVersion, so that the clients take as little of the 2 cores as
// they can and the servers are what is measured; both servers get the
// same clients.
type fanClient struct {
	hcs  []*http.Client // watcher i uses hcs[i%len(hcs)]
	base string         // scheme://host, no trailing slash
}

// fanProcs is how many client processes the watchers stand for, each
// with its own transport and so its own connections: $KWREC_FAN_PROCS,
// default 1.
var fanProcs = func() int {
	if n, err := strconv.Atoi(os.Getenv("KWREC_FAN_PROCS")); err == nil && n > 0 {
		return n
	}
	return 1
}()

func newFanClient(tb testing.TB, cfg *rest.Config) *fanClient {
	c := &fanClient{base: strings.TrimSuffix(cfg.Host, "/")}
	for range fanProcs {
		cfg := rest.CopyConfig(cfg)
		cfg.QPS, cfg.Burst = -1, -1
		// A proxy function makes a transport client-go does not share
		// with other configs.
		cfg.Proxy = func(*http.Request) (*url.URL, error) { return nil, nil }
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			tb.Fatal(err)
		}
		c.hcs = append(c.hcs, hc)
	}
	return c
}

func (c *fanClient) close() {
	for _, hc := range c.hcs {
		hc.CloseIdleConnections()
	}
}

// fanWatch is one watcher's result.
type fanWatch struct {
	rvs       []int64 // the events received, in order
	rewatches int     // clean ends before the last event, each followed by a re-watch
	err       error
	late      []time.Duration // with a schedule: each event's arrival less its scheduled time
}

// watch watches path from resourceVersion from until it has n events, in
// order: those of want when it is not nil, else strictly increasing
// resourceVersions. started is called once the first response's headers
// are in. A stream that ends cleanly before (the API server's end for a
// watcher that cannot keep up) is watched again from the last
// resourceVersion received, as client-go's reflector does. With sched,
// each event's lateness against sched(k) is kept.
func (c *fanClient) watch(ctx context.Context, hc *http.Client, path string, from int64, n int, want []int64, started func(), sched func(k int) time.Time) (res fanWatch) {
	rv := from
	first := true
	res.rvs = make([]int64, 0, n)
	for len(res.rvs) < n && res.err == nil {
		u := c.base + path + "?resourceVersion=" + strconv.FormatInt(rv, 10) + "&timeoutSeconds=3600&watch=true"
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			res.err = err
			break
		}
		req.Header.Set("Accept", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			res.err = err
			break
		}
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			resp.Body.Close()
			res.err = fmt.Errorf("watch from %d: %s: %s", rv, resp.Status, b)
			break
		}
		if first {
			first = false
			started()
		}
		before := len(res.rvs)
		res.err = readEvents(resp.Body, n, want, &res, sched)
		resp.Body.Close()
		if len(res.rvs) < n && res.err == nil {
			if len(res.rvs) == before {
				res.err = fmt.Errorf("watch from %d ended with no event", rv)
				break
			}
			res.rewatches++
			rv = res.rvs[len(res.rvs)-1]
		}
	}
	if first {
		started()
	}
	return res
}

// readEvents reads JSON watch lines from body into res until it has n
// events, the body ends (nil), or an event is out of order.
func readEvents(body io.Reader, n int, want []int64, res *fanWatch, sched func(int) time.Time) error {
	br := bufio.NewReaderSize(body, 16<<10)
	var long []byte
	for len(res.rvs) < n {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			long = append(long, line...)
			continue
		}
		if len(long) > 0 {
			long = append(long, line...)
			line, long = long, long[:0]
		}
		if len(line) > 0 && line[len(line)-1] == '\n' {
			typ := line[:min(len(line), 24)]
			if bytes.Contains(typ, []byte(`"BOOKMARK"`)) {
				continue
			}
			if bytes.Contains(typ, []byte(`"ERROR"`)) {
				return fmt.Errorf("ERROR event after %d events: %.300s", len(res.rvs), line)
			}
			rv, k := wire.ScanRV(line), len(res.rvs)
			switch {
			case want != nil && rv != want[k]:
				return fmt.Errorf("event %d: resourceVersion %d, want %d", k, rv, want[k])
			case want == nil && k > 0 && rv <= res.rvs[k-1]:
				return fmt.Errorf("event %d: resourceVersion %d after %d", k, rv, res.rvs[k-1])
			}
			if sched != nil {
				res.late = append(res.late, time.Since(sched(k)))
			}
			res.rvs = append(res.rvs, rv)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// fanRun is one run of n watchers through c.
type fanRun struct {
	d       time.Duration // from release to the last watcher's last event
	cpu     time.Duration // this process's CPU meanwhile (the clients, and an in-process server)
	alloc   uint64        // bytes allocated meanwhile
	gcs     uint32        // garbage collections meanwhile
	results []fanWatch
}

// cpuTime returns the CPU time (user and system) this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fanOut runs n watchers of path from resourceVersion from through c, each
// until it has events events (want, if not nil). Once every watcher has
// its response headers, release is called and the clock starts; it stops
// when every watcher has every event. With release nil, the events come
// as the watches start: the clock starts with the first one. It fails b
// if any watcher missed an event or got one out of order.
func fanOut(b *testing.B, c *fanClient, path string, from int64, events int, want []int64, n int, release func(), sched func(k int) time.Time) fanRun {
	ctx, cancel := context.WithTimeout(context.Background(), fanTimeout)
	defer cancel()
	results := make([]fanWatch, n)
	var done sync.WaitGroup
	t0, cpu0 := time.Now(), cpuTime()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	inWaves(n, &done, func(i int, ready func()) {
		results[i] = c.watch(ctx, c.hcs[i%len(c.hcs)], path, from, events, want, ready, sched)
	})
	if release != nil {
		// The setup's garbage (a thousand handshakes and requests) is
		// collected before the clock starts, as side.run does: a
		// collection of it during a burst would be counted against the
		// deliveries.
		runtime.GC()
		t0, cpu0 = time.Now(), cpuTime()
		runtime.ReadMemStats(&m0)
		release()
	}
	done.Wait()
	run := fanRun{d: time.Since(t0), cpu: cpuTime() - cpu0, results: results}
	runtime.ReadMemStats(&m1)
	run.alloc, run.gcs = m1.TotalAlloc-m0.TotalAlloc, m1.NumGC-m0.NumGC
	bad := 0
	for i, r := range results {
		if r.err != nil || len(r.rvs) != events {
			if bad < 3 {
				b.Errorf("watcher %d: %d of %d events: %v", i, len(r.rvs), events, r.err)
			}
			bad++
		}
	}
	if bad > 0 {
		b.Fatalf("%d of %d watchers did not receive every event in order", bad, n)
	}
	if want == nil { // every watcher the same sequence
		for i, r := range results {
			if !slices.Equal(r.rvs, results[0].rvs) {
				b.Fatalf("watcher %d received another sequence than watcher 0", i)
			}
		}
	}
	return run
}

// replayServer serves the cassette at path over HTTPS (h2) as kwrec serve
// does (replay.Open, replay.Server), holding its recorded changes until
// Play.
func replayServer(b *testing.B, path string, opts replay.Options) (*replay.Replayer, *replay.Server) {
	opts.Hold = true
	r, err := replay.Open(path, opts)
	if err != nil {
		b.Fatal(err)
	}
	srv := &replay.Server{Replayer: r}
	if err := srv.Start(); err != nil {
		b.Fatal(err)
	}
	return r, srv
}

// BenchmarkFanOut is target 6 (issue 16, items 4 and 5): one recorded
// collection served by kwrec's replay server to 1,000 concurrent watchers,
// against kube-apiserver.
//
// speed=0: the events/s delivered to 1,000 watchers, all receiving every
// event in order, by the replay server and by the real kube-apiserver
// (v1.37.2, watch cache on, etcd v3.7.0) on the same machine, with the same
// clients (see fanClient). The apiserver side: 1,000 watchers of an empty
// namespace from its resourceVersion, then 100 ConfigMaps created and
// updated by 8 writers, 1,000 events in all (1 KB of data each), timed
// from the first write to the last watcher's last event ("live": its watch
// cache serializes each event once, cachingObject); then 1,000 new watchers
// of the same events from that old resourceVersion ("history": each
// watcher is served from the cache on its own), timed from the first
// request. The same writes with no watcher first (apiserver-writes-alone/s)
// show what the writers alone reach: far more than during the live run,
// whose writes the fan-out slows (the API server's CPU is what runs out). Watcher 0's frames of the
// first live run, as it received them, are the cassette the replay side
// serves (replay.Open, replay.Server over HTTPS/h2 as kwrec serve does,
// Options.Hold until every watcher has its headers, then timed from Play
// to the last event). Each op runs both sides, alternating which goes
// first. Metrics: replay-events/s, apiserver-live-events/s,
// apiserver-history-events/s, replay/apiserver (against the better
// apiserver mode; target >= 2), replay-cpu-µs/event and
// apiserver-live-cpu-µs/event (the server's CPU and the clients', per
// event delivered: on a loaded machine the steadier comparison),
// apiserver-writes/s (during the live runs).
// Without the control plane binaries only the replay side runs, on a
// generated recording of the same shape.
//
// idle: the memory of 1,000 idle watchers (watching from the newest
// resourceVersion, no event coming) divided by 1,000: the RSS growth of a
// replay server in a subprocess (replay-idle-KB/watcher, target < 64) and
// of the kube-apiserver process (apiserver-idle-KB/watcher; its GC makes
// it jump), and the growth of each one's Go heap in use and stacks after a
// GC (-idle-heap-KB/watcher; the API server's from its /debug/pprof/heap).
// The watches share one HTTP/2 connection, as client-go's do; idle-http1
// is the same with each watch on an HTTP/1.1 connection of its own, as
// python3-kubernetes (urllib3) watches.
//
// speed=1, 10, 100: 1,000 watchers of a recording of 100 events 50 ms
// apart (20 events/s) replayed at that speed; each event's lateness is its
// arrival at the client less its scheduled time (Play plus its recorded
// offset over the speed): lateness-p50-ms, -p99-ms, -max-ms (target: p99 <
// 20 ms at speed 1); burst-last-p50-ms and -p90-ms, the lateness of each
// event at the last of its 1,000 watchers (how long a burst takes to go
// out), and bursts-over-20ms-%: a burst whose last delivery is late by
// more than 20 ms; about one in a hundred deliveries is in its slowest
// tenth, so a few percent of such bursts set the p99 whatever the
// others do; rewatches (watches ended for falling behind), and
// cpu-µs/delivery, the process's CPU (server and clients) from Play to the
// last event per event delivered: what bounds how fast a burst of 1,000
// deliveries can go out, and steadier than lateness on a loaded machine;
// B/delivery, the bytes allocated meanwhile, and gcs/run, the garbage
// collections: one that runs during a burst makes the whole burst late,
// 1% of the deliveries, which is the p99. The server runs in the
// benchmark's process, where Go polls the network only once its run
// queues are empty: the clients read a burst only once the server has
// written all of it. With $KWREC_FAN_SERVE_CHILD set it runs in a child
// process instead, as kwrec serve runs apart from its clients, and
// server-cpu-µs/delivery is its CPU (cpu-µs/delivery, B/delivery and
// gcs/run are then the clients' alone).
//
// These take 1-2 minutes each; KWREC_FAN_WATCHERS changes the 1,000.
func BenchmarkFanOut(b *testing.B) {
	b.Run("speed=0", benchFanOutRate)
	b.Run("idle", func(b *testing.B) { benchFanOutIdle(b, false) })
	b.Run("idle-http1", func(b *testing.B) { benchFanOutIdle(b, true) })
	for _, speed := range []float64{1, 10, 100} {
		b.Run(fmt.Sprintf("speed=%v", speed), func(b *testing.B) { benchFanOutLate(b, speed) })
	}
}

// fanNS numbers the namespaces of the apiserver runs of a process.
var fanNS atomic.Int64

// apiserverSide runs the kube-apiserver side of target 6 on cp: see
// BenchmarkFanOut. rec, if not nil, is filled with watcher 0's live
// frames.
type apiserverSide struct {
	cp      *controlplanetest.ControlPlane
	cs      kubernetes.Interface
	c       *fanClient
	pid     int
	objs    int
	events  int
	rec     *fanRecording
	live    side
	history side
	writes  side          // the writes of the live runs
	alone   side          // the same writes with no watcher
	cpu     time.Duration // apiserver's and clients' CPU, live runs
}

func (a *apiserverSide) run(b *testing.B, n int) {
	ctx := context.Background()
	a.alone.d += a.write(b, a.namespace(b))
	a.alone.events += a.events
	ns := a.namespace(b)
	l, err := a.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		b.Fatal(err)
	}
	from, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
	path := "/api/v1/namespaces/" + ns + "/configmaps"
	var writeTime time.Duration
	var frames [][]byte
	var at []time.Duration
	var t0 time.Time
	record := a.rec.frames == nil
	release := func() {
		t0 = time.Now()
		writeTime = a.write(b, ns)
	}
	var rec0 func(line []byte)
	if record {
		rec0 = func(line []byte) {
			frames = append(frames, bytes.Clone(line))
			at = append(at, time.Since(t0))
		}
	}
	cpu0 := procCPU(a.pid)
	run := fanOutRecording(b, a.c, path, from, a.events, n, release, rec0)
	a.cpu += run.cpu + procCPU(a.pid) - cpu0
	a.live.d += run.d
	a.live.events += a.events * n
	a.writes.d += writeTime
	a.writes.events += a.events
	if record {
		var rvs []int64
		for _, f := range frames {
			rvs = append(rvs, wire.ScanRV(f))
		}
		if !slices.Equal(rvs, run.results[0].rvs) {
			b.Fatalf("the recorded watcher got %d events, not the %d every watcher got", len(rvs), len(run.results[0].rvs))
		}
		*a.rec = fanRecording{ns: ns, from: from, frames: frames, at: at, rvs: rvs}
	}
	// The same events again, to new watchers from the old resourceVersion.
	h := fanOut(b, a.c, path, from, a.events, run.results[0].rvs, n, nil, nil)
	a.history.d += h.d
	a.history.events += a.events * n
}

// namespace creates a new namespace and returns its name.
func (a *apiserverSide) namespace(b *testing.B) string {
	ns := fmt.Sprintf("fanout-%d", fanNS.Add(1))
	if _, err := a.cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	return ns
}

// write makes a.events changes in namespace ns: a.objs ConfigMaps
// created, then updated in turn, by 8 writers at once; it returns how long
// they took.
func (a *apiserverSide) write(b *testing.B, ns string) time.Duration {
	ctx := context.Background()
	cms := a.cs.CoreV1().ConfigMaps(ns)
	start := time.Now()
	created := make([]chan struct{}, a.objs)
	for i := range created {
		created[i] = make(chan struct{})
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				k := int(next.Add(1)) - 1
				if k >= a.events {
					return
				}
				name := fmt.Sprintf("cm-%04d", k%a.objs)
				var err error
				if k < a.objs {
					_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"payload": fanPayload(k, 1024)}}, metav1.CreateOptions{FieldManager: "kwrec-bench"})
					close(created[k])
				} else {
					<-created[k%a.objs] // an update after its object's create
					patch, _ := json.Marshal(map[string]any{"data": map[string]string{"payload": fanPayload(k, 1024)}})
					_, err = cms.Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "kwrec-bench"})
				}
				if err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// fanOutRecording is fanOut whose watcher 0 also hands every frame it
// gets to rec (when not nil), for the cassette of the replay side.
func fanOutRecording(b *testing.B, c *fanClient, path string, from int64, events, n int, release func(), rec func([]byte)) fanRun {
	if rec == nil {
		return fanOut(b, c, path, from, events, nil, n, release, nil)
	}
	recorder := &recordingClient{fanClient: c, rec: rec}
	return fanOut(b, recorder.client(), path, from, events, nil, n, release, nil)
}

// recordingClient wraps the first transport of a fanClient so that the
// first watch it serves hands its body's lines to rec.
type recordingClient struct {
	*fanClient
	rec  func([]byte)
	once sync.Once
}

func (r *recordingClient) client() *fanClient {
	c := *r.fanClient
	c.hcs = slices.Clone(c.hcs)
	hc := *c.hcs[0]
	next := hc.Transport
	hc.Transport = roundTripFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := next.RoundTrip(req)
		if err == nil {
			r.once.Do(func() { resp.Body = &lineTap{ReadCloser: resp.Body, fn: r.rec} })
		}
		return resp, err
	})
	c.hcs[0] = &hc
	return &c
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// lineTap hands each whole line read through it to fn.
type lineTap struct {
	io.ReadCloser
	fn   func([]byte)
	part []byte
}

func (t *lineTap) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	data := p[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			t.part = append(t.part, data...)
			break
		}
		t.fn(append(t.part, data[:i+1]...))
		t.part = t.part[:0]
		data = data[i+1:]
	}
	return n, err
}

// procCPU returns the CPU time process pid has used (0 for pid 0).
func procCPU(pid int) time.Duration {
	if pid == 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// After the command in parentheses: state is field 3, utime 14, stime 15.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ
}

// childPID returns the pid of this process's child running the program
// named name, 0 if none.
func childPID(name string) int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
		if open < 0 || close < open || string(b[open+1:close]) != name[:min(len(name), 15)] {
			continue
		}
		f := strings.Fields(string(b[close+2:]))
		if len(f) > 1 && f[1] == strconv.Itoa(os.Getpid()) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			return pid
		}
	}
	return 0
}

// vmRSS returns the resident memory of process pid ("self" for this one)
// in KB.
func vmRSS(pid string) float64 {
	b, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb
		}
	}
	return 0
}

// controlPlane starts the control plane for the benchmarks of this
// process, once, and stops it when they are done.
var controlPlane = sync.OnceValues(func() (*controlplanetest.ControlPlane, error) {
	cp, err := controlplanetest.StartEnv()
	if err == nil {
		fanCleanup = append(fanCleanup, func() { cp.Stop() })
	}
	return cp, err
})

// startControlPlane returns the control plane, nil without its binaries.
func startControlPlane(b *testing.B) *controlplanetest.ControlPlane {
	cp, err := controlPlane()
	if errors.Is(err, controlplanetest.ErrNoBinaries) {
		return nil
	}
	if err != nil {
		b.Fatal(err)
	}
	return cp
}

// fanCleanup runs when the benchmarks are done (TestMain).
var fanCleanup []func()

// benchFanOutRate: 1,000 watchers at speed 0, replay against kube-apiserver.
func benchFanOutRate(b *testing.B) {
	const objs, events = 100, 1000
	var api *apiserverSide
	rec := synthRecording(objs, events, 1024, time.Millisecond)
	if cp := startControlPlane(b); cp != nil {
		cs, err := kubernetes.NewForConfig(withFormat(rest.CopyConfig(cp.Config), benchmarks.JSON))
		if err != nil {
			b.Fatal(err)
		}
		rec = &fanRecording{}
		api = &apiserverSide{cp: cp, cs: cs, c: newFanClient(b, cp.Config), pid: childPID("kube-apiserver"), objs: objs, events: events, rec: rec}
		defer api.c.close()
	} else {
		b.Log("no control plane binaries (see internal/testkit/controlplanetest): the replay side only, on a generated recording")
	}
	var replaySide side
	var replayCPU time.Duration
	prof := os.Getenv(profileEnv)
	runReplay := func() {
		path := rec.cassette(b, tempDir(b))
		r, srv := replayServer(b, path, replay.Options{})
		defer func() { srv.Close(); r.Close() }()
		c := newFanClient(b, srv.Config())
		defer c.close()
		var pf *os.File
		if prof != "" {
			var err error
			if pf, err = os.Create(filepath.Join(prof, "fanout.cpu.pprof")); err != nil {
				b.Fatal(err)
			}
		}
		run := fanOut(b, c, rec.watchPath(), rec.from, len(rec.rvs), rec.rvs, fanWatchers, func() {
			if pf != nil {
				pprof.StartCPUProfile(pf)
			}
			r.Play()
		}, nil)
		if pf != nil {
			pprof.StopCPUProfile()
			pf.Close()
		}
		replaySide.d += run.d
		replaySide.events += len(rec.rvs) * fanWatchers
		replayCPU += run.cpu
	}
	i := 0
	for b.Loop() {
		if api != nil && (i%2 == 0 || len(rec.rvs) == 0) {
			api.run(b, fanWatchers)
			runReplay()
		} else {
			runReplay()
			if api != nil {
				api.run(b, fanWatchers)
			}
		}
		i++
	}
	b.ReportMetric(replaySide.rate(), "replay-events/s")
	b.ReportMetric(float64(replayCPU.Microseconds())/float64(replaySide.events), "replay-cpu-µs/event")
	if api == nil {
		return
	}
	b.ReportMetric(api.live.rate(), "apiserver-live-events/s")
	b.ReportMetric(api.history.rate(), "apiserver-history-events/s")
	b.ReportMetric(api.writes.rate(), "apiserver-writes/s")
	b.ReportMetric(api.alone.rate(), "apiserver-writes-alone/s")
	b.ReportMetric(float64(api.cpu.Microseconds())/float64(api.live.events), "apiserver-live-cpu-µs/event")
	b.ReportMetric(replaySide.rate()/max(api.live.rate(), api.history.rate()), "replay/apiserver")
}

// benchFanOutIdle: the memory of 1,000 idle watchers; with http1, each on
// a connection of its own (HTTP/1.1, as python3-kubernetes' urllib3
// watches), else multiplexed over HTTP/2 as client-go's.
func benchFanOutIdle(b *testing.B, http1 bool) {
	conns := func(cfg *rest.Config) *rest.Config {
		if http1 {
			cfg = rest.CopyConfig(cfg)
			cfg.TLSClientConfig.NextProtos = []string{"http/1.1"}
		}
		return cfg
	}
	rec := synthRecording(100, 1000, 1024, time.Millisecond)
	path := rec.cassette(b, tempDir(b))
	last := rec.rvs[len(rec.rvs)-1]
	var replayKB, replayHeapKB, apiKB, apiHeapKB float64
	rounds := 0
	for b.Loop() {
		rounds++
		child := startFanServer(b, path)
		c := newFanClient(b, conns(child.cfg))
		before := child.mem(b)
		stop := idleWatches(b, c, rec.watchPath(), last, fanWatchers)
		after := child.mem(b)
		stop()
		c.close()
		child.stop(b)
		replayKB += (after.RSSKB - before.RSSKB) / float64(fanWatchers)
		replayHeapKB += (after.GoKB - before.GoKB) / float64(fanWatchers)
		if cp := startControlPlane(b); cp != nil {
			pid := childPID("kube-apiserver")
			cs, err := kubernetes.NewForConfig(cp.Config)
			if err != nil {
				b.Fatal(err)
			}
			ns := fmt.Sprintf("fanout-%d", fanNS.Add(1))
			if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				b.Fatal(err)
			}
			from, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
			c := newFanClient(b, conns(cp.Config))
			time.Sleep(time.Second)
			rss0, heap0 := vmRSS(strconv.Itoa(pid)), goMemKB(b, cs)
			stop := idleWatches(b, c, "/api/v1/namespaces/"+ns+"/configmaps", from, fanWatchers)
			time.Sleep(time.Second)
			rss1, heap1 := vmRSS(strconv.Itoa(pid)), goMemKB(b, cs)
			stop()
			c.close()
			apiKB += (rss1 - rss0) / float64(fanWatchers)
			apiHeapKB += (heap1 - heap0) / float64(fanWatchers)
		}
	}
	b.ReportMetric(replayKB/float64(rounds), "replay-idle-KB/watcher")
	b.ReportMetric(replayHeapKB/float64(rounds), "replay-idle-heap-KB/watcher")
	if apiHeapKB != 0 {
		b.ReportMetric(apiKB/float64(rounds), "apiserver-idle-KB/watcher")
		b.ReportMetric(apiHeapKB/float64(rounds), "apiserver-idle-heap-KB/watcher")
	}
}

// goMemKB returns the Go heap in use and stacks of the API server after a
// GC, in KB, from its /debug/pprof/heap (on by default: --profiling).
func goMemKB(b *testing.B, cs kubernetes.Interface) float64 {
	out, err := cs.CoreV1().RESTClient().Get().AbsPath("/debug/pprof/heap").Param("debug", "1").Param("gc", "1").DoRaw(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	var heap, stack float64
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "# HeapInuse = "); ok {
			heap, _ = strconv.ParseFloat(v, 64)
		}
		if v, ok := strings.CutPrefix(l, "# Stack = "); ok {
			in, _, _ := strings.Cut(v, " ")
			stack, _ = strconv.ParseFloat(in, 64)
		}
	}
	if heap == 0 {
		b.Fatalf("no HeapInuse in the API server's heap profile")
	}
	return (heap + stack) / 1024
}

// inWaves runs watch(i, ready) for i in [0, n), each on its own goroutine
// counted in done, in waves of 50, each started once the one before is
// ready (has its headers): all at once, Go's transport dials a connection
// for every request still waiting before HTTP/2 multiplexes them, and the
// servers' TLS handshakes of those would run into the measured time.
func inWaves(n int, done *sync.WaitGroup, watch func(i int, ready func())) {
	const wave = 50
	for w := 0; w < n; w += wave {
		var ready sync.WaitGroup
		for i := w; i < min(w+wave, n); i++ {
			ready.Add(1)
			done.Add(1)
			go func() {
				defer done.Done()
				watch(i, ready.Done)
			}()
		}
		ready.Wait()
	}
}

// idleWatches opens n watches of path from resourceVersion from, which
// send nothing, and returns once all have their headers; stop ends them.
func idleWatches(b *testing.B, c *fanClient, path string, from int64, n int) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var done sync.WaitGroup
	inWaves(n, &done, func(i int, ready func()) {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path+"?resourceVersion="+strconv.FormatInt(from, 10)+"&timeoutSeconds=3600&watch=true", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := c.hcs[i%len(c.hcs)].Do(req)
		ready()
		if err != nil {
			b.Error(err)
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	})
	time.Sleep(500 * time.Millisecond)
	return func() { cancel(); done.Wait() }
}

// fanServeEnv names the variable that makes the test binary a replay
// server (see fanServe) instead of running tests; its value is the
// cassette.
const fanServeEnv = "KWREC_BENCH_FANSERVE"

// fanServeInfo is what a fanServe child prints first: how to reach it.
type fanServeInfo struct {
	URL, Token string
	CA         []byte
}

// fanMem is what a fanServe child prints for each "mem" line it reads.
type fanMem struct {
	RSSKB float64 // VmRSS
	GoKB  float64 // heap in use and stacks, after a GC
}

// fanServeSpeedEnv names the variable that sets the speed of a fanServe
// child; with a speed above 0 it holds its recorded changes until it
// reads a "play" line.
const fanServeSpeedEnv = "KWREC_BENCH_FANSERVE_SPEED"

// fanServe serves the cassette at path as kwrec serve does, prints a
// fanServeInfo line, then a fanMem line for every line it reads ("play"
// plays the replay first), until its input ends. TestMain runs it in
// place of the tests.
func fanServe(path string) int {
	var opts replay.Options
	if v, err := strconv.ParseFloat(os.Getenv(fanServeSpeedEnv), 64); err == nil && v > 0 {
		opts.Speed, opts.Hold = v, true
	}
	r, err := replay.Open(path, opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	srv := &replay.Server{Replayer: r}
	if err := srv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	enc := json.NewEncoder(os.Stdout)
	enc.Encode(fanServeInfo{URL: srv.URL(), Token: srv.Token(), CA: srv.CA()})
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		if sc.Text() == "play" {
			r.Play()
			continue
		}
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		enc.Encode(fanMem{RSSKB: vmRSS("self"), GoKB: float64(ms.HeapInuse+ms.StackInuse) / 1024})
	}
	srv.Close()
	r.Close()
	return 0
}

// fanChild is a fanServe subprocess.
type fanChild struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
	cfg *rest.Config
}

func startFanServer(b *testing.B, path string, env ...string) *fanChild {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), fanServeEnv+"="+path), env...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	ch := &fanChild{cmd: cmd, in: in, out: json.NewDecoder(out)}
	var info fanServeInfo
	if err := ch.out.Decode(&info); err != nil {
		b.Fatalf("replay server child: %v", err)
	}
	ch.cfg = &rest.Config{Host: info.URL, BearerToken: info.Token, TLSClientConfig: rest.TLSClientConfig{CAData: info.CA}}
	return ch
}

func (ch *fanChild) mem(b *testing.B) fanMem {
	time.Sleep(500 * time.Millisecond)
	io.WriteString(ch.in, "mem\n")
	var m fanMem
	if err := ch.out.Decode(&m); err != nil {
		b.Fatal(err)
	}
	return m
}

func (ch *fanChild) stop(b *testing.B) {
	ch.in.Close()
	if err := ch.cmd.Wait(); err != nil {
		b.Error(err)
	}
}

// fanLateChildEnv, set, makes benchFanOutLate serve from a child process,
// as kwrec serve runs apart from its clients: cpu-µs/delivery,
// B/delivery and gcs/run are then the clients' alone, and
// server-cpu-µs/delivery the server's.
const fanLateChildEnv = "KWREC_FAN_SERVE_CHILD"

// benchFanOutLate: 1,000 watchers at speed > 0, each event's lateness.
func benchFanOutLate(b *testing.B, speed float64) {
	const gap = 50 * time.Millisecond
	rec := synthRecording(100, 100, 1024, gap)
	path := rec.cassette(b, tempDir(b))
	var late []time.Duration
	var bursts []time.Duration // each event's lateness at its last watcher
	var cpu time.Duration
	var alloc uint64
	var gcs uint32
	rewatches, deliveries := 0, 0
	var serverCPU time.Duration
	child := os.Getenv(fanLateChildEnv) != ""
	for b.Loop() {
		var played time.Time
		// The watch interaction was recorded 1 ms after the list its
		// resourceVersion comes from; event k rec.at[k] after that.
		sched := func(k int) time.Time {
			return played.Add(time.Duration(float64(time.Millisecond+rec.at[k]) / speed))
		}
		var run fanRun
		if child {
			ch := startFanServer(b, path, fanServeSpeedEnv+"="+strconv.FormatFloat(speed, 'g', -1, 64))
			c := newFanClient(b, ch.cfg)
			var cpu0 time.Duration
			run = fanOut(b, c, rec.watchPath(), rec.from, len(rec.rvs), rec.rvs, fanWatchers, func() {
				cpu0 = procCPU(ch.cmd.Process.Pid)
				played = time.Now()
				io.WriteString(ch.in, "play\n")
			}, sched)
			serverCPU += procCPU(ch.cmd.Process.Pid) - cpu0
			c.close()
			ch.stop(b)
		} else {
			r, srv := replayServer(b, path, replay.Options{Speed: speed})
			c := newFanClient(b, srv.Config())
			run = fanOut(b, c, rec.watchPath(), rec.from, len(rec.rvs), rec.rvs, fanWatchers, func() {
				played = time.Now()
				r.Play()
			}, sched)
			c.close()
			srv.Close()
			r.Close()
		}
		cpu += run.cpu
		alloc += run.alloc
		gcs += run.gcs
		deliveries += len(rec.rvs) * fanWatchers
		for _, res := range run.results {
			late = append(late, res.late...)
			rewatches += res.rewatches
		}
		for k := range rec.rvs {
			var last time.Duration
			for _, res := range run.results {
				last = max(last, res.late[k])
			}
			bursts = append(bursts, last)
		}
	}
	slices.Sort(bursts)
	bq := func(p float64) float64 {
		return float64(bursts[min(len(bursts)-1, int(p*float64(len(bursts))))]) / float64(time.Millisecond)
	}
	over, _ := slices.BinarySearch(bursts, 20*time.Millisecond+1)
	b.ReportMetric(bq(0.50), "burst-last-p50-ms")
	b.ReportMetric(bq(0.90), "burst-last-p90-ms")
	b.ReportMetric(100*float64(len(bursts)-over)/float64(len(bursts)), "bursts-over-20ms-%")
	slices.Sort(late)
	q := func(p float64) float64 {
		return float64(late[min(len(late)-1, int(p*float64(len(late))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(q(0.50), "lateness-p50-ms")
	b.ReportMetric(q(0.99), "lateness-p99-ms")
	b.ReportMetric(float64(late[len(late)-1])/float64(time.Millisecond), "lateness-max-ms")
	b.ReportMetric(float64(rewatches), "rewatches")
	if child {
		// The clients' CPU, allocations and collections here; the
		// server's CPU apart.
		b.ReportMetric(float64(serverCPU.Microseconds())/float64(deliveries), "server-cpu-µs/delivery")
	}
	b.ReportMetric(float64(cpu.Microseconds())/float64(deliveries), "cpu-µs/delivery")
	b.ReportMetric(float64(alloc)/float64(deliveries), "B/delivery")
	b.ReportMetric(float64(gcs)/float64(b.N), "gcs/run")
}
