package chunked

import (
	"fmt"
	"testing"
)

func TestAListNeverHoldsMoreThanItsChunks(t *testing.T) {
	for _, n := range []int{1, 5, Len, Len + 1, 3*Len + 9} {
		t.Run(fmt.Sprintf("%d values", n), func(t *testing.T) {
			var l List[uint32]
			for i := range n {
				l.Add(uint32(i))
			}
			for k, c := range l.c {
				if cap(c) > Len || k < len(l.c)-1 && len(c) != Len {
					t.Errorf("chunk %d of %d: len %d, cap %d", k, len(l.c), len(c), cap(c))
				}
			}
		})
	}
}
