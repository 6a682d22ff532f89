// These tests are kwrec's end-to-end acceptance tests: real clients
// replaying cassettes recorded from the real control plane.
//
// Each test binary run starts kube-apiserver and etcd once (package
// controlplanetest), records one scenario twice and stops them again:
//
//   - in JSON, by the kwrec CLI (`kwrec record configmaps`), while the
//     test creates, updates and deletes ConfigMaps;
//   - in protobuf, in process through the recorder, under a typed
//     client-go SharedInformer that lists then watches.
//
// The live final state (name -> resourceVersion) is read back from the
// control plane. Every test then replays a cassette, untouched or with a
// failure (a 410 Expired watch ERROR injected by an edit, the same 410
// hand-written into the cassette text, a 503 on the first list), to a real
// client: client-go informers with WatchList on and off (in process and
// through `kwrec serve`), kubectl get -w and python3-kubernetes. They prove
// that
//
//   - every client, not only the one whose requests equal the recorded
//     ones, meets the failure exactly once, whatever it asks and in JSON or
//     protobuf;
//   - it recovers to exactly the recorded final objects, no event lost or
//     repeated where the client exposes events;
//   - kwrec serve speaks HTTP/2 and carries many watches on one
//     connection, and warns about an edit no client reached.
//
// The tests are named TestLive... so `make e2e` runs them; they skip
// without the control plane binaries unless KWREC_REQUIRE_CONTROLPLANE=1.
package e2e_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/recorder"
)

// workDir holds the kwrec binary and the cassettes of this test binary run;
// TestMain creates and removes it.
var workDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "kwrec-e2e-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	workDir = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// fixtures are what every test replays, made once per test binary run by
// [fixture].
type fixtures struct {
	// kwrec is the path of the kwrec binary built from this module.
	kwrec string
	// json was recorded by `kwrec record configmaps` (list, then watch).
	json *recording
	// proto was recorded in process under a typed informer (protobuf list,
	// then protobuf watch).
	proto *recording
	// paged was recorded by `kwrec record configmaps` over a collection of
	// four pages (see [recordPaged]).
	paged *pagedRecording
}

// recording is one recorded run of the scenario (see [mutate]).
type recording struct {
	// Cassette is the recorded cassette.
	Cassette string
	// Expired is Cassette with a 410 Expired watch ERROR frame written
	// into the recorded watch after its first event.
	Expired string
	// Namespace is the namespace the scenario ran in.
	Namespace string
	// WatchID is the interaction ID of the recorded watch.
	WatchID int
	// Initial is the recorded list: name -> resourceVersion.
	Initial map[string]string
	// Events are the recorded watch's object events, bookmarks left out.
	Events []event
	// Final is the live state after the scenario: name -> resourceVersion.
	Final map[string]string
	// KubectlLive is what kubectl's read commands ([kubectlReads]) printed
	// live, right after the recording's first list: the state a fresh
	// replay starts at.
	KubectlLive map[string]string
	// KubectlWatchLive is what `kubectl get configmaps -w` printed live
	// during the scenario.
	KubectlWatchLive string
}

// event is one watch event as a client sees it.
type event struct{ Type, Name, RV string }

func (e event) String() string { return e.Type + " " + e.Name + "@" + e.RV }

// setup guards the one recording per test binary run.
var setup struct {
	once sync.Once
	fx   *fixtures
	err  error
}

// fixture returns the recordings, making them on first use; it skips t
// when the control plane binaries are missing (see controlplanetest).
func fixture(t *testing.T) *fixtures {
	t.Helper()
	setup.once.Do(func() {
		start := time.Now()
		setup.fx, setup.err = recordFixtures()
		t.Logf("recorded the fixtures in %v", time.Since(start).Round(time.Millisecond))
	})
	if errors.Is(setup.err, controlplanetest.ErrNoBinaries) && os.Getenv(controlplanetest.EnvRequire) != "1" {
		t.Skipf("skipping: %v (set %s=1 to fail instead)", setup.err, controlplanetest.EnvRequire)
	}
	if setup.err != nil {
		t.Fatalf("recording the fixtures: %v", setup.err)
	}
	return setup.fx
}

// recordFixtures builds kwrec, starts the control plane, records the
// scenario in JSON (kwrec CLI) and protobuf (recorder in process) at the
// same time in two namespaces, and stops the control plane.
func recordFixtures() (fx *fixtures, err error) {
	if _, err := controlplanetest.AssetsDir(); err != nil {
		return nil, err
	}
	fx = &fixtures{kwrec: filepath.Join(workDir, "kwrec")}
	build := make(chan error, 1)
	go func() {
		out, err := exec.Command("go", "build", "-o", fx.kwrec, "github.com/kwrec/kwrec/cmd/kwrec").CombinedOutput()
		if err != nil {
			err = fmt.Errorf("building kwrec: %v\n%s", err, out)
		}
		build <- err
	}()
	cp, err := controlplanetest.StartEnv()
	if err != nil {
		<-build
		return nil, err
	}
	defer func() { err = errors.Join(err, cp.Stop()) }()
	if err := <-build; err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 240*time.Second)
	defer cancel()
	cs, err := kubernetes.NewForConfig(cp.Config)
	if err != nil {
		return nil, err
	}
	// The paged scenario writes 3,200 objects: not at client-go's default
	// 5 requests a second.
	fast := rest.CopyConfig(cp.Config)
	fast.QPS, fast.Burst = 2000, 2000
	bulk, err := kubernetes.NewForConfig(fast)
	if err != nil {
		return nil, err
	}
	var wg sync.WaitGroup
	var jsonErr, protoErr, pagedErr error
	wg.Go(func() { fx.json, jsonErr = recordJSON(ctx, cs, fx.kwrec, cp.Kubeconfig) })
	wg.Go(func() { fx.proto, protoErr = recordProtobuf(ctx, cs, cp) })
	wg.Go(func() { fx.paged, pagedErr = recordPaged(ctx, bulk, fx.kwrec, cp.Kubeconfig) })
	wg.Wait()
	if err := errors.Join(jsonErr, protoErr, pagedErr); err != nil {
		return nil, err
	}
	return fx, nil
}

// The scenario: three ConfigMaps exist before the recording starts; during
// it [mutate] creates two, updates two and deletes one.
var preexisting = []string{"cm-a", "cm-b", "cm-c"}

// startScenario creates namespace ns and its preexisting ConfigMaps.
func startScenario(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, name := range preexisting {
		if err := createCM(ctx, cs, ns, name); err != nil {
			return err
		}
	}
	return nil
}

// mutate makes the recorded changes, 500 ms apart: create cm-d, update
// cm-a, create cm-e, delete cm-b, update cm-d.
func mutate(ctx context.Context, cs kubernetes.Interface, ns string) error {
	cms := cs.CoreV1().ConfigMaps(ns)
	update := func(name string) error {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Data["v"] = "2"
		_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}
	steps := []func() error{
		func() error { return createCM(ctx, cs, ns, "cm-d") },
		func() error { return update("cm-a") },
		func() error { return createCM(ctx, cs, ns, "cm-e") },
		func() error { return cms.Delete(ctx, "cm-b", metav1.DeleteOptions{}) },
		func() error { return update("cm-d") },
	}
	for i, step := range steps {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
		if err := step(); err != nil {
			return fmt.Errorf("scenario step %d: %w", i+1, err)
		}
	}
	return nil
}

func createCM(ctx context.Context, cs kubernetes.Interface, ns, name string) error {
	_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		// Labels for kubectl's -l and --show-labels.
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "yes", "first": strconv.FormatBool(name < "cm-c")}},
		Data:       map[string]string{"v": "1"},
	}, metav1.CreateOptions{})
	return err
}

// liveState lists ns on the live server: name -> resourceVersion.
func liveState(ctx context.Context, cs kubernetes.Interface, ns string) (map[string]string, error) {
	l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	return resourceVersions(l), nil
}

// recordJSON records the scenario with `kwrec record configmaps`.
func recordJSON(ctx context.Context, cs kubernetes.Interface, kwrec, kubeconfig string) (*recording, error) {
	const ns = "e2e-json"
	if err := startScenario(ctx, cs, ns); err != nil {
		return nil, err
	}
	rec := &recording{Namespace: ns, Cassette: filepath.Join(workDir, "json.kwrec.zst")}
	var stderr bytes.Buffer
	// Stopped with SIGTERM once the scenario is done: the live kubectl
	// commands below take as long as the machine's load makes them.
	cmd := exec.CommandContext(ctx, kwrec, "record", "configmaps", "-n", ns, "--duration", "80s", "-o", rec.Cassette, "--kubeconfig", kubeconfig)
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	// kwrec record prints nothing when its watch is open: give it time to
	// start, list and watch.
	time.Sleep(2 * time.Second)
	// What kubectl prints live before the changes, and while they happen.
	rec.KubectlLive = map[string]string{}
	for _, args := range kubectlReads(ns) {
		out, err := runKubectl(ctx, kubeconfig, args...)
		if err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return nil, err
		}
		rec.KubectlLive[strings.Join(args, " ")] = out
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	var watchOut bytes.Buffer
	kw := kubectlCmd(watchCtx, kubeconfig, "get", "configmaps", "-n", ns, "-w")
	kw.Stdout = &watchOut
	if err := kw.Start(); err != nil {
		stopWatch()
		return nil, err
	}
	if err := mutate(ctx, cs, ns); err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		stopWatch()
		kw.Wait()
		return nil, err
	}
	// Let the last event reach the recorder (and kubectl), then stop it.
	time.Sleep(time.Second)
	cmd.Process.Signal(syscall.SIGTERM)
	werr := cmd.Wait()
	stopWatch()
	kw.Wait()
	rec.KubectlWatchLive = watchOut.String()
	if werr != nil {
		return nil, fmt.Errorf("kwrec record: %v\n%s", werr, stderr.Bytes())
	}
	return finishRecording(ctx, cs, rec, "application/json")
}

// configMapInformer is an informer of the ConfigMaps in ns that lists
// then watches (listWatchOnly).
func configMapInformer(cs kubernetes.Interface, ns string) cache.SharedIndexInformer {
	cms := cs.CoreV1().ConfigMaps(ns)
	lw := listWatchOnly{&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) },
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cms.Watch(ctx, o)
		},
	}}
	return cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
}

// listWatchOnly makes an informer list then watch whatever the
// WatchListClient feature gate says (client-go's opt-out for clients
// without WatchList semantics), without touching the process-wide gate.
type listWatchOnly struct{ *cache.ListWatch }

func (listWatchOnly) IsWatchListSemanticsUnSupported() bool { return true }

// resourceVersions maps each ConfigMap of l by name to its
// resourceVersion.
func resourceVersions(l *corev1.ConfigMapList) map[string]string {
	m := map[string]string{}
	for _, cm := range l.Items {
		m[cm.Name] = cm.ResourceVersion
	}
	return m
}

// recordProtobuf records the scenario in process: a typed SharedInformer
// (protobuf) through the recorder, list then watch.
func recordProtobuf(ctx context.Context, live kubernetes.Interface, cp *controlplanetest.ControlPlane) (rec *recording, err error) {
	const ns = "e2e-proto"
	if err := startScenario(ctx, live, ns); err != nil {
		return nil, err
	}
	rec = &recording{Namespace: ns, Cassette: filepath.Join(workDir, "proto.kwrec.zst")}
	opts := recorder.Options{}
	w, err := cassettes.Create(rec.Cassette, recorder.Header(controlplanetest.KubeVersion, opts), cassettes.WriterOptions{})
	if err != nil {
		return nil, err
	}
	r, err := recorder.New(w, opts)
	if err != nil {
		return nil, errors.Join(err, w.Close())
	}
	cfg := rest.CopyConfig(cp.Config)
	r.WrapConfig(cfg)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, errors.Join(err, r.Close(), w.Close())
	}
	inf := configMapInformer(cs, ns)
	infCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	running.Go(func() { inf.RunWithContext(infCtx) })
	err = func() error {
		if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
			return errors.New("the recorded informer did not sync")
		}
		if err := mutate(ctx, live, ns); err != nil {
			return err
		}
		// Let the last event reach the informer, then a little more.
		time.Sleep(time.Second)
		return nil
	}()
	stop()
	running.Wait()
	if err := errors.Join(err, r.Close(), w.Close()); err != nil {
		return nil, err
	}
	return finishRecording(ctx, live, rec, "application/vnd.kubernetes.protobuf;stream=watch")
}

// finishRecording reads the live final state, finds the recorded list and
// watch in the cassette (checking the watch's Content-Type) and writes the
// Expired variant.
func finishRecording(ctx context.Context, cs kubernetes.Interface, rec *recording, watchType string) (*recording, error) {
	var err error
	if rec.Final, err = liveState(ctx, cs, rec.Namespace); err != nil {
		return nil, err
	}
	c, err := cassettes.Load(rec.Cassette)
	if err != nil {
		return nil, err
	}
	var list, w *cassettes.Interaction
	for _, in := range c.Interactions {
		u, err := url.Parse(in.Request.URL)
		if err != nil || !strings.HasSuffix(u.Path, "/namespaces/"+rec.Namespace+"/configmaps") || in.Response == nil {
			continue
		}
		if strings.Contains(in.Request.Header.Get("Accept"), "as=Table") {
			continue // the Table form kwrec record adds for kubectl
		}
		if isWatch(u) {
			if w == nil {
				w = in
			}
		} else if list == nil {
			list = in
		}
	}
	if list == nil || w == nil {
		return nil, fmt.Errorf("%s: no configmaps list and watch recorded", rec.Cassette)
	}
	if got := w.Response.Header.Get("Content-Type"); got != watchType {
		return nil, fmt.Errorf("%s: the recorded watch has Content-Type %q, want %q", rec.Cassette, got, watchType)
	}
	rec.WatchID = w.ID
	if rec.Initial, err = decodeList(list.Body()); err != nil {
		return nil, fmt.Errorf("%s: the recorded list: %w", rec.Cassette, err)
	}
	first := -1
	for i, f := range w.Frames {
		e, err := decodeWatchFrame(f.Data)
		if err != nil {
			return nil, fmt.Errorf("%s: watch frame %d: %w", rec.Cassette, i+1, err)
		}
		if e.Type == string(watch.Bookmark) {
			continue
		}
		if first < 0 {
			first = i
		}
		rec.Events = append(rec.Events, e)
	}
	if len(rec.Events) != 5 {
		return nil, fmt.Errorf("%s: the recorded watch has events %v, want the scenario's 5", rec.Cassette, rec.Events)
	}
	// The hand edit: a 410 ERROR frame right after the first event, as a
	// person would insert it in the text form.
	errFrame, err := expiredFrame(watchType, rec.Events[0].RV)
	if err != nil {
		return nil, err
	}
	at := w.Frames[first].At
	w.Frames = append(w.Frames[:first+1], append([]cassettes.Frame{{At: at, Data: errFrame}}, w.Frames[first+1:]...)...)
	rec.Expired = strings.TrimSuffix(rec.Cassette, ".kwrec.zst") + "-expired.kwrec"
	if err := cassettes.Save(rec.Expired, c); err != nil {
		return nil, err
	}
	return rec, nil
}

func isWatch(u *url.URL) bool {
	switch strings.ToLower(u.Query().Get("watch")) {
	case "true", "1":
		return true
	}
	return false
}

// expiredStatus is the Status of the API server's watch ERROR event for a
// compacted resourceVersion.
func expiredStatus(rv string) *metav1.Status {
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  fmt.Sprintf("too old resource version: 1 (%s)", rv),
		Reason:   metav1.StatusReasonExpired,
		Code:     410,
	}
}

// expiredFrame is one watch ERROR frame carrying [expiredStatus], framed
// as the server frames contentType: a JSON line, or a 4-byte length and a
// protobuf metav1.WatchEvent whose object is an enveloped Status.
func expiredFrame(contentType, rv string) ([]byte, error) {
	if strings.HasPrefix(contentType, "application/json") {
		b, err := json.Marshal(map[string]any{"type": "ERROR", "object": expiredStatus(rv)})
		return append(b, '\n'), err
	}
	var obj bytes.Buffer
	if err := protobuf.NewSerializer(nil, nil).Encode(expiredStatus(rv), &obj); err != nil {
		return nil, err
	}
	ev := metav1.WatchEvent{Type: string(watch.Error), Object: runtime.RawExtension{Raw: obj.Bytes()}}
	b, err := ev.Marshal()
	if err != nil {
		return nil, err
	}
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...), nil
}

// decodeList decodes a recorded ConfigMapList (JSON or protobuf) to name
// -> resourceVersion.
func decodeList(body []byte) (map[string]string, error) {
	l, err := decodeCMList(body)
	if err != nil {
		return nil, err
	}
	return resourceVersions(l), nil
}

// decodeCMList decodes a recorded ConfigMapList, JSON or protobuf.
func decodeCMList(body []byte) (*corev1.ConfigMapList, error) {
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		return nil, err
	}
	l, ok := obj.(*corev1.ConfigMapList)
	if !ok {
		return nil, fmt.Errorf("a %T, not a ConfigMapList", obj)
	}
	return l, nil
}

// decodeWatchFrame decodes one recorded watch frame, JSON or protobuf.
func decodeWatchFrame(f []byte) (event, error) {
	typ, obj, err := splitWatchFrame(f)
	if err != nil {
		return event{}, err
	}
	m, ok := obj.(metav1.Object)
	if !ok {
		return event{Type: typ}, nil
	}
	return event{Type: typ, Name: m.GetName(), RV: m.GetResourceVersion()}, nil
}

// splitWatchFrame decodes one recorded watch frame, a JSON line or a
// length-prefixed protobuf metav1.WatchEvent: its type and its object.
func splitWatchFrame(f []byte) (string, runtime.Object, error) {
	var we metav1.WatchEvent
	if len(f) > 0 && f[0] == '{' {
		if err := json.Unmarshal(f, &we); err != nil {
			return "", nil, err
		}
	} else {
		if len(f) < 4 {
			return "", nil, errors.New("a protobuf frame shorter than its length")
		}
		if err := we.Unmarshal(f[4:]); err != nil {
			return "", nil, err
		}
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(we.Object.Raw, nil, nil)
	return we.Type, obj, err
}

// sortedKeys returns m's keys in order.
func sortedKeys(m map[string]string) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
