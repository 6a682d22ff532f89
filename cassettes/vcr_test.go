package cassettes_test

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

func TestImportVCRReadsAGoVCRCassette(t *testing.T) {
	f, err := os.Open("testdata/govcr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := cassettes.ImportVCR(f, "govcr.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Interactions) != 1 {
		t.Fatalf("%d interactions, want 1", len(c.Interactions))
	}
	in := c.Interactions[0]
	if in.Request.URL != "https://127.0.0.1:6443/api/v1/namespaces/default/configmaps/a" || in.Response.Status != 200 || in.Response.Latency != 3*time.Millisecond {
		t.Errorf("interaction = %+v %+v", in.Request, in.Response)
	}
	if !strings.HasPrefix(string(in.Body()), `{"kind":"ConfigMap"`) {
		t.Errorf("body = %q", in.Body())
	}
}

func TestExportVCRRefusesStreamsUnlessToldToSkipThem(t *testing.T) {
	c := cassettetest.Load(t, "testdata/list-then-watch.kwrec")
	var out bytes.Buffer
	_, err := cassettes.ExportVCR(&out, c, cassettes.ExportOptions{})
	want := "interaction 2 (GET https://127.0.0.1:6443/api/v1/namespaces/default/configmaps?allowWatchBookmarks=true&resourceVersion=200&timeoutSeconds=412&watch=true) is a stream or has no complete response, which go-vcr cannot hold: export would lose data; pass SkipStreams (kwrec convert --skip-streams) to leave it out"
	if !errors.Is(err, cassettes.ErrLossyExport) || err.Error() != want {
		t.Fatalf("error = %v, want %s", err, want)
	}
	rep, err := cassettes.ExportVCR(&out, c, cassettes.ExportOptions{SkipStreams: true})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{2}, rep.Skipped); diff != "" {
		t.Errorf("skipped: %s", diff)
	}
	back, err := cassettes.ImportVCR(&out, "export.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.Interactions) != 1 {
		t.Fatalf("%d interactions back, want 1", len(back.Interactions))
	}
	orig := c.Interactions[0]
	got := back.Interactions[0]
	if diff := cmp.Diff(orig.Request, got.Request, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("request changed in go-vcr round trip: %s", diff)
	}
	if !bytes.Equal(orig.Body(), got.Body()) || orig.Response.Status != got.Response.Status {
		t.Errorf("response changed in go-vcr round trip")
	}
}
