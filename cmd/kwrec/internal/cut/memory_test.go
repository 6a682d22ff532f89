package cut_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// writeVersions writes a recording of n ConfigMaps, each of about 2 KB,
// listed, then changed m times each in one watch, a millisecond apart.
func writeVersions(t *testing.T, n, m int) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), fmt.Sprintf("v%d.kwrec", m))
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w, err := cassettes.NewWriter(f, cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)}, cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pad := strings.Repeat("x", 2000)
	obj := func(i, rv int) string {
		return fmt.Sprintf(`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"default","resourceVersion":"%d"},"data":{"v":"%d-%s"}}`, i, rv, rv, pad)
	}
	json := http.Header{"Content-Type": {"application/json"}}
	items := make([]string, n)
	for i := range n {
		items[i] = obj(i, 100)
	}
	list := `{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"100"},"items":[` + strings.Join(items, ",") + "]}\n"
	must := func(err error) {
		if err != nil {
			t.Fatal(err)
		}
	}
	must(w.RequestAs(1, 0, cassettes.Request{Method: http.MethodGet, URL: "/api/v1/namespaces/default/configmaps"}))
	must(w.Response(1, cassettes.Response{Status: http.StatusOK, Header: json}))
	must(w.Frame(1, cassettes.Frame{Data: []byte(list)}))
	must(w.End(1, cassettes.End{Reason: cassettes.EndEOF}))
	must(w.RequestAs(2, time.Millisecond, cassettes.Request{Method: http.MethodGet, URL: "/api/v1/namespaces/default/configmaps?resourceVersion=100&watch=true"}))
	must(w.Response(2, cassettes.Response{Status: http.StatusOK, Header: json}))
	for k := range n * m {
		rv := 101 + k
		ev := `{"type":"MODIFIED","object":` + obj(k%n, rv) + "}\n"
		must(w.Frame(2, cassettes.Frame{At: time.Duration(k) * time.Millisecond, Data: []byte(ev)}))
	}
	must(w.End(2, cassettes.End{At: time.Duration(n*m) * time.Millisecond, Reason: cassettes.EndEOF}))
	must(w.Close())
	return path
}

// heldBy returns the bytes of heap the cut of the recording at path from
// its last tenth to its end holds, read and ready to write.
func heldBy(t *testing.T, path string, from string) uint64 {
	t.Helper()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	rec, err := cut.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	res, err := cut.Cut(rec, point(t, from), point(t, ""))
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(rec)
	runtime.KeepAlive(res)
	return after.HeapAlloc - min(before.HeapAlloc, after.HeapAlloc)
}

// TestCutHoldsTheStateNotTheVersions proves the bound the package doc
// states: a cut holds its state's objects' bytes and about 60 bytes a
// line, not the recording's bytes. 20 objects of 2 KB changed 1000 times
// each are 40 MB of frames; a cut that held them would hold 100 times
// what one of the same objects changed 10 times does.
func TestCutHoldsTheStateNotTheVersions(t *testing.T) {
	const n = 20
	few := heldBy(t, writeVersions(t, n, 10), fmt.Sprintf("%dms", n*10*9/10))
	many := heldBy(t, writeVersions(t, n, 1000), fmt.Sprintf("%dms", n*1000*9/10))
	// The 19,800 lines more cost about 60 bytes each (1.2 MB), the
	// frames 40 MB: 8 MB more tells the one from the other.
	if many > few+8<<20 {
		t.Errorf("a cut of %d objects changed 1000 times each holds %d bytes, changed 10 times %d: more than 8 MB more, so it holds the versions, not the state", n, many, few)
	}
	t.Logf("held: %d bytes for 10 versions, %d for 1000", few, many)
}
