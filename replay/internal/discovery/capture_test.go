package discovery

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/google/go-cmp/cmp"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// envUpdate names the variable that, set to 1, makes TestLiveCaptureBuiltin
// rewrite builtin.kwrec.zst from the live control plane.
const envUpdate = "KWREC_UPDATE_DISCOVERY"

// liveServer fetches paths from a live API server with admin credentials.
type liveServer struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func (s liveServer) get(path, accept string) (status int, contentType string, body []byte) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), http.MethodGet, s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err = io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, resp.Header.Get("Content-Type"), body
}

// mustGet fetches path and fails the test unless the server answers 200.
func (s liveServer) mustGet(path, accept string) (contentType string, body []byte) {
	s.t.Helper()
	status, ctype, body := s.get(path, accept)
	if status != http.StatusOK {
		s.t.Fatalf("GET %s (Accept %s): %d %s, want 200: %s", path, accept, status, ctype, body)
	}
	return ctype, body
}

func startLive(t *testing.T) liveServer {
	cp := controlplanetest.Start(t)
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	s := liveServer{t: t, base: strings.TrimSuffix(cp.Config.Host, "/"), hc: hc}
	s.waitSettled()
	return s
}

// waitSettled waits until the aggregated discovery stops changing and no
// group version in it is stale: the API server installs some groups and
// their discovery in post-start hooks, after it reports ready.
func (s liveServer) waitSettled() {
	s.t.Helper()
	var last []byte
	deadline := time.Now().Add(60 * time.Second)
	for {
		_, b := s.mustGet("/apis", aggregatedContentType)
		if bytes.Equal(b, last) && !bytes.Contains(b, []byte(`"freshness":"Stale"`)) {
			return
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the aggregated discovery did not settle in 60s")
		}
		last = b
		time.Sleep(2 * time.Second)
	}
}

// serverAddress matches the address the server advertises in
// serverAddressByClientCIDRs.
var serverAddress = regexp.MustCompile(`"serverAddress":"[^"]*"`)

// capture fetches every document the snapshot holds from s, with its
// content type.
func (s liveServer) capture() (files map[string][]byte, types map[string]string) {
	s.t.Helper()
	files, types = map[string][]byte{}, map[string]string{}
	get := func(name, path, accept string) []byte {
		ctype, body := s.mustGet(path, accept)
		files[name] = serverAddress.ReplaceAll(body, []byte(`"serverAddress":"`+hostPlaceholder+`"`))
		types[name] = ctype
		return body
	}
	for _, p := range []string{"version", "api", "api/v1"} {
		get(p, "/"+p, jsonContentType)
	}
	for _, p := range []string{"api", "apis"} {
		get(aggregatedPrefix+p, "/"+p, aggregatedContentType)
	}
	var groups metav1.APIGroupList
	if err := json.Unmarshal(get("apis", "/apis", jsonContentType), &groups); err != nil {
		s.t.Fatal(err)
	}
	for _, g := range groups.Groups {
		get("apis/"+g.Name, "/apis/"+g.Name, jsonContentType)
		for _, v := range g.Versions {
			get("apis/"+v.GroupVersion, "/apis/"+v.GroupVersion, jsonContentType)
		}
	}
	var index struct {
		Paths map[string]struct {
			URL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(get("openapi/v3", "/openapi/v3", jsonContentType), &index); err != nil {
		s.t.Fatal(err)
	}
	for p, e := range index.Paths {
		if u, _, _ := strings.Cut(e.URL, "?"); u != "/openapi/v3/"+p {
			s.t.Fatalf("the OpenAPI index maps %s to %s", p, e.URL)
		}
		get("openapi/v3/"+p, e.URL, jsonContentType)
	}
	// The OpenAPI v2 document in protobuf, as client-go asks for it
	// (kubectl validates a List by it), kept as protojson: the archive is
	// text.
	var v2 openapi_v2.Document
	if err := proto.Unmarshal(get(openAPIV2, "/"+openAPIV2, OpenAPIV2Protobuf), &v2); err != nil {
		s.t.Fatal(err)
	}
	js, err := protojson.Marshal(&v2)
	if err != nil {
		s.t.Fatal(err)
	}
	files[openAPIV2] = append(js, '\n')
	return files, types
}

// TestLiveCaptureBuiltin captures the snapshot from the live control plane
// when KWREC_UPDATE_DISCOVERY=1. Otherwise it checks that the embedded
// snapshot still is what the control plane serves, so a control plane
// upgrade that changes discovery fails here instead of in a replay, and
// that Answer negotiates as the server does.
func TestLiveCaptureBuiltin(t *testing.T) {
	s := startLive(t)
	live, types := s.capture()
	if os.Getenv(envUpdate) == "1" {
		comment := fmt.Sprintf("Discovery of kube-apiserver %s as internal/testkit/controlplanetest starts it,\n"+
			"captured by KWREC_UPDATE_DISCOVERY=1 go test ./replay/internal/discovery -run TestLiveCaptureBuiltin.\n"+
			"serverAddressByClientCIDRs addresses are replaced by %s.\n", controlplanetest.KubeVersion, hostPlaceholder)
		b, err := encodeArchive(comment, live, types)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("builtin.kwrec.zst", b, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote builtin.kwrec.zst: %d files, %d bytes", len(live), len(b))
		return
	}
	d, err := Builtin()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range live {
		names = append(names, n)
	}
	sort.Strings(names)
	if diff := cmp.Diff(sortedNames(d.files), names); diff != "" {
		t.Fatalf("the snapshot holds other documents than the server serves (-snapshot +live); run %s=1 go test -run TestLiveCaptureBuiltin:\n%s", envUpdate, diff)
	}
	for _, n := range names {
		if n == "version" {
			continue // its goVersion follows the toolchain that built the server
		}
		if n == openAPIV2 {
			// protojson's spacing varies on purpose from run to run: the
			// document is compared below in the server's protobuf, byte
			// for byte.
			continue
		}
		if !bytes.Equal(bytes.TrimSuffix(d.files[n], []byte("\n")), bytes.TrimSuffix(live[n], []byte("\n"))) {
			t.Errorf("%s differs from the live server's; run %s=1 go test -run TestLiveCaptureBuiltin", n, envUpdate)
		}
		if d.types[n] != types[n] {
			t.Errorf("%s: the snapshot says Content-Type %s, the live server %s", n, d.types[n], types[n])
		}
	}
	t.Run("the OpenAPI v2 document is the server's protobuf, byte for byte", func(t *testing.T) {
		_, ctype, want := s.get("/"+openAPIV2, OpenAPIV2Protobuf)
		status, gotType, got, ok := d.Answer("/"+openAPIV2, OpenAPIV2Protobuf, "")
		if !ok || status != http.StatusOK || gotType != ctype || !bytes.Equal(got, want) {
			t.Errorf("Answer: %v %d %s, %d bytes; the server: %s, %d bytes", ok, status, gotType, len(got), ctype, len(want))
		}
		if _, _, _, ok := d.Answer("/"+openAPIV2, "application/json", ""); ok {
			t.Errorf("Answer answered /openapi/v2 in JSON, which the snapshot does not hold")
		}
	})
	checkNegotiation(t, s, d)
}

// checkNegotiation checks Answer against the live server for what the
// package doc says about negotiation, and pins down where Answer differs
// from the server on purpose, so that a change of the server shows here.
func checkNegotiation(t *testing.T, s liveServer, d *Docs) {
	tests := []struct {
		name, path, accept string
		// serverType, when set, is the server's Content-Type where Answer
		// answers otherwise on purpose: then only the status is compared.
		serverType string
	}{
		{"an unknown core version is the server's 404 Status", "/api/v2", jsonContentType, ""},
		// The server's NotFound for an unknown group is Go's plain-text
		// one; a Status says the same to client-go (an IsNotFound error
		// with the same message) and more to a person.
		{"an unknown group version is a 404, a Status rather than the server's text", "/apis/nonexistent.kwrec.io/v1", jsonContentType, "text/plain; charset=utf-8"},
		{"an unknown OpenAPI document is a 404, a Status rather than the server's empty body", "/openapi/v3/apis/nonexistent.kwrec.io/v1", jsonContentType, ""},
		// The server answers a protobuf Accept in protobuf; the snapshot
		// holds JSON, which clients that send a JSON fallback decode.
		{"a protobuf Accept gets JSON where the server sends protobuf", "/api/v1", "application/vnd.kubernetes.protobuf, application/json", "application/vnd.kubernetes.protobuf"},
		{"client-go's Accept gets the aggregated form", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;profile=nopeer,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json", ""},
		{"kubectl 1.32's Accept gets the aggregated form", "/api", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", ""},
		{"v2beta1 alone gets the legacy form", "/apis", "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json", ""},
		{"a ranked v2 wins over JSON", "/apis", "application/json;q=0.5,application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList;q=0.9", ""},
		{"no Accept gets the legacy form", "/apis", "", ""},
		{"the OpenAPI index is plain text", "/openapi/v3", "application/json, */*", ""},
		{"an OpenAPI document ignores its hash", "/openapi/v3/apis/apps/v1?hash=0", "application/json", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, ctype, body := s.get(tt.path, tt.accept)
			gotStatus, gotType, gotBody, ok := d.Answer(tt.path, tt.accept, "")
			if !ok {
				t.Fatalf("Answer(%s) is not ok", tt.path)
			}
			if tt.serverType != "" || status == http.StatusNotFound {
				if gotStatus != status || (tt.serverType != "" && ctype != tt.serverType) {
					t.Errorf("Answer: %d, the server: %d %s, want %s", gotStatus, status, ctype, tt.serverType)
				}
				if tt.serverType == "" && ctype == jsonContentType && !bytes.Equal(gotBody, body) {
					t.Errorf("Answer's body:\n%s\nthe server's:\n%s", gotBody, body)
				}
				return
			}
			if gotStatus != status || gotType != ctype {
				t.Errorf("Answer: %d %s, the server: %d %s", gotStatus, gotType, status, ctype)
			}
			var got, want any
			if err := json.Unmarshal(gotBody, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(serverAddress.ReplaceAll(body, []byte(`"serverAddress":"localhost"`)), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Answer differs from the server (-server +Answer):\n%s", diff)
			}
		})
	}
	// The aggregated document decodes as the v2 type the clients use.
	var agg apidiscoveryv2.APIGroupDiscoveryList
	if err := json.Unmarshal(d.files[aggregatedPrefix+"apis"], &agg); err != nil || len(agg.Items) == 0 {
		t.Errorf("the aggregated /apis: %d groups, %v", len(agg.Items), err)
	}
}

func sortedNames(m map[string][]byte) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
