package index

import (
	"fmt"
	"testing"
	"time"
)

func TestAFrameListHoldsEveryFrameInChunksOfAtMost4096(t *testing.T) {
	for _, n := range []int{0, 1, 4, 5, 4095, 4096, 4097, 3*4096 + 7} {
		t.Run(fmt.Sprintf("%d frames", n), func(t *testing.T) {
			var l FrameList
			for i := range n {
				l.Append(Frame{At: time.Duration(i), off: int64(i) * 10, n: int32(i % 7), line: int32(i + 2)})
			}
			if l.Len() != n {
				t.Fatalf("Len = %d, want %d", l.Len(), n)
			}
			for i := range n {
				if f := l.At(i); f.At != time.Duration(i) || f.off != int64(i)*10 || f.line != int32(i+2) {
					t.Fatalf("At(%d) = %+v", i, f)
				}
			}
			if s := l.Slice(); len(s) != n {
				t.Errorf("Slice has %d frames, want %d", len(s), n)
			}
			for k, c := range l.c {
				if cap(c) > frameChunk || k < len(l.c)-1 && len(c) != frameChunk {
					t.Errorf("chunk %d of %d: len %d, cap %d", k, len(l.c), len(c), cap(c))
				}
			}
		})
	}
}
