package main

import (
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestServerWarningsArePrintedOnceEach(t *testing.T) {
	var b bytes.Buffer
	w := &serverWarnings{w: &b}
	for _, text := range []string{"v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice", "unknown field \"x\""} {
		w.HandleWarningHeader(299, "-", text)
	}
	w.HandleWarningHeader(199, "-", "miscellaneous, not a Kubernetes warning")
	want := "kwrec: warning: the server warns: v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice\n" +
		"kwrec: warning: the server warns: unknown field \"x\"\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("stderr (-want +got):\n%s", diff)
	}
}
