package serve

import (
	"crypto/x509"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

func TestServingCertIsTrustedThroughItsCA(t *testing.T) {
	pair, caPEM, err := servingCert([]net.IP{net.IPv4(127, 0, 0, 1)}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatal("the CA's PEM holds no certificate")
	}
	for _, name := range []string{"127.0.0.1", "localhost"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: name}); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestHost(t *testing.T) {
	for _, tc := range []struct {
		addr     string
		loopback bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:8080", true},
		{"[::1]:0", true},
		{"0.0.0.0:0", false},
		{"example.com:443", false},
	} {
		if _, loopback, err := Host(tc.addr); err != nil || loopback != tc.loopback {
			t.Errorf("Host(%q) = %v, %v; want loopback %v", tc.addr, loopback, err, tc.loopback)
		}
	}
	if _, _, err := Host("no-port"); err == nil {
		t.Error("Host of an address without a port did not fail")
	}
}

func TestAuthorized(t *testing.T) {
	req := httptest.NewRequest(http.MethodGet, "/api", nil)
	req.Header.Set("Authorization", "Bearer tok")
	if !Authorized(req, "tok") {
		t.Error("the right token did not pass")
	}
	if Authorized(req, "other") || Authorized(req, "") {
		t.Error("a wrong or missing server token passed")
	}
}

func TestReadBodyRefusesTooLarge(t *testing.T) {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/namespaces/a/configmaps", strings.NewReader(strings.Repeat("x", MaxBodyBytes+1)))
	req.ContentLength = -1 // not announced: the reader must stop it
	w := httptest.NewRecorder()
	if ReadBody(w, req, req.Clone(req.Context())) {
		t.Fatal("a body over the limit was read")
	}
	if w.Code != http.StatusRequestEntityTooLarge || !strings.Contains(w.Body.String(), "Request entity too large: limit is 3145728") {
		t.Errorf("answered %d %s, want 413 naming the limit", w.Code, w.Body)
	}
}
