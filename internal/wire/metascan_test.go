package wire

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

var metaSeeds = []string{
	`{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"ns","uid":"u","resourceVersion":"12","creationTimestamp":"2026-12-01T00:00:00Z","labels":{"b":"2","a":"1"},"annotations":{"x":"y"}},"data":{"k":"v"}}`,
	`{"metadata":{"name":"a","resourceVersion":"7","managedFields":[{"manager":"m","fieldsV1":{"f:data":{".":{},"f:k":{}}}}]},"spec":{"x":[1,2.5e3,true,null,"}"]}}`,
	`{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"9","annotations":{"k8s.io/initial-events-end":"true"}}}`,
	`{"metadata":{}, "kind" : "X" , "apiVersion":"v1"}`,
	`{"metadata":{"name":"e\"scaped","labels":null}}`,
	`{"metadata":{"labels":{"a":"b\u00e9"}}}`,
	`{"spec":{"a":"\\"},"metadata":{"name":"n"}}`,
	`{"kind":1}`,
	`[]`,
	`{"metadata":{"name":"a"`,
}

// TestTheScannerReadsWhatTheDecoderReads: wherever the fast path answers,
// it answers what encoding/json does.
func TestTheScannerReadsWhatTheDecoderReads(t *testing.T) {
	for _, s := range metaSeeds {
		same(t, []byte(s))
	}
}

func FuzzMetaScan(f *testing.F) {
	for _, s := range metaSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { same(t, raw) })
}

func same(t *testing.T, raw []byte) {
	t.Helper()
	fast, ok := metaScan(raw)
	if !ok {
		return
	}
	slow, err := metaDecode(raw)
	if err != nil {
		// The decoder reads the values it skips; the scanner only
		// balances them. Both must then agree on the fields read.
		return
	}
	if d := cmp.Diff(slow, fast); d != "" {
		t.Errorf("%s: scanner and decoder differ (-decoder +scanner):\n%s", raw, d)
	}
}
