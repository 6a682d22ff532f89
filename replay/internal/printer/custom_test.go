package printer_test

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/replay/internal/printer"
)

const crd = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"widgets.example.com"},
 "spec":{"group":"example.com","names":{"plural":"widgets","kind":"Widget"},"scope":"Namespaced",
  "versions":[{"name":"v1","served":true,"storage":true,"additionalPrinterColumns":[
   {"name":"Size","type":"integer","jsonPath":".spec.size"},
   {"name":"Since","type":"date","jsonPath":".status.since"},
   {"name":"Age","type":"date","jsonPath":".metadata.creationTimestamp"}]},
   {"name":"v2","served":true,"storage":false}]}}`

// TestCustomAgesOnTheReplayClock checks what kwrec adds to the server's
// convertor: date columns aged on the clock it is given (the replay's),
// not the wall clock, each cell otherwise the server's.
func TestCustomAgesOnTheReplayClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, version, obj, want string
	}{
		{name: "a timestamp two hours old prints 120m, as the server words it", version: "v1",
			obj:  `{"metadata":{"name":"a","creationTimestamp":"2030-01-02T01:04:05Z"},"spec":{"size":3},"status":{"since":"2030-01-01T03:04:05Z"}}`,
			want: `["a",3,"24h","120m"]`},
		{name: "a missing timestamp prints null", version: "v1",
			obj:  `{"metadata":{"name":"b","creationTimestamp":"2030-01-02T03:04:00Z"}}`,
			want: `["b",null,null,"5s"]`},
		{name: "an unreadable timestamp prints <invalid>", version: "v1",
			obj:  `{"metadata":{"name":"c"},"status":{"since":"yesterday"}}`,
			want: `["c",null,"\u003cinvalid\u003e",null]`},
		{name: "a version without columns prints name and age", version: "v2",
			obj:  `{"metadata":{"name":"d","creationTimestamp":"2030-01-02T03:03:05Z"}}`,
			want: `["d","60s"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := printer.NewCustom([]byte(crd), tc.version)
			if err != nil {
				t.Fatal(err)
			}
			got, err := p.Cells([]byte(tc.obj), now)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, string(got)); d != "" {
				t.Errorf("cells (-want +got):\n%s", d)
			}
		})
	}
}

func TestNewCustomRefusesAVersionTheDefinitionLacks(t *testing.T) {
	_, err := printer.NewCustom([]byte(crd), "v3")
	if got, want := err.Error(), "widgets.example.com has no version v3"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}
