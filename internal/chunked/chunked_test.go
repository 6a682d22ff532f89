package chunked_test

import (
	"testing"

	"github.com/kwrec/kwrec/internal/chunked"
)

func TestAListHoldsWhatWasAddedAcrossChunks(t *testing.T) {
	tests := []struct {
		name    string
		n, keep int
	}{
		{"a short list, in its growing first chunk", 10, 10},
		{"exactly one chunk", chunked.Len, chunked.Len},
		{"three chunks and a bit", 3*chunked.Len + 7, 3*chunked.Len + 7},
		{"truncated into its second chunk", 3*chunked.Len + 7, chunked.Len + 1},
		{"truncated to nothing", 100, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l chunked.List[int]
			for i := range tt.n {
				l.Add(i * 3)
			}
			if l.Len() != tt.n {
				t.Fatalf("Len = %d, want %d", l.Len(), tt.n)
			}
			for i := range tt.n {
				if got := *l.At(i); got != i*3 {
					t.Fatalf("At(%d) = %d, want %d", i, got, i*3)
				}
			}
			l.Truncate(tt.keep)
			if l.Len() != tt.keep {
				t.Fatalf("Len after Truncate = %d, want %d", l.Len(), tt.keep)
			}
			l.Add(-1)
			if got := *l.At(tt.keep); got != -1 {
				t.Errorf("the value added after Truncate reads %d, want -1", got)
			}
			for i := range tt.keep {
				if got := *l.At(i); got != i*3 {
					t.Fatalf("At(%d) after Truncate = %d, want %d", i, got, i*3)
				}
			}
		})
	}
}

func TestAFullChunkIsNeverCopied(t *testing.T) {
	var l chunked.List[int]
	for i := range chunked.Len {
		l.Add(i)
	}
	first := l.At(0)
	for i := range 2 * chunked.Len {
		l.Add(i)
	}
	if l.At(0) != first {
		t.Error("the first chunk moved once full: a later Add copied it")
	}
}
