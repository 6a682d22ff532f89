package recorder_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
)

// secretWorld is one random trial of the secrets property: Secrets with
// random keys and values (data binary, stringData printable with characters
// JSON escapes), a random TokenRequest token, a random bearer token in the
// rest.Config, and random values for every header on the redaction list.
type secretWorld struct {
	secrets     []*corev1.Secret
	token       string // TokenRequest status.token
	bearer      string // the rest.Config's bearer token
	rawBearer   string // Authorization: Bearer of a raw request
	cookie      string
	setCookie   string
	proxyAuth   string
	stringDatas []string // stringData values sent in create requests
}

const (
	headerAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~"
	// printable ASCII, including what JSON escapes (<>&"\) and what URLs
	// and headers treat specially.
	printable = headerAlphabet + " !\"#$%&'()*+,/:;<=>?@[\\]^`{|}"
)

func randString(rnd *rand.Rand, alphabet string, min, max int) string {
	n := min + rnd.Intn(max-min+1)
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[rnd.Intn(len(alphabet))]
	}
	return string(b)
}

func newSecretWorld(seed int64) *secretWorld {
	rnd := rand.New(rand.NewSource(seed))
	// Every value starts with a marker so a short random value cannot
	// occur by chance in the rest of the cassette.
	tok := func(what string) string {
		return fmt.Sprintf("s%d%s-", seed, what) + randString(rnd, headerAlphabet, 16, 48)
	}
	w := &secretWorld{token: tok("tr"), bearer: tok("bc"), rawBearer: tok("br"), cookie: tok("ck"), setCookie: tok("sc"), proxyAuth: tok("pa")}
	for i := range 1 + rnd.Intn(4) {
		s := &corev1.Secret{
			TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("s-%d", i), Namespace: "default", ResourceVersion: fmt.Sprint(10 + i)},
			Data:       map[string][]byte{},
		}
		for range 1 + rnd.Intn(4) {
			v := make([]byte, 16+rnd.Intn(48))
			rnd.Read(v)
			s.Data[randString(rnd, "abcdefghijklmnopqrstuvwxyz0123456789-_.", 1, 20)] = v
		}
		if rnd.Intn(2) == 0 {
			// An applied Secret carries its stringData in this annotation.
			sd := fmt.Sprintf("s%dla-", seed) + randString(rnd, printable, 16, 40)
			w.stringDatas = append(w.stringDatas, sd)
			b, _ := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Secret", "stringData": map[string]string{"k": sd}})
			s.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": string(b)}
		}
		w.secrets = append(w.secrets, s)
	}
	for range 1 + rnd.Intn(3) {
		w.stringDatas = append(w.stringDatas, fmt.Sprintf("s%dsd-", seed)+randString(rnd, printable, 16, 40))
	}
	return w
}

// values are every secret string of the world.
func (w *secretWorld) values() []string {
	v := []string{w.token, w.bearer, w.rawBearer, w.cookie, w.setCookie, w.proxyAuth}
	for _, s := range w.secrets {
		for _, d := range s.Data {
			v = append(v, string(d))
		}
	}
	return append(v, w.stringDatas...)
}

func encodeProto(t *testing.T, obj runtime.Object, gv runtime.GroupVersioner) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := scheme.Codecs.EncoderForVersion(protobuf.NewSerializer(scheme.Scheme, scheme.Scheme), gv)
	if err := enc.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// serve answers like an API server holding the world's Secrets: get, list,
// watch and create in JSON or protobuf as asked, TokenRequests, and a
// Set-Cookie on every response.
func (w *secretWorld) serve(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		rw.Header().Set("Set-Cookie", "session="+w.setCookie+"; HttpOnly")
		proto := strings.Contains(r.Header.Get("Accept"), "protobuf")
		write := func(obj runtime.Object, gv runtime.GroupVersioner) {
			if proto {
				rw.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
				rw.Write(encodeProto(t, obj, gv))
				return
			}
			rw.Header().Set("Content-Type", "application/json")
			json.NewEncoder(rw).Encode(obj)
		}
		path := r.URL.Path
		switch {
		case strings.HasSuffix(path, "/token"):
			write(&authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"},
				Status: authenticationv1.TokenRequestStatus{Token: w.token}}, authenticationv1.SchemeGroupVersion)
		case r.URL.Query().Get("watch") == "true":
			if proto {
				rw.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
			} else {
				rw.Header().Set("Content-Type", "application/json")
			}
			for _, s := range w.secrets {
				if proto {
					ev := metav1.WatchEvent{Type: "ADDED", Object: runtime.RawExtension{Raw: encodeProto(t, s, corev1.SchemeGroupVersion)}}
					b, err := ev.Marshal()
					if err != nil {
						t.Error(err)
						return
					}
					rw.Write([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))})
					rw.Write(b)
				} else {
					b, _ := json.Marshal(s)
					rw.Write([]byte(`{"type":"ADDED","object":` + string(b) + "}\n"))
				}
				rw.(http.Flusher).Flush()
			}
		case strings.HasSuffix(path, "/secrets") && r.Method == http.MethodGet:
			l := &corev1.SecretList{TypeMeta: metav1.TypeMeta{Kind: "SecretList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "100"}}
			for _, s := range w.secrets {
				item := *s.DeepCopy()
				item.TypeMeta = metav1.TypeMeta{}
				l.Items = append(l.Items, item)
			}
			write(l, corev1.SchemeGroupVersion)
		case strings.HasSuffix(path, "/cookies"):
			// Echo nothing secret: the request headers are what is tested.
			write(&metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Success"}, corev1.SchemeGroupVersion)
		default: // get or create one Secret
			write(w.secrets[0], corev1.SchemeGroupVersion)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

// exercise drives every request kind through the recorder: typed get, list,
// watch, create (with stringData) and TokenRequest in JSON and protobuf,
// and a raw request carrying every redacted header.
func (w *secretWorld) exercise(t *testing.T, s *session, host string) {
	t.Helper()
	ctx := t.Context()
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		cfg := &rest.Config{Host: host, BearerToken: w.bearer}
		cfg.ContentType, cfg.AcceptContentTypes = ct, ct
		s.rec.WrapConfig(cfg)
		cs := kubernetes.NewForConfigOrDie(cfg)
		secrets := cs.CoreV1().Secrets("default")
		create := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "new"}, StringData: map[string]string{}, Data: w.secrets[0].Data}
		for i, v := range w.stringDatas {
			create.StringData[fmt.Sprint("k", i)] = v
		}
		if _, err := secrets.Create(ctx, create, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s create: %v", ct, err)
		}
		if _, err := secrets.Get(ctx, "s-0", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s get: %v", ct, err)
		}
		if l, err := secrets.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != len(w.secrets) {
			t.Fatalf("%s list: %v, %v", ct, l, err)
		}
		wt, err := secrets.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s watch: %v", ct, err)
		}
		for range w.secrets {
			if ev := <-wt.ResultChan(); ev.Type != "ADDED" {
				t.Fatalf("%s watch event %+v", ct, ev)
			}
		}
		wt.Stop()
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil || tr.Status.Token != w.token {
			t.Fatalf("%s token: %v, %v", ct, tr, err)
		}
	}
	req, err := http.NewRequestWithContext(ctx, "GET", host+"/api/v1/namespaces/default/cookies", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+w.rawBearer)
	req.Header.Set("Proxy-Authorization", "Basic "+w.proxyAuth)
	req.Header.Add("Cookie", "a="+w.cookie)
	req.Header.Add("Cookie", "b=plain; c="+w.cookie)
	resp, err := (&http.Client{Transport: s.rec.Wrap(nil)}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// forms are the ways a value can show in cassette bytes: itself, base64
// (a Secret's data in JSON; its bytes in a base64 frame are not aligned, so
// decoded bodies are searched too), and JSON-escaped.
func forms(v string) []string {
	out := []string{v, base64.StdEncoding.EncodeToString([]byte(v))}
	if b, err := json.Marshal(v); err == nil {
		if e := string(b[1 : len(b)-1]); e != v {
			out = append(out, e)
		}
	}
	return out
}

// cassetteBytes are the decompressed cassette text plus every decoded body,
// frame, URL and header of it.
func cassetteBytes(t *testing.T, s *session, c *cassettes.Cassette) [][]byte {
	all := [][]byte{s.raw()}
	for _, in := range c.Interactions {
		all = append(all, []byte(in.Request.URL), in.Request.Body, in.Body())
		for _, f := range in.Frames {
			all = append(all, f.Data)
		}
		h, _ := json.Marshal(in.Request.Header)
		all = append(all, h)
		if in.Response != nil {
			h, _ := json.Marshal(in.Response.Header)
			all = append(all, h)
		}
	}
	return all
}

// found returns the values of the world that appear in the cassette, and
// those that do not, in any of their forms.
func found(all [][]byte, values []string) (in, out []string) {
	for _, v := range values {
		hit := false
		for _, f := range forms(v) {
			for _, b := range all {
				if bytes.Contains(b, []byte(f)) {
					hit = true
				}
			}
		}
		if hit {
			in = append(in, v)
		} else {
			out = append(out, v)
		}
	}
	return in, out
}

func TestNoRandomSecretTokenOrRedactedHeaderEverReachesTheCassette(t *testing.T) {
	const trials = 25
	checked := 0
	for seed := int64(1); seed <= trials; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			w := newSecretWorld(seed)
			srv := w.serve(t)
			s := newSession(t, recorder.Options{})
			w.exercise(t, s, srv.URL)
			c := s.finish()
			leaked, _ := found(cassetteBytes(t, s, c), w.values())
			for _, v := range leaked {
				t.Errorf("the cassette holds the secret %q", v)
			}
			checked += len(w.values())
		})
	}
	t.Logf("%d random secret values, tokens and header values over %d cassettes: none recorded", checked, trials)
}

func TestWithRedactionDisabledTheRandomSecretsAreRecorded(t *testing.T) {
	const trials = 10
	for seed := int64(1); seed <= trials; seed++ {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			w := newSecretWorld(seed)
			srv := w.serve(t)
			s := newSession(t, recorder.Options{DisableRedaction: true})
			w.exercise(t, s, srv.URL)
			c := s.finish()
			if len(c.Header.Redactions) != 0 {
				t.Errorf("with redaction disabled the header lists %q", c.Header.Redactions)
			}
			_, missing := found(cassetteBytes(t, s, c), w.values())
			for _, v := range missing {
				t.Errorf("with redaction disabled the cassette does not hold %q: the property test could not see a leak", v)
			}
		})
	}
}
