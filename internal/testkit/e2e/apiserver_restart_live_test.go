package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// The crash tests (issue #17) kill a process of the control plane with
// SIGKILL under two running recordings, restart it on the same port with
// the same data, and check that the recordings hold what happened: every
// change made before the kill, the failure as the clients met it, their
// recovery, and that a replay shows the client recovering exactly as it
// did live.
//
// The two recordings, at the same time:
//
//   - `kwrec record configmaps -n NS -o FILE` (the kwrec watcher);
//   - `kwrec record --proxy -o FILE2 -- <this test binary>` running
//     [TestHelperCrashClient]: a client-go informer on the ConfigMaps of NS
//     that prints each notification, and that makes the test's writes
//     through the proxy too, so that the errors the API server answers them
//     with are recorded.

// envCrashClient names the environment variable that makes
// [TestHelperCrashClient] run as the proxied client, in that namespace.
const envCrashClient = "KWREC_E2E_CRASH_CLIENT"

// TestLiveRecordingSurvivesAKilledAPIServer kills kube-apiserver: every
// open watch is reset, the clients re-watch or re-list once it is back.
func TestLiveRecordingSurvivesAKilledAPIServer(t *testing.T) {
	runCrash(t, controlplanetest.APIServer)
}

// TestLiveRecordingSurvivesAKilledEtcd kills etcd: kube-apiserver stays up
// and answers errors meanwhile, which the recording must hold as they came.
func TestLiveRecordingSurvivesAKilledEtcd(t *testing.T) {
	runCrash(t, controlplanetest.Etcd)
}

// TestHelperCrashClient is the proxied client of the crash tests, not a
// test: it runs only with $KWREC_E2E_CRASH_CLIENT set. It prints a line per
// informer notification ("notify ...") and per write it was asked for on
// stdin ("write ..."), and stops at SIGTERM.
func TestHelperCrashClient(t *testing.T) {
	ns := os.Getenv(envCrashClient)
	if ns == "" {
		t.Skip("the crash tests' proxied client; run by TestLiveRecordingSurvives...")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err != nil {
		t.Fatal(err)
	}
	var out sync.Mutex
	say := func(s string) {
		out.Lock()
		defer out.Unlock()
		fmt.Println(s)
	}
	synced := runCrashInformer(ctx, t, cfg, ns, func(n string) { say("notify " + n) })
	if !cache.WaitForCacheSync(ctx.Done(), synced) {
		t.Fatal("the informer did not sync")
	}
	say("synced")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		for sc.Scan() {
			say("write " + sc.Text() + " " + doWrite(ctx, cs, ns, sc.Text()))
		}
	}()
	<-ctx.Done()
}

// runCrashInformer runs a ConfigMap informer on ns until ctx ends; notify
// gets one line per handler call, in order. It returns the informer's
// HasSynced.
func runCrashInformer(ctx context.Context, t *testing.T, cfg *rest.Config, ns string, notify func(string)) cache.InformerSynced {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	inf := configMapInformer(cs, ns)
	cmString := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		cm := obj.(*corev1.ConfigMap)
		return cm.Name + "@" + cm.ResourceVersion + " v=" + cm.Data["v"]
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { notify("add " + cmString(obj)) },
		UpdateFunc: func(old, obj any) {
			notify("update " + cmString(old) + " -> " + cmString(obj))
		},
		DeleteFunc: func(obj any) { notify("delete " + cmString(obj)) },
	}); err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(ctx)
	return inf.HasSynced
}

// doWrite makes one write, "create NAME V", "update NAME V" or "delete
// NAME", and returns "rv=RV" or "error=TEXT". The API server is asked to
// give up after 2 s (?timeout=2s), so that with etcd gone it answers a 504
// rather than hang.
func doWrite(ctx context.Context, cs kubernetes.Interface, ns, line string) string {
	// Longer than the server's 2 s: its answer is what gets recorded.
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	f := strings.Fields(line)
	rc := cs.CoreV1().RESTClient()
	var res rest.Result
	switch f[0] {
	case "create":
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: f[1]}, Data: map[string]string{"v": f[2]}}
		res = rc.Post().Namespace(ns).Resource("configmaps").Param("timeout", "2s").Body(cm).Do(ctx)
	case "update":
		patch, _ := json.Marshal(map[string]any{"data": map[string]string{"v": f[2]}})
		res = rc.Patch(types.MergePatchType).Namespace(ns).Resource("configmaps").Name(f[1]).Param("timeout", "2s").Body(patch).Do(ctx)
	case "delete":
		res = rc.Delete().Namespace(ns).Resource("configmaps").Name(f[1]).Param("timeout", "2s").Do(ctx)
	}
	if err := res.Error(); err != nil {
		return "error=" + strings.ReplaceAll(err.Error(), "\n", " ")
	}
	var cm corev1.ConfigMap
	if err := res.Into(&cm); err != nil || f[0] == "delete" {
		return "rv=" // a delete answers the object or a Status; its event says more
	}
	return "rv=" + cm.ResourceVersion
}

// write is one write the helper made, as it reported it.
type write struct {
	Op, Name, Value string
	// RV is the resourceVersion the API server answered; "" for a delete
	// or an error.
	RV string
	// Err is the error text, "" when it succeeded.
	Err string
	// AfterKill is set for writes made once the process was killed.
	AfterKill bool
}

func (w write) String() string {
	s := w.Op + " " + w.Name + " " + w.Value
	if w.Err != "" {
		return s + " -> " + w.Err
	}
	return s + " -> rv " + w.RV
}

// crashClient is the running `kwrec record --proxy ... -- helper`.
type crashClient struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr syncBuffer
	mu     sync.Mutex
	notes  []string
	writes chan string
	synced chan struct{}
	done   chan struct{}
}

func startCrashClient(t *testing.T, kwrec, kubeconfig, ns, out string) *crashClient {
	t.Helper()
	c := &crashClient{writes: make(chan string, 1), synced: make(chan struct{}), done: make(chan struct{})}
	c.cmd = exec.Command(kwrec, "record", "--proxy", "-o", out, "--kubeconfig", kubeconfig, "--",
		os.Args[0], "-test.run=^TestHelperCrashClient$", "-test.count=1")
	c.cmd.Env = append(os.Environ(), envCrashClient+"="+ns)
	c.cmd.Stderr = &c.stderr
	var err error
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "synced":
				close(c.synced)
			case strings.HasPrefix(line, "notify "):
				c.mu.Lock()
				c.notes = append(c.notes, strings.TrimPrefix(line, "notify "))
				c.mu.Unlock()
			case strings.HasPrefix(line, "write "):
				c.writes <- strings.TrimPrefix(line, "write ")
			}
		}
	}()
	t.Cleanup(func() { c.cmd.Process.Kill(); c.cmd.Wait() })
	select {
	case <-c.synced:
		return c
	case <-c.done:
		t.Fatalf("the proxied client ended before its informer synced:\n%s", c.stderr.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("the proxied client's informer did not sync in 30s:\n%s", c.stderr.String())
	}
	return nil
}

// do asks the client for a write ("create NAME V", ...) and returns what
// it reported.
func (c *crashClient) do(t *testing.T, line string) write {
	t.Helper()
	if _, err := io.WriteString(c.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
	var got string
	select {
	case got = <-c.writes:
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer to %q in 30s:\n%s", line, c.stderr.String())
	}
	f := strings.Fields(line)
	w := write{Op: f[0], Name: f[1]}
	if len(f) > 2 {
		w.Value = f[2]
	}
	answer := strings.TrimSpace(strings.TrimPrefix(got, line))
	if e, ok := strings.CutPrefix(answer, "error="); ok {
		w.Err = e
	} else {
		w.RV = strings.TrimPrefix(answer, "rv=")
	}
	return w
}

// stop ends the recording with SIGTERM and returns the notifications.
func (c *crashClient) stop(t *testing.T) []string {
	t.Helper()
	c.stdin.Close()
	stopRecording(t, c.cmd, &c.stderr)
	<-c.done
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.notes)
}

// stopRecording sends a kwrec record SIGTERM and fails t unless it saves
// its cassette and exits 0 within 15 s.
func stopRecording(t *testing.T, cmd *exec.Cmd, stderr *syncBuffer) {
	t.Helper()
	cmd.Process.Signal(syscall.SIGTERM)
	waited := make(chan error, 1)
	go func() { waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("%s: %v\n%s", strings.Join(cmd.Args[:3], " "), err, stderr.String())
		}
	case <-time.After(15 * time.Second):
		t.Errorf("%s did not stop 15s after SIGTERM:\n%s", strings.Join(cmd.Args[:3], " "), stderr.String())
		cmd.Process.Kill()
		<-waited
	}
}

// runCrash runs the scenario with c killed and restarted, and checks both
// recordings.
func runCrash(t *testing.T, c controlplanetest.Component) {
	start := time.Now()
	cp := controlplanetest.Start(t)
	kwrec := buildKwrec(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	live, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	ns := "crash-" + string(c)
	if _, err := live.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"cm-a", "cm-b"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"v": "0"}}
		if _, err := live.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	dir := t.TempDir()
	file, file2 := filepath.Join(dir, "watcher.kwrec.zst"), filepath.Join(dir, "informer.kwrec.zst")
	var recStderr syncBuffer
	rec := exec.Command(kwrec, "record", "configmaps", "-n", ns, "-o", file, "--kubeconfig", cp.Kubeconfig)
	rec.Stderr = &recStderr
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rec.Process.Kill(); rec.Wait() })
	client := startCrashClient(t, kwrec, cp.Kubeconfig, ns, file2)
	// kwrec record prints nothing once it watches: give it time to list
	// and watch.
	time.Sleep(2 * time.Second)

	var writes []write
	v := 0
	step := func(op, name string) write {
		v++
		line := fmt.Sprintf("%s %s %d", op, name, v)
		if op == "delete" {
			line = op + " " + name
		}
		w := client.do(t, line)
		writes = append(writes, w)
		return w
	}
	for _, s := range [][2]string{{"create", "cm-1"}, {"update", "cm-a"}, {"create", "cm-2"}, {"update", "cm-1"}, {"delete", "cm-b"}, {"update", "cm-1"}} {
		if w := step(s[0], s[1]); w.Err != "" {
			t.Fatalf("before the kill: %s", w)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// Let the last event reach both recorders before the crash.
	time.Sleep(time.Second)

	killed := time.Now()
	if err := cp.Kill(c); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s with SIGKILL", c)
	before := len(writes)
	// A write while it is down: refused (kube-apiserver) or answered with
	// an error (etcd).
	if w := step("update", "cm-2"); w.Err == "" {
		t.Errorf("with %s killed, a write succeeded: %s", c, w)
	} else {
		t.Logf("with %s killed, a write failed: %s", c, w.Err)
	}
	writes[len(writes)-1].AfterKill = true
	time.Sleep(3*time.Second - time.Since(killed))
	if err := cp.Restart(ctx, c); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	t.Logf("restarted %s on the same port after %v down", c, restarted.Sub(killed).Round(time.Millisecond))
	// Writes until one succeeds (with etcd back, kube-apiserver may take a
	// moment to reconnect), then a few more.
	for range 20 {
		w := step("update", "cm-2")
		writes[len(writes)-1].AfterKill = true
		if w.Err == "" {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	for _, s := range [][2]string{{"create", "cm-3"}, {"update", "cm-a"}, {"delete", "cm-1"}, {"update", "cm-3"}} {
		w := step(s[0], s[1])
		writes[len(writes)-1].AfterKill = true
		if w.Err != "" {
			t.Errorf("after the restart: %s", w)
		}
		time.Sleep(200 * time.Millisecond)
	}
	// The recorders back off after the crash as client-go does (0.8 s
	// doubling to 30 s): stop them once both recorded the last write.
	last := writes[len(writes)-1]
	for _, f := range []string{file, file2} {
		if !waitRecorded(f, ns, last, 60*time.Second) {
			t.Errorf("%s: the last write (%s) not recorded 60s after it", filepath.Base(f), last)
		}
	}
	stopRecording(t, rec, &recStderr)
	liveNotes := client.stop(t)
	t.Logf("writes: %d before the kill, %d after:\n  %s", before, len(writes)-before, joinStrings(writes, "\n  "))
	recorded := time.Since(start)

	for _, cas := range []struct{ name, path string }{{"kwrec record configmaps", file}, {"kwrec record --proxy (informer)", file2}} {
		t.Run(cas.name, func(t *testing.T) {
			if out, err := exec.Command(kwrec, "lint", cas.path).CombinedOutput(); err != nil {
				t.Errorf("kwrec lint %s: %v\n%s", filepath.Base(cas.path), err, out)
			}
			checkCrashCassette(t, cas.path, ns, c, killed, restarted, writes)
		})
	}
	t.Run("the informer's replay", func(t *testing.T) {
		r := openReplay(t, file2)
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		var mu sync.Mutex
		var replayed []string
		var w wire
		cfg := r.Config()
		w.wrap(cfg)
		synced := runCrashInformer(rctx, t, cfg, ns, func(n string) {
			mu.Lock()
			defer mu.Unlock()
			replayed = append(replayed, n)
		})
		cache.WaitForCacheSync(rctx.Done(), synced)
		// Until the informer has notified as often as it did live (or 30
		// s), then while more keep coming.
		deadline := time.Now().Add(30 * time.Second)
		n := -1
		for {
			time.Sleep(500 * time.Millisecond)
			mu.Lock()
			m := len(replayed)
			mu.Unlock()
			if (m >= len(liveNotes) && m == n) || time.Now().After(deadline) {
				break
			}
			n = m
		}
		stop()
		mu.Lock()
		defer mu.Unlock()
		if d := cmp.Diff(liveNotes, replayed); d != "" {
			t.Errorf("the informer's notifications (-live +replayed):\n%s\nreplayed requests:\n%s", d, &w)
		}
		t.Logf("the informer's %d notifications live, %d replayed:\n  %s", len(liveNotes), len(replayed), strings.Join(replayed, "\n  "))
	})
	t.Logf("%s killed and restarted: recorded in %v, checked in %v", c, recorded.Round(time.Millisecond), (time.Since(start) - recorded).Round(time.Millisecond))
}

func joinStrings[T fmt.Stringer](xs []T, sep string) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = x.String()
	}
	return strings.Join(s, sep)
}

// cmSeen is a ConfigMap as a recorded list or watch event shows it.
type cmSeen struct {
	Type, Name, RV, Value string
}

// checkCrashCassette checks one recording of the crash of c at killed:
//
//   - every write made before the kill is a recorded watch event, with its
//     resourceVersion and value: none was lost;
//   - every write made after it is a recorded watch event or in a
//     recorded list, unless overwritten before the client re-listed;
//   - with kube-apiserver killed, every watch open at the kill ends with a
//     reset (or an ERROR event), and a list or watch starts after it:
//     the client re-listed or re-watched;
//   - with etcd killed, what the API server answered meanwhile is recorded
//     as it came.
func checkCrashCassette(t *testing.T, path, ns string, c controlplanetest.Component, killed, restarted time.Time, writes []write) {
	cas, err := cassettes.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	start := cas.Header.RecordedAt
	var events, listed []cmSeen
	var watches, resets, errorEvents, after, errorAnswers int
	for _, in := range cas.Interactions {
		at := start.Add(in.At)
		u, err := url.Parse(in.Request.URL)
		if err != nil {
			t.Fatal(err)
		}
		if in.Response != nil && in.Response.Status >= 400 {
			errorAnswers++
			t.Logf("recorded: %s %s -> %d %s", in.Request.Method, u.RequestURI(), in.Response.Status, firstLine(string(in.Body())))
		}
		if in.Response == nil && in.End != nil && at.After(killed) {
			t.Logf("recorded: %s %s -> %s %s", in.Request.Method, u.RequestURI(), in.End.Reason, in.End.Error)
		}
		if !strings.HasSuffix(u.Path, "/namespaces/"+ns+"/configmaps") || in.Request.Method != "GET" {
			continue
		}
		table := strings.Contains(in.Request.Header.Get("Accept"), "as=Table")
		if at.After(killed) && in.Response != nil && in.Response.Status == 200 {
			after++
		}
		if !isWatch(u) {
			if in.Response != nil && in.Response.Status == 200 && !table {
				items, err := decodeCMs(in.Body())
				if err != nil {
					t.Fatalf("interaction %d: %v", in.ID, err)
				}
				listed = append(listed, items...)
			}
			continue
		}
		var errEvent bool
		for _, f := range in.Frames {
			if table {
				errEvent = errEvent || bytes.Contains(f.Data, []byte(`"type":"ERROR"`))
				continue
			}
			e, err := decodeCMEvent(f.Data)
			if err != nil {
				t.Fatalf("interaction %d: %v", in.ID, err)
			}
			switch e.Type {
			case string(watch.Error):
				errEvent = true
			case string(watch.Bookmark):
			default:
				events = append(events, e)
			}
		}
		if errEvent {
			errorEvents++
		}
		// Open at the kill: its response began before it and it had not
		// ended a moment before.
		if in.Response == nil || !at.Before(killed) {
			continue
		}
		watches++
		switch {
		case in.End == nil:
			t.Errorf("interaction %d: a watch open at the kill has no recorded end", in.ID)
		case in.End.Reason == cassettes.EndReset || errEvent:
			resets++
			t.Logf("interaction %d: a watch open at the kill ended %s %s (%d events)", in.ID, in.End.Reason, in.End.Error, len(in.Frames))
		case c == controlplanetest.APIServer:
			t.Errorf("interaction %d: a watch open at the kill of kube-apiserver ended %q, want reset or an ERROR event", in.ID, in.End.Reason)
		default:
			t.Logf("interaction %d: a watch open at the kill of etcd ended %s", in.ID, in.End.Reason)
		}
	}
	t.Logf("%s: %d interactions; %d watch events and %d listed objects of %s; %d watches open at the kill, %d of them reset or failed; %d lists and watches after it; %d error answers, %d watches with ERROR events",
		filepath.Base(path), len(cas.Interactions), len(events), len(listed), ns, watches, resets, after, errorAnswers, errorEvents)
	if watches == 0 {
		t.Errorf("no watch was open at the kill")
	}
	if c == controlplanetest.APIServer && after == 0 {
		t.Errorf("no list or watch after the kill: the client did not recover")
	}
	if c == controlplanetest.Etcd && strings.Contains(path, "informer") && errorAnswers == 0 {
		t.Errorf("no error answer recorded while etcd was down")
	}
	lost, superseded := 0, 0
	for i, w := range writes {
		if w.Err != "" {
			continue
		}
		// A client that re-lists after the crash sees an object's latest
		// state only: a change made after the kill and overwritten before
		// the re-list never reached it live either.
		if w.AfterKill && slices.ContainsFunc(writes[i+1:], func(x write) bool { return x.Name == w.Name && x.Err == "" }) && !seen(events, nil, w) {
			superseded++
			continue
		}
		if !seen(events, listed, w) {
			lost++
			t.Errorf("%s lost: not in a recorded watch event%s", w, map[bool]string{true: " nor in a recorded list"}[w.AfterKill])
		}
	}
	t.Logf("%s: %d successful writes, %d lost, %d made after the kill and overwritten before the client re-listed", filepath.Base(path), countOK(writes), lost, superseded)
}

func countOK(ws []write) int {
	n := 0
	for _, w := range ws {
		if w.Err == "" {
			n++
		}
	}
	return n
}

// seen reports whether w is in events or, for a write made after the
// kill, in listed: a client that re-lists sees later changes in the list.
func seen(events, listed []cmSeen, w write) bool {
	match := func(s cmSeen) bool {
		if w.Op == "delete" {
			return s.Type == string(watch.Deleted) && s.Name == w.Name
		}
		return s.Name == w.Name && s.RV == w.RV && s.Value == w.Value && s.Type != string(watch.Deleted)
	}
	if slices.ContainsFunc(events, match) {
		return true
	}
	if !w.AfterKill {
		return false
	}
	if w.Op == "delete" {
		return true // a re-list after the delete simply lacks it
	}
	return slices.ContainsFunc(listed, match)
}

// decodeCMs decodes a recorded ConfigMapList, JSON or protobuf.
func decodeCMs(body []byte) ([]cmSeen, error) {
	l, err := decodeCMList(body)
	if err != nil {
		return nil, err
	}
	var out []cmSeen
	for _, cm := range l.Items {
		out = append(out, cmSeen{Name: cm.Name, RV: cm.ResourceVersion, Value: cm.Data["v"]})
	}
	return out, nil
}

// decodeCMEvent decodes one recorded watch frame, JSON or protobuf.
func decodeCMEvent(f []byte) (cmSeen, error) {
	typ, obj, err := splitWatchFrame(f)
	if err != nil {
		return cmSeen{}, err
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		return cmSeen{Type: typ}, nil
	}
	return cmSeen{Type: typ, Name: cm.Name, RV: cm.ResourceVersion, Value: cm.Data["v"]}, nil
}

// waitRecorded polls the cassette being written at path (its writer
// flushes every second) until a recorded list or watch event of ns shows
// w, or timeout passes.
func waitRecorded(path, ns string, w write, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if recordedNow(path, ns, w) {
			return true
		}
		time.Sleep(500 * time.Millisecond)
	}
	return false
}

func recordedNow(path, ns string, w write) bool {
	r, err := cassettes.Open(path)
	if err != nil {
		return false
	}
	defer r.Close()
	urls := map[int]*url.URL{}
	for {
		e, err := r.Next()
		if err != nil {
			return false // the end so far
		}
		if e.Request != nil {
			if u, err := url.Parse(e.Request.URL); err == nil && e.Request.Method == "GET" && strings.HasSuffix(u.Path, "/namespaces/"+ns+"/configmaps") {
				urls[e.ID] = u
			}
		}
		u := urls[e.ID]
		if e.Frame == nil || u == nil {
			continue
		}
		var got []cmSeen
		if isWatch(u) {
			if ev, err := decodeCMEvent(e.Frame.Data); err == nil {
				got = []cmSeen{ev}
			}
		} else {
			got, _ = decodeCMs(e.Frame.Data)
		}
		if seen(got, got, w) {
			return true
		}
	}
}
