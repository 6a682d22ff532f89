package printer

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// envUpdateColumns names the variable that, set to 1, makes
// TestLiveColumns rewrite columns.txt from the live control plane.
const envUpdateColumns = "KWREC_UPDATE_COLUMNS"

// kubectlTableAccept is the Accept header kubectl get sends.
const kubectlTableAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

// liveServer asks a live API server for Tables and objects.
type liveServer struct {
	t    *testing.T
	base string
	hc   *http.Client
}

func newLiveServer(t *testing.T, cp *controlplanetest.ControlPlane) liveServer {
	hc, err := rest.HTTPClientFor(cp.Config)
	if err != nil {
		t.Fatal(err)
	}
	return liveServer{t: t, base: strings.TrimSuffix(cp.Config.Host, "/"), hc: hc}
}

// get returns the body of a GET of path with accept, failing the test
// unless the server answers 200.
func (s liveServer) get(path, accept string) []byte {
	s.t.Helper()
	status, body := s.fetch(path, accept)
	if status != http.StatusOK {
		s.t.Fatalf("GET %s (Accept %s): %d: %s", path, accept, status, body)
	}
	return body
}

// try returns the status and body of a GET of path in JSON.
func (s liveServer) try(path string) (int, []byte) {
	s.t.Helper()
	return s.fetch(path, "application/json")
}

func (s liveServer) fetch(path, accept string) (int, []byte) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), http.MethodGet, s.base+path, nil)
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Accept", accept)
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, body
}

// columns returns the columnDefinitions of the Table the server sends
// for collection, as it spells them.
func (s liveServer) columns(collection string) []byte {
	s.t.Helper()
	var tab struct {
		Kind              string
		ColumnDefinitions json.RawMessage
	}
	if err := json.Unmarshal(s.get(collection, kubectlTableAccept), &tab); err != nil {
		s.t.Fatalf("GET %s: %v", collection, err)
	}
	if tab.Kind != "Table" || len(tab.ColumnDefinitions) == 0 {
		s.t.Fatalf("GET %s: a %s without column definitions, want a Table", collection, tab.Kind)
	}
	return tab.ColumnDefinitions
}

// columnsFile makes columns.txt's text from the server's columns by
// collection.
func columnsFile(live map[string][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# The column definitions kube-apiserver %s sends in a Table of each resource\n", controlplanetest.KubeVersion)
	b.WriteString("# whose printer is ported, captured by\n")
	fmt.Fprintf(&b, "# %s=1 go test ./replay/internal/printer -run TestLiveColumns.\n", envUpdateColumns)
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range live {
			if !yield(p) {
				return
			}
		}
	})
	for _, p := range paths {
		fmt.Fprintf(&b, "%s\t%s\n", p, live[p])
	}
	return b.String()
}

// TestLiveColumns captures columns.txt from the live control plane when
// KWREC_UPDATE_COLUMNS=1. Otherwise it checks that the embedded column
// definitions are, byte for byte, the ones the control plane sends for
// every resource with a ported printer, so that a control plane upgrade
// that changes them fails here rather than in kubectl's output.
func TestLiveColumns(t *testing.T) {
	cp := controlplanetest.Start(t)
	s := newLiveServer(t, cp)
	live := map[string][]byte{}
	for p := range builtins {
		live[p] = s.columns(p)
	}
	want := columnsFile(live)
	if os.Getenv(envUpdateColumns) == "1" {
		if err := os.WriteFile("columns.txt", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("wrote columns.txt: %d resources", len(live))
		return
	}
	if d := cmp.Diff(want, columnsJSON); d != "" {
		t.Errorf("columns.txt is not what the server sends (-live +embedded); run %s=1 go test ./replay/internal/printer -run TestLiveColumns:\n%s", envUpdateColumns, d)
	}
}
