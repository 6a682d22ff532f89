// These tests are kwrec's own conformance check of overlay
// writes: one table of HTTP requests (verbs × kinds × subresources ×
// options × encodings), each sent in order to a real kube-apiserver and to
// a replay in Overlay mode of a cassette recorded from that server just
// before, with the answers compared: status codes, reasons, messages,
// Warning headers and objects, the fields only the server's clock, etcd or
// random source decide masked.
//
// The table is conformance_live_test.go, where a
// new case is one line. It needs the test control plane (see
// internal/testkit/controlplanetest) and skips without it unless
// KWREC_REQUIRE_CONTROLPLANE=1.
//
// The overlay runs without its garbage collector here, as the test
// control plane has no kube-controller-manager: replay's own tests check
// the collector.
package conformance_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"maps"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/replay"
)

// row is one request of the table: sent to the server, then to the
// overlay, and the two answers compared.
type row struct {
	name   string
	method string
	// path is the request's path and query.
	path string
	// body is JSON (YAML for apply); with ct "pb" it is converted to the
	// protobuf a typed client sends.
	body string
	// ct is the body's Content-Type: "" JSON, "merge", "smp", "jsonpatch",
	// "apply" (YAML), "pb" (protobuf).
	ct string
	// accept is "" (JSON), "pb" (client-go's protobuf-first header), "meta"
	// (PartialObjectMetadata JSON), "metapb" (PartialObjectMetadata
	// protobuf), "list" and "listpb" (PartialObjectMetadataList), "table"
	// (kubectl get's Table) and "tablev1beta1".
	accept string
}

// category is the word before a row name's colon, by which the summary
// counts rows.
func (r row) category() string { c, _, _ := strings.Cut(r.name, ":"); return c }

var contentTypes = map[string]string{
	"":          "application/json",
	"merge":     "application/merge-patch+json",
	"smp":       "application/strategic-merge-patch+json",
	"jsonpatch": "application/json-patch+json",
	"apply":     "application/apply-patch+yaml",
	"pb":        "application/vnd.kubernetes.protobuf",
}

var accepts = map[string]string{
	"":       "application/json",
	"pb":     "application/vnd.kubernetes.protobuf,application/json",
	"meta":   "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
	"metapb": "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json",
	"list":   "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
	"listpb": "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json",
	// table is kubectl get's header: server-side printing.
	"table":        "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
	"tablev1beta1": "application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
}

// world is a server and an overlay replay of its recording, with clients
// for both.
type world struct {
	live, overlay   *http.Client
	liveHost, oHost string
	scheme          *runtime.Scheme
	replayer        *replay.Replayer
	cfg             *rest.Config // the server's
}

// answer is what a request got, normalized for comparison.
type answer struct {
	Code     int
	Warnings []string `json:",omitempty"`
	Body     any
	// rv and cont are a list's resourceVersion and continue token, as
	// they were before normalizing masked them.
	rv, cont string
}

func newScheme(t *testing.T) *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := metav1.AddMetaToScheme(s); err != nil {
		t.Fatal(err)
	}
	metav1.AddToGroupVersion(s, metav1.SchemeGroupVersion)
	return s
}

// startWorld starts the control plane, seeds it with seed (JSON objects
// POSTed to their paths, in order), records a list of each collection in
// recorded across all namespaces, and opens the recording in Overlay
// mode, with the garbage collector off, as envtest has none.
func startWorld(t *testing.T, seed []row, recorded []string) *world {
	t.Helper()
	w := newWorld(t, controlplanetest.Start(t))
	for _, s := range seed {
		a := w.do(t, w.live, w.liveHost, s)
		if a.Code >= 300 {
			t.Fatalf("seeding %s: %d %v", s.name, a.Code, a.Body)
		}
	}
	w.record(t, recorded, replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})
	return w
}

// newWorld is a world of cp, before its recording.
func newWorld(t *testing.T, cp *controlplanetest.ControlPlane) *world {
	t.Helper()
	w := &world{scheme: newScheme(t), cfg: rest.CopyConfig(cp.Config)}
	w.cfg.UserAgent = "kwrec-conformance/1.0"
	hc, err := rest.HTTPClientFor(w.cfg)
	if err != nil {
		t.Fatal(err)
	}
	w.live, w.liveHost = hc, strings.TrimSuffix(w.cfg.Host, "/")
	return w
}

// record records a list of each collection in recorded across all
// namespaces and opens the recording with opts.
func (w *world) record(t *testing.T, recorded []string, opts replay.Options) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "world.kwrec")
	cw, err := cassettes.Create(path, recorder.Header(w.liveHost, recorder.Options{}), cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := recorder.New(cw, recorder.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rcfg := rest.CopyConfig(w.cfg)
	rec.WrapConfig(rcfg)
	rhc, err := rest.HTTPClientFor(rcfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range recorded {
		if a := w.do(t, rhc, w.liveHost, row{method: "GET", path: p}); a.Code != http.StatusOK {
			t.Fatalf("recording %s: %d %v", p, a.Code, a.Body)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cw.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := replay.Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	w.replayer = r
	ocfg := r.Config()
	ocfg.UserAgent = w.cfg.UserAgent
	if w.overlay, err = rest.HTTPClientFor(ocfg); err != nil {
		t.Fatal(err)
	}
	w.oHost = ocfg.Host
}

// run sends each row to the server and then to the overlay, in order, as
// subtests (rvToken and contToken resolved on each side, as the fuzzer
// does, so that a row it prints can be pasted here), and logs how many
// differ by category.
func (w *world) run(t *testing.T, rows []row) {
	t.Helper()
	differ := map[string]int{}
	total := map[string]int{}
	names := map[string]bool{}
	lside, oside := w.sides()
	for _, r := range rows {
		if names[r.name] {
			t.Fatalf("two rows are named %q", r.name)
		}
		names[r.name] = true
		total[r.category()]++
		ok := t.Run(r.name, func(t *testing.T) {
			live, _, _ := w.send(t, lside, r)
			over, _, _ := w.send(t, oside, r)
			if d := diffAnswers(live, over); d != "" {
				t.Errorf("%s %s\n(-server +overlay):\n%s", r.method, r.path, d)
				lb, _ := json.Marshal(live)
				ob, _ := json.Marshal(over)
				t.Logf("server: %s\noverlay: %s", lb, ob)
			}
		})
		if !ok {
			differ[r.category()]++
		}
	}
	var b strings.Builder
	n, bad := 0, 0
	for _, c := range slices.Sorted(maps.Keys(total)) {
		fmt.Fprintf(&b, "\n  %-20s %3d requests, %d differ", c, total[c], differ[c])
		n += total[c]
		bad += differ[c]
	}
	t.Logf("live versus overlay: %d requests, %d differ%s", n, bad, b.String())
}

// requestTimeout bounds every request: an answer that does not come is a
// failure, never a hang.
const requestTimeout = 20 * time.Second

// do sends r with hc to host and returns its normalized answer.
func (w *world) do(t *testing.T, hc *http.Client, host string, r row) answer {
	t.Helper()
	body := []byte(r.body)
	if r.ct == "pb" {
		body = w.protobuf(t, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, host+r.path, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if len(body) > 0 {
		req.Header.Set("Content-Type", contentTypes[r.ct])
	}
	req.Header.Set("Accept", accepts[r.accept])
	resp, err := hc.Do(req)
	if err != nil {
		// No answer at all: a difference to count, not the end of the
		// table.
		return answer{Body: "no answer: " + err.Error()}
	}
	defer resp.Body.Close()
	a := answer{Code: resp.StatusCode, Warnings: resp.Header.Values("Warning")}
	ct := resp.Header.Get("Content-Type")
	if strings.Contains(r.path, "watch=true") || strings.Contains(r.path, "watch=1") {
		a.Body = w.initialEvents(t, resp.Body, ct)
		return a
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the answer: %v", r.method, r.path, err)
	}
	if r.method == http.MethodGet && strings.HasPrefix(ct, "application/json") && strings.Contains(r.path, "limit=") {
		var l metav1.ListMeta
		var m struct{ Metadata *metav1.ListMeta }
		m.Metadata = &l
		_ = json.Unmarshal(b, &m)
		a.rv, a.cont = l.ResourceVersion, l.Continue
	}
	a.Body = maskGenerated(w.decode(t, b, ct), r.body)
	return a
}

// maskGenerated replaces the random suffix of a name made from the
// body's generateName, wherever it appears (an error message quotes it).
func maskGenerated(v any, body string) any {
	var m struct {
		Metadata struct{ GenerateName string }
	}
	if json.Unmarshal([]byte(body), &m) != nil || m.Metadata.GenerateName == "" {
		return v
	}
	re := regexp.MustCompile(regexp.QuoteMeta(m.Metadata.GenerateName) + `[a-z0-9]{5}`)
	var walk func(any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case string:
			return re.ReplaceAllString(x, m.Metadata.GenerateName+"xxxxx")
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i := range x {
				x[i] = walk(x[i])
			}
		}
		return v
	}
	return walk(v)
}

// initialEvents reads a watch opened with sendInitialEvents up to the
// bookmark that ends them.
func (w *world) initialEvents(t *testing.T, body io.Reader, ct string) any {
	t.Helper()
	if !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("a watch answered %s; the table reads JSON watches", ct)
	}
	var events []any
	dec := json.NewDecoder(bufio.NewReader(body))
	for {
		var ev map[string]any
		if err := dec.Decode(&ev); err != nil {
			events = append(events, "read: "+err.Error())
			return events
		}
		events = append(events, normalize(ev))
		if ev["type"] == "BOOKMARK" || ev["type"] == "ERROR" {
			return events
		}
	}
}

// decode returns an answer's body as generic JSON: protobuf through the
// scheme's typed objects.
func (w *world) decode(t *testing.T, b []byte, ct string) any {
	t.Helper()
	if strings.HasPrefix(ct, "application/vnd.kubernetes.protobuf") {
		obj, gvk, err := protobuf.NewSerializer(w.scheme, w.scheme).Decode(b, nil, nil)
		if err != nil {
			return "undecodable protobuf: " + err.Error()
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
		if err != nil {
			t.Fatal(err)
		}
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
		return normalize(m)
	}
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return "not JSON: " + string(b)
	}
	return normalize(v)
}

// protobuf converts a JSON object (with apiVersion and kind) to the
// enveloped protobuf a typed client sends.
func (w *world) protobuf(t *testing.T, b []byte) []byte {
	t.Helper()
	var tm metav1.TypeMeta
	if err := json.Unmarshal(b, &tm); err != nil || tm.Kind == "" {
		t.Fatalf("a protobuf row's body needs apiVersion and kind: %s", b)
	}
	gvk := tm.GroupVersionKind()
	obj, err := w.scheme.New(gvk)
	if err != nil {
		t.Fatalf("%v: %v", gvk, err)
	}
	if err := json.Unmarshal(b, obj); err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	var out bytes.Buffer
	if err := protobuf.NewSerializer(w.scheme, w.scheme).Encode(obj, &out); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

var (
	uidRE    = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)
	numberRE = regexp.MustCompile(`\b[0-9]{3,}\b`)
	// timeRE is a timestamp an error message quotes (a patched object's
	// creationTimestamp): the server's clock.
	timeRE = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?Z`)
	// ageRE is an age a Table row prints (duration.HumanDuration): the
	// server's clock.
	ageRE = regexp.MustCompile(`^([0-9]+[smhdy])+$`)
)

// masked are the keys whose values the server's clock, etcd or random
// source decide: their values are replaced by their key's name.
var masked = map[string]bool{
	"resourceVersion": true, "uid": true, "creationTimestamp": true, "deletionTimestamp": true,
	"time": true, "continue": true, "token": true, "expirationTimestamp": true, "lastUpdateTime": true,
	"lastTransitionTime": true,
}

// normalize masks what only the server decides, in place, and returns v.
func normalize(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if masked[k] {
				if e != nil && e != "" {
					x[k] = k
				}
				continue
			}
			x[k] = normalize(e)
		}
		if cells, ok := x["cells"].([]any); ok {
			for i, c := range cells {
				if s, ok := c.(string); ok && ageRE.MatchString(s) {
					cells[i] = "AGE"
				}
			}
		}
		if gn, _ := x["generateName"].(string); gn != "" {
			x["name"] = gn + "xxxxx"
		}
		for k, e := range x {
			if s, ok := e.(string); ok && uidRE.MatchString(s) && len(s) == 36 {
				x[k] = "UID"
			}
		}
		if msg, ok := x["message"].(string); ok {
			x["message"] = numberRE.ReplaceAllString(uidRE.ReplaceAllString(timeRE.ReplaceAllString(msg, "TIME"), "UID"), "N")
		}
		if mf, ok := x["managedFields"].([]any); ok {
			// The server orders the entries by their times, to the
			// second: two writes a tick apart on one side and within a
			// second on the other come in different orders. With the
			// times masked, order them by what is left.
			sortByJSON(mf)
		}
		if causes, ok := x["causes"].([]any); ok {
			// The server validates a custom resource's fields in map
			// order: the same errors come in any order, each in causes
			// (sorted here) and in the message's list (left out).
			sortByJSON(causes)
		}
		if msg, ok := x["message"].(string); ok {
			if head, _, ok := strings.Cut(msg, " is invalid: ["); ok && strings.HasSuffix(msg, "]") {
				x["message"] = head + " is invalid: [the causes]"
			}
		}
	case []any:
		for i := range x {
			x[i] = normalize(x[i])
		}
	}
	return v
}

// sortByJSON sorts xs, JSON values, by their JSON.
func sortByJSON(xs []any) {
	sort.Slice(xs, func(i, j int) bool {
		a, _ := json.Marshal(xs[i])
		b, _ := json.Marshal(xs[j])
		return string(a) < string(b)
	})
}

// diffAnswers returns the differences between the server's answer and the
// overlay's, "" for none, compared as JSON (a protobuf answer decodes to
// int64 where JSON has float64).
func diffAnswers(live, over answer) string {
	lb, _ := json.Marshal(live)
	ob, _ := json.Marshal(over)
	if bytes.Equal(lb, ob) {
		return "" // JSON sorts map keys: equal bytes, equal answers
	}
	asJSON := func(b []byte) any {
		var v any
		_ = json.Unmarshal(b, &v)
		return v
	}
	return cmp.Diff(asJSON(lb), asJSON(ob))
}

// csrPEM returns a PEM certificate request for CN name, as a
// CertificateSigningRequest's spec.request needs.
func csrPEM(t *testing.T, name string) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: name}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}
