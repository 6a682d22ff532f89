package podgen_test

import (
	"encoding/json"
	"testing"

	"github.com/kwrec/kwrec/internal/testkit/podgen"
)

func TestGeneratedEventsAreRealisticSizedValidJSON(t *testing.T) {
	for _, i := range []int{0, 1, 4999, 123456} {
		ev := podgen.WatchEventJSON(i)
		if n := len(ev); n < 3000 || n > 7500 {
			t.Errorf("event %d is %d bytes, want 3-7.5 KB", i, n)
		} else {
			t.Logf("event %d: %d bytes", i, n)
		}
		if !json.Valid(ev) || ev[len(ev)-1] != '\n' {
			t.Errorf("event %d is not one JSON line", i)
		}
	}
}
