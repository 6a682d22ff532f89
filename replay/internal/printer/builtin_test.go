package printer_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/replay/internal/printer"
)

// TestBuiltinAgesOnTheReplayClock checks cells that depend on the time:
// each is computed on the clock the printer is given. The live test
// (TestLiveBuiltinPrintsAsTheServer) checks the other cells against the
// server's.
func TestBuiltinAgesOnTheReplayClock(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		name, collection, obj, want string
	}{
		{name: "a service two hours old prints 120m", collection: "/api/v1/services",
			obj:  `{"metadata":{"name":"s","creationTimestamp":"2030-01-02T01:04:05Z"},"spec":{"type":"ClusterIP","clusterIPs":["10.0.0.1"],"ports":[{"port":80,"protocol":"TCP"}],"selector":{"app":"a"}}}`,
			want: `["s","ClusterIP","10.0.0.1","\u003cnone\u003e","80/TCP","120m","app=a"]`},
		{name: "a running job's duration runs to now", collection: "/apis/batch/v1/jobs",
			obj:  `{"metadata":{"name":"j","creationTimestamp":"2030-01-02T03:03:05Z"},"spec":{"completions":2,"template":{"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"startTime":"2030-01-02T03:03:35Z","succeeded":1}}`,
			want: `["j","Running","1/2","30s","60s","c","i","\u003cnone\u003e"]`},
		{name: "a completed job's duration is its run's", collection: "/apis/batch/v1/jobs",
			obj:  `{"metadata":{"name":"j"},"spec":{"template":{"spec":{}}},"status":{"startTime":"2030-01-01T00:00:00Z","completionTime":"2030-01-01T00:00:10Z","succeeded":1,"conditions":[{"type":"Complete","status":"True"}]}}`,
			want: `["j","Complete","1/1","10s","\u003cunknown\u003e","","","\u003cnone\u003e"]`},
		{name: "a pod's restarts say how long ago the last one ended", collection: "/api/v1/pods",
			obj:  `{"metadata":{"name":"p","creationTimestamp":"2030-01-01T03:04:05Z"},"spec":{"containers":[{"name":"c"}]},"status":{"phase":"Running","containerStatuses":[{"name":"c","ready":true,"restartCount":2,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"2030-01-02T03:00:05Z"}}}]}}`,
			want: `["p","1/1","Running","2 (4m ago)","24h","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e"]`},
		{name: "an event's times are ages", collection: "/api/v1/events",
			obj:  `{"metadata":{"name":"e"},"involvedObject":{"kind":"Pod","name":"p"},"type":"Normal","reason":"R","message":" m ","firstTimestamp":"2030-01-02T02:04:05Z","lastTimestamp":"2030-01-02T03:04:00Z","count":3,"source":{"component":"c"}}`,
			want: `["5s","Normal","R","pod/p","","c","m","60m",3,"e"]`},
		{name: "a role prints its creation time, not an age", collection: "/apis/rbac.authorization.k8s.io/v1/roles",
			obj:  `{"metadata":{"name":"r","creationTimestamp":"2030-01-02T03:00:00Z"}}`,
			want: `["r","2030-01-02T03:00:00Z"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := printer.NewBuiltin(tc.collection)
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

// TestBuiltinPrintsABookmarkWithEveryColumn checks that each printer
// prints an empty object (a BOOKMARK's, see table.Index.AdoptPrinter)
// with a cell for each of the server's columns.
func TestBuiltinPrintsABookmarkWithEveryColumn(t *testing.T) {
	for _, c := range printer.BuiltinCollections() {
		t.Run(c, func(t *testing.T) {
			p, err := printer.NewBuiltin(c)
			if err != nil {
				t.Fatal(err)
			}
			var cols []json.RawMessage
			if err := json.Unmarshal(p.Columns(), &cols); err != nil {
				t.Fatal(err)
			}
			b, err := p.Cells([]byte(`{"metadata":{}}`), time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			var cells []any
			if err := json.Unmarshal(b, &cells); err != nil {
				t.Fatal(err)
			}
			if len(cells) != len(cols) {
				t.Errorf("%d cells %s for %d columns", len(cells), b, len(cols))
			}
		})
	}
}

func TestBuiltinRefusesWhatItCannotPrint(t *testing.T) {
	for _, tc := range []struct {
		name, collection, obj string
		want                  error
		wantMsg               string
	}{
		{name: "a resource without a ported printer", collection: "/apis/storage.k8s.io/v1/storageclasses",
			want: printer.ErrNoBuiltin, wantMsg: "/apis/storage.k8s.io/v1/storageclasses: no printer of this built-in resource is ported"},
		{name: "an HPA metric of type Pods without its pods field", collection: "/apis/autoscaling/v2/horizontalpodautoscalers",
			obj: `{"metadata":{"name":"h"},"spec":{"metrics":[{"type":"Pods"}]}}`, want: printer.ErrUnprintable,
			wantMsg: "the object cannot be printed: runtime error: invalid memory address or nil pointer dereference"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := printer.NewBuiltin(tc.collection)
			if err == nil {
				_, err = p.Cells([]byte(tc.obj), time.Time{})
			}
			if !errors.Is(err, tc.want) || err.Error() != tc.wantMsg {
				t.Errorf("error %v, want %q (%v)", err, tc.wantMsg, tc.want)
			}
		})
	}
}
