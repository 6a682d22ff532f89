package recorder_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
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

const (
	secretValue = "hunter2-very-secret-value"
	tokenValue  = "eyJhbGciOiJSUzI1NiJ9.token-from-the-token-request"
	bearer      = "the-clients-own-bearer-token-123"
)

// leaks lists the secret strings found in the cassette: in its raw text
// and in every decoded body, frame and header.
func leaks(t *testing.T, s *session, c *cassettes.Cassette, secrets ...string) []string {
	t.Helper()
	var all [][]byte
	all = append(all, s.raw())
	for _, in := range c.Interactions {
		all = append(all, []byte(in.Request.URL), in.Request.Body, in.Body())
		h, _ := json.Marshal(in.Request.Header)
		all = append(all, h)
		if in.Response != nil {
			h, _ := json.Marshal(in.Response.Header)
			all = append(all, h)
		}
	}
	var found []string
	for _, sec := range secrets {
		for _, form := range []string{sec, base64.StdEncoding.EncodeToString([]byte(sec))} {
			for _, b := range all {
				if bytes.Contains(b, []byte(form)) {
					found = append(found, form)
					break
				}
			}
		}
	}
	return found
}

func protoDoc(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b bytes.Buffer
	ser := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	enc := scheme.Codecs.EncoderForVersion(ser, corev1.SchemeGroupVersion)
	if _, ok := obj.(*authenticationv1.TokenRequest); ok {
		enc = scheme.Codecs.EncoderForVersion(ser, authenticationv1.SchemeGroupVersion)
	}
	if err := enc.Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func protoWatchFrame(t *testing.T, typ string, obj runtime.Object) []byte {
	ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: protoDoc(t, obj)}}
	b, err := ev.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append(binaryLen(len(b)), b...)
}

func binaryLen(n int) []byte { return []byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)} }

// secretServer answers like an API server holding one Secret, in JSON or
// protobuf as asked, and echoes the token it was called with in a Status.
func secretServer(t *testing.T) *httptest.Server {
	secret := &corev1.Secret{
		TypeMeta:   metav1.TypeMeta{Kind: "Secret", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "default", Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"stringData":{"password":"` + secretValue + `"}}`}},
		Data:       map[string][]byte{"password": []byte(secretValue)},
	}
	tr := &authenticationv1.TokenRequest{TypeMeta: metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}, Status: authenticationv1.TokenRequestStatus{Token: tokenValue}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		proto := strings.Contains(r.Header.Get("Accept"), "protobuf")
		w.Header().Set("Set-Cookie", "session="+secretValue)
		switch {
		case strings.HasSuffix(r.URL.Path, "/token"):
			if proto {
				w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
				w.Write(protoDoc(t, tr))
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(tr)
		case r.URL.Query().Get("watch") == "true" && proto:
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf;stream=watch")
			w.Write(protoWatchFrame(t, "ADDED", secret))
		case r.URL.Query().Get("watch") == "true":
			w.Header().Set("Content-Type", "application/json")
			b, _ := json.Marshal(secret)
			w.Write([]byte(`{"type":"ADDED","object":` + string(b) + "}\n"))
		case proto:
			w.Header().Set("Content-Type", "application/vnd.kubernetes.protobuf")
			w.Write(protoDoc(t, secret))
		case strings.HasSuffix(r.URL.Path, "/secrets"):
			w.Header().Set("Content-Type", "application/json")
			s := secret.DeepCopy()
			s.TypeMeta = metav1.TypeMeta{} // list items carry no kind
			json.NewEncoder(w).Encode(&corev1.SecretList{TypeMeta: metav1.TypeMeta{Kind: "SecretList", APIVersion: "v1"}, Items: []corev1.Secret{*s}})
		case strings.HasSuffix(r.URL.Path, "/pods"):
			// Echo the caller's token, as a TokenReview-ish webhook might.
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"kind":"Status","message":"` + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ") + `"}` + "\n"))
		default:
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(secret)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func exerciseSecrets(t *testing.T, cfg *rest.Config) {
	t.Helper()
	ctx := t.Context()
	for _, ct := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		c := rest.CopyConfig(cfg)
		c.ContentType = ct
		c.AcceptContentTypes = ct
		cs := kubernetes.NewForConfigOrDie(c)
		secrets := cs.CoreV1().Secrets("default")
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"password": secretValue}, Data: map[string][]byte{"p2": []byte(secretValue)}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s create: %v", ct, err)
		}
		if _, err := secrets.Get(ctx, "s", metav1.GetOptions{}); err != nil {
			t.Fatalf("%s get: %v", ct, err)
		}
		if ct == "application/json" {
			if _, err := secrets.List(ctx, metav1.ListOptions{}); err != nil {
				t.Fatalf("%s list: %v", ct, err)
			}
		}
		w, err := secrets.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("%s watch: %v", ct, err)
		}
		if ev := <-w.ResultChan(); ev.Object.(*corev1.Secret).Name != "s" {
			t.Fatalf("%s watch event %+v", ct, ev)
		}
		w.Stop()
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "sa", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s token: %v", ct, err)
		}
		if tr.Status.Token == "" {
			t.Fatalf("%s: no token returned", ct)
		}
		cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}) // the server echoes the bearer token
	}
}

func TestSecretsAndTokensNeverReachTheCassette(t *testing.T) {
	srv := secretServer(t)
	s := newSession(t, recorder.Options{})
	cfg := &rest.Config{Host: srv.URL, BearerToken: bearer}
	s.rec.WrapConfig(cfg)
	exerciseSecrets(t, cfg)
	c := s.finish()
	if found := leaks(t, s, c, secretValue, tokenValue, bearer); len(found) > 0 {
		t.Errorf("the cassette holds secrets: %q", found)
	}
	if len(c.Header.Redactions) == 0 {
		t.Error("the header lists no redactions")
	}
	// Redaction keeps the objects usable: the protobuf watch frame still
	// decodes, with the redacted value.
	for _, in := range c.Interactions {
		if in.Response == nil || !strings.Contains(in.Response.Header.Get("Content-Type"), "stream=watch") {
			continue
		}
		var ev metav1.WatchEvent
		if err := ev.Unmarshal(in.Frames[0].Data[4:]); err != nil {
			t.Fatalf("redacted protobuf watch frame: %v", err)
		}
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(ev.Object.Raw, nil, nil)
		if err != nil {
			t.Fatalf("redacted protobuf secret: %v", err)
		}
		if got := string(obj.(*corev1.Secret).Data["password"]); got != recorder.Redacted {
			t.Errorf("redacted protobuf secret holds %q, want %q", got, recorder.Redacted)
		}
	}
}

func TestDisablingRedactionKeepsEverything(t *testing.T) {
	srv := secretServer(t)
	opts := recorder.Options{DisableRedaction: true}
	s := newSession(t, opts)
	cfg := &rest.Config{Host: srv.URL, BearerToken: bearer}
	s.rec.WrapConfig(cfg)
	exerciseSecrets(t, cfg)
	c := s.finish()
	if found := leaks(t, s, c, secretValue, tokenValue, bearer); len(found) < 3 {
		t.Errorf("with redaction off, found only %q in the cassette", found)
	}
	if len(c.Header.Redactions) != 0 {
		t.Errorf("with redaction off, the header lists %q", c.Header.Redactions)
	}
}

func TestCustomRedactionsRunAndAreListed(t *testing.T) {
	srv := chunkServer(t, "application/json", []byte(`{"kind":"ConfigMap","data":{"k":"v"}}`+"\n"), 5)
	opts := recorder.Options{Redactions: []recorder.Redaction{{Name: "custom:configmap-data", Redact: func(ex *recorder.Exchange) {
		if ex.Frame != nil {
			ex.Frame.Data = bytes.ReplaceAll(ex.Frame.Data, []byte(`"v"`), []byte(`"x"`))
		}
	}}}}
	s := newSession(t, opts)
	get(t, s.client(), srv.URL+"/api/v1/configmaps/a")
	c := s.finish()
	if got := string(c.Interactions[0].Body()); got != `{"kind":"ConfigMap","data":{"k":"x"}}`+"\n" {
		t.Errorf("body %q", got)
	}
	if h := c.Header.Redactions; len(h) == 0 || h[len(h)-1] != "custom:configmap-data" {
		t.Errorf("header redactions %q do not end with the custom one", h)
	}
}

func TestUndecodableSecretsAreReplaced(t *testing.T) {
	for _, tt := range []struct{ name, ct, body string }{
		{"a cut JSON secret", "application/json", `{"kind":"Secret","data":{"p":"` + base64.StdEncoding.EncodeToString([]byte(secretValue))},
		{"a corrupt protobuf secret", "application/vnd.kubernetes.protobuf", "k8s\x00\x0a\x0fSecret " + secretValue},
	} {
		t.Run(tt.name, func(t *testing.T) {
			srv := chunkServer(t, tt.ct, []byte(tt.body), 3)
			s := newSession(t, recorder.Options{})
			get(t, s.client(), srv.URL+"/api/v1/namespaces/default/secrets/s")
			c := s.finish()
			if found := leaks(t, s, c, secretValue); len(found) > 0 {
				t.Errorf("leaked %q", found)
			}
		})
	}
}
