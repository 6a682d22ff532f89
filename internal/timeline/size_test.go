package timeline

import (
	"testing"
	"unsafe"
)

// A long recording holds one Event per recorded event: its size is most
// of what replay.Open holds for a large cassette.
func TestAnEventStaysSmall(t *testing.T) {
	if n := unsafe.Sizeof(Event{}); n > 80 {
		t.Errorf("an Event is %d bytes; keep it at most 80 (100k events: 8 MB)", n)
	}
}
