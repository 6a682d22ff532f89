package benchmarks_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"testing"

	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

func TestGenerateIsDeterministicRealisticAndFramedAsTheServerSendsIt(t *testing.T) {
	js := benchmarks.Generate(benchmarks.JSON, 50, 200)
	if again := benchmarks.Generate(benchmarks.JSON, 50, 200); !bytes.Equal(js.Watch, again.Watch) || !bytes.Equal(js.List, again.List) {
		t.Fatal("two generations of the same stream differ")
	}
	if len(js.Events) != 200 || js.Items != 50 {
		t.Fatalf("%d events, %d items; want 200, 50", len(js.Events), js.Items)
	}
	var lastRV int64
	types := map[string]int{}
	for i, ev := range js.Events {
		var line struct {
			Type   string
			Object struct {
				Kind     string
				Metadata struct {
					ResourceVersion string
					UID             string
				}
			}
		}
		if err := json.Unmarshal(ev, &line); err != nil || ev[len(ev)-1] != '\n' {
			t.Fatalf("event %d is not a JSON line: %v", i, err)
		}
		var rv int64
		if err := json.Unmarshal([]byte(line.Object.Metadata.ResourceVersion), &rv); err != nil || rv <= lastRV || line.Object.Kind != "Pod" {
			t.Fatalf("event %d: resourceVersion %q after %d, kind %q", i, line.Object.Metadata.ResourceVersion, lastRV, line.Object.Kind)
		}
		lastRV = rv
		types[line.Type]++
		if n := len(ev); n < 5000 || n > 8000 {
			t.Errorf("event %d is %d bytes, want about 6.6 KB", i, n)
		}
	}
	if types["MODIFIED"] == 0 || types["DELETED"] == 0 || types["ADDED"] == 0 {
		t.Errorf("event types %v, want MODIFIED, DELETED and ADDED", types)
	}
	wl := js.WatchList()
	if !bytes.HasSuffix(wl, js.Watch) || !bytes.Contains(wl, []byte(`"k8s.io/initial-events-end":"true"`)) {
		t.Error("the WatchList body is not initial events, the initial-events-end bookmark, then the watch")
	}

	pb := benchmarks.Generate(benchmarks.Protobuf, 50, 200)
	for i, ev := range pb.Events {
		if n := binary.BigEndian.Uint32(ev); int(n) != len(ev)-4 {
			t.Fatalf("protobuf event %d: length prefix %d, frame %d bytes", i, n, len(ev)-4)
		}
	}
	if !bytes.HasPrefix(pb.List, []byte("k8s\x00")) {
		t.Error("the protobuf list lacks the k8s\\x00 magic")
	}
}
