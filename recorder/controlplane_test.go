package recorder_test

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/recorder"
)

func jsonConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.ContentType = "application/json"
	c.AcceptContentTypes = "application/json"
	return c
}

// jsonEvent is the part of a JSON watch event the tests look at.
type jsonEvent struct {
	Type   string `json:"type"`
	Object struct {
		Kind     string `json:"kind"`
		Code     int    `json:"code"`
		Reason   string `json:"reason"`
		Metadata struct {
			Name            string            `json:"name"`
			ResourceVersion string            `json:"resourceVersion"`
			Continue        string            `json:"continue"`
			Annotations     map[string]string `json:"annotations"`
		} `json:"metadata"`
	} `json:"object"`
}

func jsonEvents(t *testing.T, in *cassettes.Interaction) []jsonEvent {
	t.Helper()
	var out []jsonEvent
	for i, f := range in.Frames {
		var ev jsonEvent
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatalf("interaction %d frame %d is not one JSON event: %v\n%q", in.ID, i, err, f.Data)
		}
		out = append(out, ev)
	}
	return out
}

func checkOffsets(t *testing.T, in *cassettes.Interaction) {
	t.Helper()
	for i := 1; i < len(in.Frames); i++ {
		if in.Frames[i].At < in.Frames[i-1].At {
			t.Errorf("interaction %d: frame %d at %v before frame %d at %v", in.ID, i, in.Frames[i].At, i-1, in.Frames[i-1].At)
		}
	}
}

func find(c *cassettes.Cassette, pred func(*cassettes.Interaction) bool) []*cassettes.Interaction {
	var out []*cassettes.Interaction
	for _, in := range c.Interactions {
		if pred(in) {
			out = append(out, in)
		}
	}
	return out
}

func mkNamespace(t *testing.T, cs kubernetes.Interface, name string) {
	t.Helper()
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func mkConfigMap(t *testing.T, cs kubernetes.Interface, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}

type seen struct{ typ, name, rv string }

func TestLiveRecording(t *testing.T) {
	cp := controlplanetest.Start(t)
	admin := kubernetes.NewForConfigOrDie(cp.Config)

	for _, watchList := range []bool{true, false} {
		t.Run(fmt.Sprintf("an informer with WatchListClient=%v is recorded list, then watch", watchList), func(t *testing.T) {
			clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
			ns := fmt.Sprintf("informer-%v", watchList)
			mkNamespace(t, admin, ns)
			mkConfigMap(t, admin, ns, "pre-1")
			mkConfigMap(t, admin, ns, "pre-2")

			s := newSession(t, recorder.Options{})
			cfg := jsonConfig(cp.Config)
			s.rec.WrapConfig(cfg)
			cs := kubernetes.NewForConfigOrDie(cfg)
			factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
			inf := factory.Core().V1().ConfigMaps().Informer()
			var mu sync.Mutex
			var got []seen
			deleted := make(chan struct{})
			inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
				UpdateFunc: func(_, o any) {
					cm := o.(*corev1.ConfigMap)
					mu.Lock()
					got = append(got, seen{"MODIFIED", cm.Name, cm.ResourceVersion})
					mu.Unlock()
				},
				DeleteFunc: func(o any) {
					cm := o.(*corev1.ConfigMap)
					mu.Lock()
					got = append(got, seen{"DELETED", cm.Name, cm.ResourceVersion})
					mu.Unlock()
					if cm.Name == "pre-1" {
						close(deleted)
					}
				},
			})
			ctx, cancel := context.WithCancel(t.Context())
			factory.Start(ctx.Done())
			if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
				t.Fatal("informer did not sync")
			}
			created := mkConfigMap(t, admin, ns, "new-1")
			created.Data["k"] = "v2"
			updated, err := admin.CoreV1().ConfigMaps(ns).Update(t.Context(), created, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := admin.CoreV1().ConfigMaps(ns).Delete(t.Context(), "pre-1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case <-deleted:
			case <-time.After(30 * time.Second):
				t.Fatal("the informer never saw the delete")
			}
			cancel()
			factory.Shutdown()
			c := s.finish()

			isCM := func(in *cassettes.Interaction) bool {
				return strings.Contains(in.Request.URL, "/namespaces/"+ns+"/configmaps")
			}
			watches := find(c, func(in *cassettes.Interaction) bool {
				return isCM(in) && strings.Contains(in.Request.URL, "watch=true")
			})
			lists := find(c, func(in *cassettes.Interaction) bool { return isCM(in) && !strings.Contains(in.Request.URL, "watch=") })
			if len(watches) == 0 {
				t.Fatalf("no watch recorded; interactions: %d", len(c.Interactions))
			}
			w := watches[0]
			evs := jsonEvents(t, w)
			checkOffsets(t, w)
			var after []jsonEvent // events after the initial state
			if watchList {
				if len(lists) != 0 || !strings.Contains(w.Request.URL, "sendInitialEvents=true") {
					t.Fatalf("WatchListClient on: %d lists, first watch %s; want a streaming list and no list", len(lists), w.Request.URL)
				}
				end := -1
				for i, ev := range evs {
					if ev.Type == "BOOKMARK" && ev.Object.Metadata.Annotations["k8s.io/initial-events-end"] == "true" {
						end = i
						break
					}
				}
				if end != 2 || evs[0].Type != "ADDED" || evs[1].Type != "ADDED" {
					t.Fatalf("streaming list: want 2 ADDED then the initial-events-end bookmark, got %+v", evs)
				}
				after = evs[end+1:]
			} else {
				if len(lists) != 1 || len(lists[0].Frames) != 1 {
					t.Fatalf("WatchListClient off: %d lists, want 1 with one frame", len(lists))
				}
				var list corev1.ConfigMapList
				if err := json.Unmarshal(lists[0].Frames[0].Data, &list); err != nil || len(list.Items) != 2 {
					t.Fatalf("list frame: %v, %d items, want 2", err, len(list.Items))
				}
				if !strings.Contains(w.Request.URL, "resourceVersion="+list.ResourceVersion) {
					t.Errorf("watch %s does not start at the list's resourceVersion %s", w.Request.URL, list.ResourceVersion)
				}
				if lists[0].At > w.At {
					t.Errorf("list at %v after the watch at %v", lists[0].At, w.At)
				}
				after = evs
			}
			var recorded []seen
			for _, ev := range after {
				if ev.Type != "BOOKMARK" {
					recorded = append(recorded, seen{ev.Type, ev.Object.Metadata.Name, ev.Object.Metadata.ResourceVersion})
				}
			}
			mu.Lock()
			defer mu.Unlock()
			want := append([]seen{{"ADDED", "new-1", created.ResourceVersion}}, got...)
			if want[1] != (seen{"MODIFIED", "new-1", updated.ResourceVersion}) {
				t.Errorf("informer saw %+v after sync, want the update at %s first", got, updated.ResourceVersion)
			}
			if fmt.Sprint(recorded) != fmt.Sprint(want) {
				t.Errorf("recorded watch events %v, want %v", recorded, want)
			}
		})
	}

	t.Run("paged lists with limit=1 chain their continue tokens", func(t *testing.T) {
		mkNamespace(t, admin, "paged")
		for i := range 3 {
			mkConfigMap(t, admin, "paged", fmt.Sprintf("cm-%d", i))
		}
		s := newSession(t, recorder.Options{})
		cfg := jsonConfig(cp.Config)
		s.rec.WrapConfig(cfg)
		cs := kubernetes.NewForConfigOrDie(cfg)
		opts := metav1.ListOptions{Limit: 1}
		pages := 0
		for {
			l, err := cs.CoreV1().ConfigMaps("paged").List(t.Context(), opts)
			if err != nil {
				t.Fatal(err)
			}
			pages++
			if opts.Continue = l.Continue; opts.Continue == "" {
				break
			}
		}
		c := s.finish()
		if len(c.Interactions) != pages || pages != 3 {
			t.Fatalf("%d pages, %d interactions; want 3 of each", pages, len(c.Interactions))
		}
		prev := ""
		for i, in := range c.Interactions {
			if !strings.Contains(in.Request.URL, "limit=1") || (prev != "" && !strings.Contains(in.Request.URL, "continue="+prev)) {
				t.Errorf("page %d URL %s does not continue from %q", i, in.Request.URL, prev)
			}
			var l corev1.ConfigMapList
			if len(in.Frames) != 1 || json.Unmarshal(in.Frames[0].Data, &l) != nil || len(l.Items) != 1 {
				t.Fatalf("page %d: want one frame holding one item", i)
			}
			prev = l.Continue
		}
	})

	t.Run("a protobuf watch of pods is one frame per length-prefixed event", func(t *testing.T) {
		mkNamespace(t, admin, "proto")
		s := newSession(t, recorder.Options{})
		cfg := rest.CopyConfig(cp.Config) // the typed clientset asks for protobuf
		s.rec.WrapConfig(cfg)
		cs := kubernetes.NewForConfigOrDie(cfg)
		w, err := cs.CoreV1().Pods("proto").Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var rvs []string
		for i := range 2 {
			p, err := admin.CoreV1().Pods("proto").Create(t.Context(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i)},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			rvs = append(rvs, p.ResourceVersion)
			if ev := <-w.ResultChan(); ev.Type != watch.Added || ev.Object.(*corev1.Pod).ResourceVersion != p.ResourceVersion {
				t.Fatalf("client got %v %v", ev.Type, ev.Object)
			}
		}
		w.Stop()
		c := s.finish()
		in := c.Interactions[0]
		if ct := in.Response.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
			t.Fatalf("Content-Type %q", ct)
		}
		if len(in.Frames) != 2 || in.End.Reason != cassettes.EndStopped {
			t.Fatalf("%d frames, end %+v; want 2 and stopped", len(in.Frames), in.End)
		}
		checkOffsets(t, in)
		for i, f := range in.Frames {
			if n := binary.BigEndian.Uint32(f.Data); int(n) != len(f.Data)-4 {
				t.Fatalf("frame %d: prefix %d, %d bytes after it", i, n, len(f.Data)-4)
			}
			var ev metav1.WatchEvent
			if err := ev.Unmarshal(f.Data[4:]); err != nil {
				t.Fatalf("frame %d: %v", i, err)
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(ev.Object.Raw, nil, nil)
			if err != nil {
				t.Fatalf("frame %d object: %v", i, err)
			}
			if p := obj.(*corev1.Pod); ev.Type != "ADDED" || p.Name != fmt.Sprintf("p-%d", i) || p.ResourceVersion != rvs[i] {
				t.Errorf("frame %d: %s %s@%s, want ADDED p-%d@%s", i, ev.Type, p.Name, p.ResourceVersion, i, rvs[i])
			}
		}
	})

	t.Run("a connection cut mid-stream ends with reset", func(t *testing.T) {
		var mu sync.Mutex
		var conns []net.Conn
		cfg := jsonConfig(cp.Config)
		cfg.Dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			return c, err
		}
		mkNamespace(t, admin, "cut")
		s := newSession(t, recorder.Options{})
		s.rec.WrapConfig(cfg)
		w, err := kubernetes.NewForConfigOrDie(cfg).CoreV1().ConfigMaps("cut").Watch(t.Context(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mkConfigMap(t, admin, "cut", "before-cut")
		if ev := <-w.ResultChan(); ev.Type != watch.Added {
			t.Fatalf("got %v", ev.Type)
		}
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		for range w.ResultChan() { // the watch ends on the cut
		}
		w.Stop()
		in := s.finish().Interactions[0]
		if in.End.Reason != cassettes.EndReset || in.End.Error == "" || len(in.Frames) != 1 {
			t.Errorf("end %+v after %d frames, want reset with an error after 1", in.End, len(in.Frames))
		}
	})

	t.Run("kubectl through the proxy is recorded", func(t *testing.T) {
		if _, err := exec.LookPath("kubectl"); err != nil {
			t.Skip("kubectl not on PATH")
		}
		mkNamespace(t, admin, "kubectl")
		mkConfigMap(t, admin, "kubectl", "listed")
		s := newSession(t, recorder.Options{})
		p, err := recorder.NewProxy(cp.Config, s.rec)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		kc := filepath.Join(dir, "kubeconfig")
		if err := p.WriteKubeconfig(kc); err != nil {
			t.Fatal(err)
		}
		kubectl := func(ctx context.Context, args ...string) *exec.Cmd {
			cmd := exec.CommandContext(ctx, "kubectl", append([]string{"--kubeconfig=" + kc, "--cache-dir=" + filepath.Join(dir, "cache"), "-n", "kubectl"}, args...)...)
			cmd.Env = append(os.Environ(), "HOME="+dir)
			return cmd
		}
		out, err := kubectl(t.Context(), "get", "configmaps", "-o", "json").Output()
		if err != nil {
			t.Fatalf("kubectl get -o json: %v", err)
		}
		var list corev1.ConfigMapList
		if err := json.Unmarshal(out, &list); err != nil || len(list.Items) == 0 {
			t.Fatalf("kubectl output: %v\n%s", err, out)
		}

		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		defer cancel()
		cmd := kubectl(ctx, "get", "configmaps", "-w")
		stdout, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		lines := bufio.NewScanner(stdout)
		sawWatched := false
		for lines.Scan() {
			if strings.HasPrefix(lines.Text(), "listed") {
				mkConfigMap(t, admin, "kubectl", "watched")
			}
			if strings.HasPrefix(lines.Text(), "watched") {
				sawWatched = true
				break
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
		if !sawWatched {
			t.Fatal("kubectl -w never printed the new configmap")
		}
		if err := p.Close(); err != nil {
			t.Errorf("closing the proxy: %v", err)
		}
		c := s.finish()
		isCM := func(in *cassettes.Interaction) bool {
			return strings.Contains(in.Request.URL, "/namespaces/kubectl/configmaps")
		}
		gets := find(c, func(in *cassettes.Interaction) bool { return isCM(in) && !strings.Contains(in.Request.URL, "watch") })
		watches := find(c, func(in *cassettes.Interaction) bool {
			return isCM(in) && strings.Contains(in.Request.URL, "watch=true")
		})
		if len(gets) < 2 || len(watches) != 1 {
			t.Fatalf("%d lists and %d watches of the namespace's configmaps, want 2 (get and get -w) and 1", len(gets), len(watches))
		}
		if !strings.Contains(string(gets[0].Body()), `"listed"`) {
			t.Errorf("the recorded list lacks the configmap: %.300s", gets[0].Body())
		}
		w := watches[0]
		if n := len(w.Frames); n == 0 || !strings.Contains(string(w.Frames[n-1].Data), `"watched"`) || w.End.Reason != cassettes.EndStopped {
			t.Errorf("kubectl's watch: %d frames, end %+v; want the new configmap last and stopped", n, w.End)
		}
		for _, in := range c.Interactions {
			if in.Request.Header.Get("Authorization") != "" && in.Request.Header.Get("Authorization") != recorder.Redacted {
				t.Errorf("interaction %d records Authorization %q", in.ID, in.Request.Header.Get("Authorization"))
			}
		}
	})

	t.Run("secrets and tokens never reach the cassette", func(t *testing.T) {
		mkNamespace(t, admin, "secrets")
		if _, err := admin.CoreV1().ServiceAccounts("secrets").Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa"}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		s := newSession(t, recorder.Options{})
		var tokens []string
		for _, proto := range []bool{false, true} {
			cfg := rest.CopyConfig(cp.Config)
			if !proto {
				cfg = jsonConfig(cfg)
			}
			s.rec.WrapConfig(cfg)
			cs := kubernetes.NewForConfigOrDie(cfg)
			ctx := t.Context()
			name := fmt.Sprintf("s-%v", proto)
			secrets := cs.CoreV1().Secrets("secrets")
			w, err := secrets.Watch(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"password": secretValue}, Data: map[string][]byte{"p2": []byte(secretValue)}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if got, err := secrets.Get(ctx, name, metav1.GetOptions{}); err != nil || string(got.Data["password"]) != secretValue {
				t.Fatalf("get: %v (the client must still see the real value)", err)
			}
			if l, err := secrets.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) == 0 {
				t.Fatalf("list: %v", err)
			}
			ev := <-w.ResultChan()
			if string(ev.Object.(*corev1.Secret).Data["p2"]) != secretValue {
				t.Fatalf("watch event: %+v", ev)
			}
			w.Stop()
			tr, err := cs.CoreV1().ServiceAccounts("secrets").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
			if err != nil || tr.Status.Token == "" {
				t.Fatalf("token request: %v", err)
			}
			tokens = append(tokens, tr.Status.Token)
			// Use the token: the request carries it as a bearer token.
			sa := rest.AnonymousClientConfig(cfg)
			sa.BearerToken = tr.Status.Token
			sa.Wrap(s.rec.Wrap) // not WrapConfig: the recorder must not be told about the token
			kubernetes.NewForConfigOrDie(sa).CoreV1().Pods("secrets").List(ctx, metav1.ListOptions{})
		}
		c := s.finish()
		if found := leaks(t, s, c, append(tokens, secretValue)...); len(found) > 0 {
			t.Errorf("the cassette holds secrets: %q", found)
		}
		if n := len(find(c, func(in *cassettes.Interaction) bool {
			return in.Request.Header.Get("Authorization") == recorder.Redacted
		})); n != 2 {
			t.Errorf("%d requests with a redacted Authorization, want 2", n)
		}
	})
}

// TestWatchFromACompactedResourceVersion needs etcd compacted, which the API
// server does every 5 minutes by default: it runs its own control plane
// compacting every second. (With the watch cache on, a watch from "1" is
// answered from the cache's history, not with 410.)
func TestLiveWatchFromACompactedResourceVersion(t *testing.T) {
	dir, err := controlplanetest.AssetsDir()
	if err != nil {
		if os.Getenv(controlplanetest.EnvRequire) == "1" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: dir}
	// Without the watch cache, watches go to etcd: the cache would replay
	// the whole history it holds since the server started instead.
	env.ControlPlane.GetAPIServer().Configure().Set("etcd-compaction-interval", "1s").Set("watch-cache", "false")
	cfg, err := env.Start()
	if err != nil {
		env.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	admin := kubernetes.NewForConfigOrDie(cfg)
	mkNamespace(t, admin, "compacted")
	first := mkConfigMap(t, admin, "compacted", "cm")
	for i := range 3 {
		first.Data["k"] = fmt.Sprint(i)
		if first, err = admin.CoreV1().ConfigMaps("compacted").Update(t.Context(), first, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// Wait for the server to compact past revision 2: a watch from
	// resourceVersion 1 starts reading etcd at revision 2, which fails only
	// once a list at exactly revision 2 is 410 Gone. (Revision 1 alone is
	// not enough: a slow first compaction can stop at 2, and the watch then
	// succeeds.)
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := admin.CoreV1().ConfigMaps("compacted").List(ctx, metav1.ListOptions{ResourceVersion: "2", ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		return apierrors.IsResourceExpired(err) || apierrors.IsGone(err), nil
	})
	if err != nil {
		t.Fatalf("revision 2 was never compacted: %v", err)
	}

	s := newSession(t, recorder.Options{})
	rc := jsonConfig(cfg)
	s.rec.WrapConfig(rc)
	w, err := kubernetes.NewForConfigOrDie(rc).CoreV1().ConfigMaps("compacted").Watch(t.Context(), metav1.ListOptions{ResourceVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	w.Stop()
	if ev.Type != watch.Error {
		c := s.finish()
		t.Fatalf("client got %v, want an ERROR event; %s %s", ev.Type, c.Interactions[0].Request.URL, c.Interactions[0].Body())
	}
	in := s.finish().Interactions[0]
	evs := jsonEvents(t, in)
	if in.Response.Status != 200 || len(evs) != 1 || evs[0].Type != "ERROR" || evs[0].Object.Code != 410 || evs[0].Object.Reason != "Expired" {
		t.Errorf("status %d, events %+v; want 200 and one ERROR 410 Expired", in.Response.Status, evs)
	}
}
