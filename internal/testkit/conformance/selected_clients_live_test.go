package conformance_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// python is Debian's python3, which has python3-kubernetes.
const python = "/usr/bin/python3"

// TestLiveSelectedClientsSeeObjectsMoveAlike runs the moves of
// TestLiveSelectorWatchesSeeObjectsMoveAlike in front of two more clients
// of the same label selection: a client-go informer whose cache holds only
// the selection, and python3-kubernetes' watch. Live and on the overlay
// (served over HTTPS by kwrec's server, for python), each sees the same
// events: the informer's handlers [add in, add out, delete in, delete out],
// python's ADDED and DELETED as the objects move.
func TestLiveSelectedClientsSeeObjectsMoveAlike(t *testing.T) {
	if out, err := exec.Command(python, "-c", "import kubernetes").CombinedOutput(); err != nil {
		t.Skipf("%s has no python3-kubernetes (.ci/run installs it): %v\n%s", python, err, out)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const ns = "selected"
	cp := controlplanetest.Start(t)
	w, _ := recordTwoConfigMaps(t, ctx, cp, ns)
	srv, err := replay.NewServer(w.replayer)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	overlayKubeconfig := filepath.Join(t.TempDir(), "overlay.kubeconfig")
	if err := srv.WriteKubeconfig(overlayKubeconfig); err != nil {
		t.Fatal(err)
	}
	want := selectedClients(t, ctx, w.cfg, cp.Kubeconfig, ns)
	got := selectedClients(t, ctx, srv.Config(), overlayKubeconfig, ns)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the selected clients' events, live versus overlay (-live +overlay):\n%s", d)
	}
	t.Logf("live and overlay: %v", want)
}

// selected is what the clients of a selection saw.
type selected struct {
	Informer []string
	Python   [][3]string
}

// selectedClients starts an informer of ns's ConfigMaps labelled app=demo
// and pyselect.py on the same selection, waits for both to have listed,
// makes the moves of moveAndWatch through cfg, and returns what each saw.
func selectedClients(t *testing.T, ctx context.Context, cfg *rest.Config, kubeconfig, ns string) selected {
	t.Helper()
	cs := kubernetes.NewForConfigOrDie(cfg)
	py := exec.CommandContext(ctx, python, "testdata/pyselect.py", kubeconfig, ns, "app=demo", "3")
	stdout, err := py.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := new(lockedBuffer)
	py.Stderr = stderr
	if err := py.Start(); err != nil {
		t.Fatal(err)
	}
	defer py.Wait()
	lines := bufio.NewScanner(stdout)
	if !lines.Scan() {
		t.Fatalf("pyselect.py printed no resourceVersion: %v\n%s", lines.Err(), stderr)
	}

	f := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = "app=demo" }))
	inf := f.Core().V1().ConfigMaps().Informer()
	events := make(chan string, 16)
	note := func(verb string) func(any) {
		return func(o any) {
			if d, ok := o.(cache.DeletedFinalStateUnknown); ok {
				o = d.Obj
			}
			cm := o.(*corev1.ConfigMap)
			events <- fmt.Sprintf("%s %s k=%s", verb, cm.Name, cm.Data["k"])
		}
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    note("add"),
		UpdateFunc: func(_, o any) { note("update")(o) },
		DeleteFunc: note("delete"),
	}); err != nil {
		t.Fatal(err)
	}
	ictx, stop := context.WithCancel(ctx)
	f.Start(ictx.Done())
	defer func() { stop(); f.Shutdown() }()
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("the informer never synced")
	}

	moveOnly(t, ctx, cs, ns)
	var got selected
	for len(got.Informer) < 4 {
		select {
		case e := <-events:
			got.Informer = append(got.Informer, e)
		case <-ctx.Done():
			t.Fatalf("the informer saw %v, want 4 events", got.Informer)
		}
	}
	if !lines.Scan() {
		t.Fatalf("pyselect.py printed no events: %v\n%s", lines.Err(), stderr)
	}
	if err := json.Unmarshal(lines.Bytes(), &got.Python); err != nil {
		t.Fatalf("pyselect.py printed %q: %v", lines.Bytes(), err)
	}
	return got
}

// moveOnly makes moveAndWatch's writes: "out" moves in, "in" moves out
// and then changes, "out" is deleted.
func moveOnly(t *testing.T, ctx context.Context, cs kubernetes.Interface, ns string) {
	t.Helper()
	cms := cs.CoreV1().ConfigMaps(ns)
	change := func(name string, f func(*corev1.ConfigMap)) {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		f(cm)
		if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	change("out", func(cm *corev1.ConfigMap) { cm.Labels = map[string]string{"app": "demo"}; cm.Data["k"] = "2" })
	change("in", func(cm *corev1.ConfigMap) { cm.Labels = nil; cm.Data["k"] = "2" })
	change("in", func(cm *corev1.ConfigMap) { cm.Data["k"] = "3" })
	if err := cms.Delete(ctx, "out", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

// lockedBuffer is a bytes buffer safe for the writer and a reader at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}
