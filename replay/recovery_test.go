package replay_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientfeatures "k8s.io/client-go/features"
	clientfeaturestesting "k8s.io/client-go/features/testing"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// protoFixture is testdata/configmaps.kwrec as a typed client records it:
// the list and the watch in protobuf.
func protoFixture(t *testing.T) *cassettes.Cassette {
	t.Helper()
	c := fixture(t, "configmaps.kwrec")
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	decode := func(b []byte) runtime.Object {
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return obj
	}
	encode := func(obj runtime.Object) []byte {
		b, err := runtime.Encode(ser, obj)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	list, watch := c.Interactions[0], c.Interactions[1]
	list.Frames[0].Data = encode(decode(list.Frames[0].Data))
	for i, f := range watch.Frames {
		var ev struct {
			Type   string
			Object runtime.RawExtension
		}
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatal(err)
		}
		watch.Frames[i].Data = watchEventFrame(ev.Type, encode(decode(ev.Object.Raw)))
	}
	for _, in := range []*cassettes.Interaction{list, watch} {
		in.Request.Header = http.Header{"Accept": {"application/vnd.kubernetes.protobuf,application/json"}}
		in.Response.Header = http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf"}}
	}
	watch.Response.Header.Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
	return c
}

// informerRun is a typed ConfigMap informer over cfg that counts the
// errors its watch handler sees and logs the Content-Type of every list.
type informerRun struct {
	inf     cache.SharedIndexInformer
	changed <-chan struct{}
	log     func() []string

	mu       sync.Mutex
	failures []string
	listCTs  []string
	requests []string
}

func (ir *informerRun) RoundTrip(req *http.Request, next http.RoundTripper) (*http.Response, error) {
	resp, err := next.RoundTrip(req)
	ir.mu.Lock()
	defer ir.mu.Unlock()
	ir.requests = append(ir.requests, req.URL.RawQuery)
	if err != nil {
		return resp, err
	}
	if resp.StatusCode >= 400 {
		ir.failures = append(ir.failures, fmt.Sprintf("HTTP %d", resp.StatusCode))
	}
	if req.URL.Query().Get("watch") == "" {
		ir.listCTs = append(ir.listCTs, resp.Header.Get("Content-Type"))
	} else {
		resp.Body = &scanBody{ReadCloser: resp.Body, ir: ir}
	}
	return resp, err
}

// scanBody notes every ERROR event with reason Expired a watch body
// carries, JSON or protobuf, once the body ends.
type scanBody struct {
	io.ReadCloser
	ir   *informerRun
	once sync.Once
	mu   sync.Mutex // Close comes from another goroutine than Read
	buf  []byte
}

func (b *scanBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.mu.Lock()
	b.buf = append(b.buf, p[:n]...)
	b.mu.Unlock()
	if err != nil {
		b.note()
	}
	return n, err
}

func (b *scanBody) Close() error { b.note(); return b.ReadCloser.Close() }

func (b *scanBody) note() {
	b.once.Do(func() {
		b.mu.Lock()
		n := bytes.Count(b.buf, []byte("Expired"))
		b.mu.Unlock()
		b.ir.mu.Lock()
		defer b.ir.mu.Unlock()
		for range n {
			b.ir.failures = append(b.ir.failures, "ERROR Expired")
		}
	})
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func startInformer(t *testing.T, cfg *rest.Config) *informerRun {
	t.Helper()
	ir := &informerRun{}
	next := cfg.Transport
	cfg.Transport = rtFunc(func(req *http.Request) (*http.Response, error) { return ir.RoundTrip(req, next) })
	f := informers.NewSharedInformerFactoryWithOptions(clientset(t, cfg), 0, informers.WithNamespace("default"))
	ir.inf = f.Core().V1().ConfigMaps().Informer()
	h, ch, l := notifier()
	if _, err := ir.inf.AddEventHandler(h); err != nil {
		t.Fatal(err)
	}
	ir.changed, ir.log = ch, l
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop); f.Shutdown() })
	f.Start(stop)
	return ir
}

func (ir *informerRun) seen() []string {
	ir.mu.Lock()
	defer ir.mu.Unlock()
	return append([]string(nil), ir.failures...)
}

func TestInformersRecoverFromEveryFailureToTheRecordedFinalStore(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		for _, tc := range []struct {
			name   string
			proto  bool
			edit   string
			c      func(t *testing.T) *cassettes.Cassette
			want   string
			noList bool // the failure is on a list, which a WatchList informer does not send
		}{
			{"a 410 edit on the recorded watch", false, "watch-error:request=2,after=1,code=410", nil, "ERROR Expired", false},
			{"a 410 edit anchored at resourceVersion 102", false, "watch-error:resource=configmaps,rv=102,code=410", nil, "ERROR Expired", false},
			{"a 410 hand-written into the cassette", false, "", withRecordedError, "ERROR Expired", false},
			{"a 503 on the first list of configmaps", false, "error:resource=configmaps,verb=list,nth=1,status=503", nil, "HTTP 503", true},
			{"a 503 on the first watch of configmaps", false, "error:resource=configmaps,verb=watch,nth=1,status=503", nil, "HTTP 503", false},
			{"a 410 edit on a protobuf recording", true, "watch-error:request=2,after=1,code=410", protoFixture, "ERROR Expired", false},
			{"a 503 on the first list of a protobuf recording", true, "error:resource=configmaps,verb=list,nth=1,status=503", protoFixture, "HTTP 503", true},
		} {
			for _, watchList := range []bool{false, true} {
				if tc.noList && watchList {
					continue
				}
				name := tc.name + ", WatchListClient off"
				if watchList {
					name = tc.name + ", WatchListClient on"
				}
				t.Run(name, func(t *testing.T) {
					clientfeaturestesting.SetFeatureDuringTest(t, clientfeatures.WatchListClient, watchList)
					c := fixture(t, "configmaps.kwrec")
					if tc.c != nil {
						c = tc.c(t)
					}
					var edits []replay.Edit
					if tc.edit != "" {
						e, err := replay.ParseEdit(tc.edit)
						if err != nil {
							t.Fatal(err)
						}
						edits = append(edits, e)
					}
					r := src.replayer(t, c, replay.Options{Edits: edits})
					ir := startInformer(t, r.Config())
					waitStore(t, ir.inf, ir.changed, recordedFinal)
					if d := cmp.Diff([]string{tc.want}, ir.seen()); d != "" {
						t.Errorf("failures the informer was sent (-want +got):\n%s", d)
					}
					for _, e := range r.Edits() {
						if e.Fired != 1 {
							t.Errorf("edit %s", e)
						}
					}
					ir.mu.Lock()
					defer ir.mu.Unlock()
					if tc.proto {
						for _, ct := range ir.listCTs {
							if ct != "application/vnd.kubernetes.protobuf" && !strings.HasPrefix(ct, "application/json") {
								t.Errorf("a list answered in %q", ct)
							}
						}
						if n := len(ir.listCTs); !watchList && (n < 2 || ir.listCTs[n-1] != "application/vnd.kubernetes.protobuf") {
							t.Errorf("the re-list was not answered in protobuf: list content types %v (requests %v)", ir.listCTs, ir.requests)
						}
					}
					if d := cmp.Diff(recordedFinal, storeState(ir.inf.GetStore())); d != "" {
						t.Errorf("final store (-recorded +replayed):\n%s", d)
					}
				})
			}
		}
	})
}

// watchEventFrame is a protobuf watch frame: the 4-byte length, then the
// metav1.WatchEvent of obj.
func watchEventFrame(typ string, obj []byte) []byte {
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
	b, _ := ev.Marshal()
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(b))), b...)
}
