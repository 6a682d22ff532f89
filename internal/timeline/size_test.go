package timeline

import (
	"testing"
	"unsafe"
)

// A long recording holds one Event per recorded event: its size is most
// of what replay.Open holds for a large cassette.
func TestAnEventStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(rec{}); n > 40 {
		t.Errorf("a recorded event is held in %d bytes; keep it at most 40 (1M events: 40 MB)", n)
	}
}
