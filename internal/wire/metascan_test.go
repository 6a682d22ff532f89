package wire

import (
	"encoding/json"
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
	`{"metadata":{"labels":{"a":"1","a.b":"2","b":""}}}`,
	`{"metadata":{"labels":{"a.b":"2","a":"1"}}}`,
	`{"metadata":{"labels":{"a":"1","a":"0"}}}`,
	`{"metadata":{"labels":{"a":"1"},"labels":{"b":"2"}}}`,
	`{"metadata":{"labels":{"a":"1"},"labels":null,"labels":{"c":"3"}}}`,
	`{"metadata":{"labels":{"a":"1"}},"metadata":{"labels":{"a":"2"}}}`,
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

var listSeeds = []string{
	`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"42"},"items":[{"metadata":{"name":"a"},"data":{"k":"v\"}"}},{"metadata":{"name":"b"}}]}`,
	"{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"7\",\"continue\":\"x\"},\n \"items\" : [ {\"a\":[1,{\"b\":\"\\\\\"}]} , {} ] }\n",
	`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`,
	`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":null}`,
	`{"items":[{"x":"\\\\"}],"kind":"L","kind":"M"}`,
	`{"kind":"L\u0041","items":[]}`,
	`{"items":[1]}`,
	`{"items":[{}]} {}`,
	`{"items":[{"a":"b"}`,
	`{"Items":[{}],"metadata":{"ResourceVersion":"1"}}`,
}

// TestTheListScannerReadsWhatTheDecoderReads: wherever the list scanner
// answers a valid body, it answers what encoding/json does.
func TestTheListScannerReadsWhatTheDecoderReads(t *testing.T) {
	read := 0
	for _, s := range listSeeds {
		if sameList(t, []byte(s)) {
			read++
		}
	}
	if read < 4 {
		t.Errorf("the scanner read %d of the seeds, want the 4 plain lists at least", read)
	}
}

func FuzzListScan(f *testing.F) {
	for _, s := range listSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { sameList(t, raw) })
}

// sameList reports whether the scanner read raw, failing t if it read a
// valid JSON body differently from the decoder.
func sameList(t *testing.T, raw []byte) bool {
	t.Helper()
	fast, ok := listScan(raw)
	if !ok {
		return false
	}
	kind, av, rv, items, err := listDecode(raw)
	if err != nil {
		// The scanner balances the values it skips; the decoder
		// checks them. On a valid body both must agree.
		if json.Valid(raw) {
			t.Errorf("%s: the decoder refused a valid body the scanner read: %v", raw, err)
		}
		return true
	}
	slow := scannedList{kind: kind, apiVersion: av, rv: rv, items: items}
	if d := cmp.Diff(slow, fast, cmp.AllowUnexported(scannedList{})); d != "" {
		t.Errorf("%s: scanner and decoder differ (-decoder +scanner):\n%s", raw, d)
	}
	return true
}
