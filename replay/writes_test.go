package replay_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/replay"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// overlay replays testdata/configmaps.kwrec (a@90 and b@95 listed at 100,
// then ADDED c@101, MODIFIED a@102, DELETED b@103, ADDED d@104) taking
// writes.
func overlay(t *testing.T, src source, edits ...replay.Edit) *replay.Replayer {
	t.Helper()
	return src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, Edits: edits})
}

func newCM(name, value string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Data: map[string]string{"k": value}}
}

func TestOverlayWritesReachEveryReader(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := overlay(t, src)
		cs := clientset(t, r.Config())
		ctx := ctxT(t)
		cms := cs.CoreV1().ConfigMaps("default")
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: "100000"})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		// The recorded events first: the watch reaches the end of the recording.
		recorded := recv(t, w, 4)
		created, err := cms.Create(ctx, newCM("mine", "1"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if created.ResourceVersion != "104001" || created.UID == "" || created.CreationTimestamp.IsZero() {
			t.Errorf("created %s@%s uid %q at %v: want resourceVersion 104001 and the server-set fields", created.Name, created.ResourceVersion, created.UID, created.CreationTimestamp)
		}
		created.Data["k"] = "2"
		updated, err := cms.Update(ctx, created, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cms.Update(ctx, created, metav1.UpdateOptions{}) // created's resourceVersion is stale now
		if !apierrors.IsConflict(err) || err.Error() != `Operation cannot be fulfilled on configmaps "mine": the object has been modified; please apply your changes to the latest version and try again` {
			t.Errorf("stale update: err = %v, want the API server's Conflict", err)
		}
		if _, err := cms.Patch(ctx, "a", types.MergePatchType, []byte(`{"data":{"k":"patched"}}`), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		if err := cms.Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		written := recv(t, w, 4)
		want := []string{"ADDED mine@104001=1", "MODIFIED mine@104002=2", "MODIFIED a@104003=patched", "DELETED mine@104004=2"}
		if diff := cmp.Diff(want, strs(written)); diff != "" {
			t.Errorf("the watch saw the writes (-want +got):\n%s\nafter the recorded %v", diff, recorded)
		}
		if updated.ResourceVersion != "104002" {
			t.Errorf("updated at %s, want 104002", updated.ResourceVersion)
		}
		l, err := cms.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, o := range l.Items {
			names = append(names, o.Name+"@"+o.ResourceVersion+"="+o.Data["k"])
		}
		if diff := cmp.Diff([]string{"a@104003=patched", "c@101000=3", "d@104000=4"}, names); diff != "" {
			t.Errorf("list after the writes at %s (-want +got):\n%s", l.ResourceVersion, diff)
		}
		_, err = cms.Get(ctx, "mine", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			t.Errorf("get of the deleted object: err = %v, want NotFound", err)
		}
		if n := len(r.Writes()); n != 4 {
			t.Errorf("Writes() has %d writes, want the 4 applied (the refused update is not one)", n)
		}
	})
}

func strs(gs []got) []string {
	var out []string
	for _, g := range gs {
		out = append(out, g.String())
	}
	return out
}

func TestOverlayTakesWritesToCollectionsNeverRecorded(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := overlay(t, src)
		cfg := r.Config()
		cfg.ContentType = "application/vnd.kubernetes.protobuf" // as a typed client may send them
		cs := kubernetes.NewForConfigOrDie(cfg)
		ctx := ctxT(t)
		holder := "me"
		lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "leader", Namespace: "kube-system"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}
		got, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		again, err := cs.CoordinationV1().Leases("kube-system").Get(ctx, "leader", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if *again.Spec.HolderIdentity != "me" || again.ResourceVersion != got.ResourceVersion {
			t.Errorf("get after create: %+v", again)
		}
		_, err = cs.CoordinationV1().Leases("kube-system").Create(ctx, lease, metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Errorf("second create: err = %v, want AlreadyExists", err)
		}
	})
}

func TestEditsFailWritesAsTheServerWould(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		tests := []struct {
			edit string
			// check is the first write's error; nil for a status client-go
			// retries by itself after the Retry-After it was given.
			check func(error) bool
		}{
			{"error:resource=configmaps,verb=update,nth=1,status=500", apierrors.IsInternalError},
			{"error:resource=configmaps,verb=update,nth=1,status=429,retry-after=1", nil},
			{"error:resource=configmaps,verb=create,nth=1,status=503,retry-after=1", nil},
		}
		for _, tt := range tests {
			t.Run(tt.edit, func(t *testing.T) {
				e, err := replay.ParseEdit(tt.edit)
				if err != nil {
					t.Fatal(err)
				}
				r := overlay(t, src, e)
				cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
				ctx := ctxT(t)
				write := func() error {
					if e.Verb == "create" {
						_, err := cms.Create(ctx, newCM("n", "1"), metav1.CreateOptions{})
						return err
					}
					a, err := cms.Get(ctx, "a", metav1.GetOptions{})
					if err != nil {
						t.Fatal(err)
					}
					a.Data["k"] = "x"
					_, err = cms.Update(ctx, a, metav1.UpdateOptions{})
					return err
				}
				err = write()
				switch {
				case tt.check == nil && err != nil:
					t.Fatalf("first %s: %v, want client-go to retry after the Retry-After and succeed", e.Verb, err)
				case tt.check != nil && !tt.check(err):
					t.Fatalf("first %s: err = %v", e.Verb, err)
				case tt.check != nil:
					if err := write(); err != nil {
						t.Errorf("second %s: %v", e.Verb, err)
					}
				}
				if fired := r.Edits()[0].Fired; fired != 1 {
					t.Errorf("the edit fired %d times, want 1", fired)
				}
			})
		}
	})
}

func TestAnEditFailsTheFirstUpdateWithAConflict(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		e, err := replay.ParseEdit("error:resource=configmaps,verb=update,nth=1,status=409")
		if err != nil {
			t.Fatal(err)
		}
		r := overlay(t, src, e)
		cms := clientset(t, r.Config()).CoreV1().ConfigMaps("default")
		ctx := ctxT(t)
		a, err := cms.Get(ctx, "a", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		a.Data["k"] = "x"
		if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
			t.Fatalf("first update: err = %v, want the injected Conflict", err)
		}
		if _, err := cms.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("second update: %v", err)
		}
	})
}

func TestAStrictMissIsNoMatchInProcessAndThroughTheServer(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{})
		srv := &replay.Server{Replayer: r}
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		defer srv.Close()
		for name, cfg := range map[string]*rest.Config{"in process": r.Config(), "through the server": srv.Config()} {
			t.Run(name, func(t *testing.T) {
				err := clientset(t, cfg).CoreV1().ConfigMaps("default").Delete(context.Background(), "a", metav1.DeleteOptions{})
				if !replay.IsNoMatch(err) || apierrors.IsNotFound(err) {
					t.Fatalf("delete: err = %v, want ErrNoMatch and not NotFound", err)
				}
				if !strings.Contains(err.Error(), "DELETE "+cmPath+"/a") {
					t.Errorf("the error does not name the request: %v", err)
				}
				var se *apierrors.StatusError
				if name == "through the server" && (!errors.As(err, &se) || se.ErrStatus.Code != http.StatusInternalServerError) {
					t.Errorf("through the server: err = %#v, want a 500 InternalError", err)
				}
			})
		}
	})
}

func TestTheNamespacesOfTheRecordingExist(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, mode := range []replay.WriteMode{replay.WritesStrict, replay.WritesOverlay} {
			t.Run(mode.String(), func(t *testing.T) {
				r := src.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: mode})
				ns := clientset(t, r.Config()).CoreV1().Namespaces()
				got, err := ns.Get(ctxT(t), "default", metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if got.Status.Phase != corev1.NamespaceActive {
					t.Errorf("default is %q, want Active", got.Status.Phase)
				}
				if _, err := ns.Get(ctxT(t), "nowhere", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("a namespace nothing lives in: err = %v, want NotFound", err)
				}
			})
		}
	})
}

func TestBadWritesGetTheAPIServersAnswers(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		tests := []struct {
			name, method, path, ct, body string
			code                         int
			reason                       metav1.StatusReason
			message                      string
		}{
			{"malformed JSON", "POST", "configmaps", "application/json", `{"kind":`, 400, metav1.StatusReasonBadRequest, ""},
			{"a namespace that disagrees with the URL", "POST", "configmaps", "application/json",
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"other"}}`, 400, metav1.StatusReasonBadRequest,
				"the namespace of the provided object does not match the namespace sent on the request"},
			{"a kind that disagrees with the URL", "POST", "configmaps", "application/json",
				`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}`, 400, metav1.StatusReasonBadRequest, ""},
			{"an unknown patch type", "PATCH", "configmaps/a", "text/plain", `x`, 415, metav1.StatusReasonUnsupportedMediaType, "415: Unsupported Media Type"},
			{"an update of an object that does not exist", "PUT", "configmaps/nope", "application/json",
				`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"nope"}}`, 404, metav1.StatusReasonNotFound, `configmaps "nope" not found`},
			{"a subresource kwrec does not simulate", "POST", "pods/p/exec", "application/json", `{}`, 405, metav1.StatusReasonMethodNotAllowed,
				"kwrec replay: create of the exec subresource of pods is not simulated"},
			{"an eviction of a Pod that does not exist", "POST", "pods/p/eviction", "application/json",
				`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`, 404, metav1.StatusReasonNotFound, `pods "p" not found`},
			{"a resource no discovery knows", "POST", "widgets", "application/json", `{}`, 404, metav1.StatusReasonNotFound,
				"the server could not find the requested resource"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				r := overlay(t, src)
				req, _ := http.NewRequest(tt.method, "https://x"+cmPath[:len(cmPath)-len("configmaps")]+tt.path, strings.NewReader(tt.body))
				req.Header.Set("Content-Type", tt.ct)
				req.Header.Set("Accept", "application/json")
				resp, err := r.RoundTrip(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				var st metav1.Status
				if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
					t.Fatal(err)
				}
				if resp.StatusCode != tt.code || st.Kind != "Status" || st.Code != int32(tt.code) || st.Reason != tt.reason {
					t.Errorf("got %d %s %s (%d): %s; want %d %s", resp.StatusCode, st.Kind, st.Reason, st.Code, st.Message, tt.code, tt.reason)
				}
				if tt.message != "" && st.Message != tt.message {
					t.Errorf("message %q, want %q", st.Message, tt.message)
				}
			})
		}
	})
}

func TestAWrittenSecretIsRedactedInTheWritesKept(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := overlay(t, src)
		secrets := clientset(t, r.Config()).CoreV1().Secrets("default")
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": "hunter2"}, Data: map[string][]byte{"token": []byte("abc")}}
		got, err := secrets.Create(ctxT(t), s, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Data["token"]) != "abc" {
			t.Errorf("the code reads back %q, want its own data", got.Data["token"])
		}
		ws := r.Writes()
		if len(ws) != 1 {
			t.Fatalf("%d writes kept, want 1", len(ws))
		}
		for _, b := range [][]byte{ws[0].Request.Body, ws[0].Body()} {
			if strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "YWJj") {
				t.Errorf("secret data kept: %s", b)
			}
		}
	})
}

// TestATypedDeleteWithProtobufOptionsIsApplied deletes as typed clients
// configured for protobuf (controller-runtime's for built-in types) do:
// the body is an enveloped protobuf DeleteOptions, not an object of the
// kind. Its options take effect: a wrong UID precondition is the server's
// 409 (rest.BeforeDelete's wording, which names the kind), a grace period of 0 in the foreground keeps the object with the
// foregroundDeletion finalizer (no garbage collector runs, as in envtest),
// and a background delete removes it.
func TestATypedDeleteWithProtobufOptionsIsApplied(t *testing.T) {
	// Without the garbage collector, as on a bare API server, the
	// foreground delete's finalizer shows that its options were read.
	r := inMemory.replayer(t, fixture(t, "configmaps.kwrec"), replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})
	cfg := r.Config()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	var mu sync.Mutex
	var deleteTypes []string
	next := cfg.Transport
	cfg.Transport = roundTripper(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodDelete {
			mu.Lock()
			deleteTypes = append(deleteTypes, req.Header.Get("Content-Type"))
			mu.Unlock()
		}
		return next.RoundTrip(req)
	})
	cms := clientset(t, cfg).CoreV1().ConfigMaps("default")
	ctx := ctxT(t)
	for _, name := range []string{"fg", "bg"} {
		if _, err := cms.Create(ctx, newCM(name, "1"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	wrong := types.UID("wrong")
	err := cms.Delete(ctx, "bg", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &wrong}})
	if !apierrors.IsConflict(err) || !strings.HasPrefix(err.Error(), `Operation cannot be fulfilled on ConfigMap "bg": the UID in the precondition (wrong) does not match the UID in record (`) {
		t.Errorf("a delete with a wrong UID precondition: err = %v, want the server's 409", err)
	}
	zero, fg, bg := int64(0), metav1.DeletePropagationForeground, metav1.DeletePropagationBackground
	if err := cms.Delete(ctx, "fg", metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &fg}); err != nil {
		t.Fatalf("foreground delete: %v", err)
	}
	if err := cms.Delete(ctx, "bg", metav1.DeleteOptions{GracePeriodSeconds: &zero, PropagationPolicy: &bg}); err != nil {
		t.Fatalf("background delete: %v", err)
	}
	kept, err := cms.Get(ctx, "fg", metav1.GetOptions{})
	if err != nil || kept.DeletionTimestamp == nil || !slices.Equal(kept.Finalizers, []string{metav1.FinalizerDeleteDependents}) {
		t.Errorf("after a foreground delete: %v, err %v; want it kept, deleting, with the foregroundDeletion finalizer", kept, err)
	}
	if _, err := cms.Get(ctx, "bg", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after a background delete: err = %v, want NotFound", err)
	}
	if want := slices.Repeat([]string{"application/vnd.kubernetes.protobuf"}, 3); !slices.Equal(deleteTypes, want) {
		t.Errorf("the deletes' bodies were %q, want protobuf", deleteTypes)
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
