package index

import (
	"fmt"
	"math"
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
				if c.wide != nil || cap(c.packed) > frameChunk || k < len(l.c)-1 && len(c.packed) != frameChunk {
					t.Errorf("chunk %d of %d: len %d, cap %d, wide %v", k, len(l.c), len(c.packed), cap(c.packed), c.wide != nil)
				}
			}
		})
	}
}

// TestAFrameListGivesBackEveryFrameItWasGiven round-trips frames whose
// offsets, lengths and line numbers sit at and past what a packed frame
// holds, at chunk boundaries; wide says which chunks fall back to whole
// frames.
func TestAFrameListGivesBackEveryFrameItWasGiven(t *testing.T) {
	const big = int64(1) << 40
	plain := func(i int) Frame {
		return Frame{At: time.Duration(i) * time.Millisecond, off: big + int64(i)*100, n: 99, line: int32(i + 1)}
	}
	for _, tc := range []struct {
		name string
		n    int
		edit func(i int, f *Frame)
		wide []bool // per chunk
	}{
		{"frames far into a file pack", 2*frameChunk + 1, func(int, *Frame) {}, []bool{false, false, false}},
		{"a negative arrival time packs", 5, func(i int, f *Frame) { f.At = -time.Duration(i) }, []bool{false}},
		{"the longest arrival time packs", 5, func(i int, f *Frame) { f.At = math.MaxInt64 - time.Duration(i) }, []bool{false}},
		{"an offset 1 GiB - 1 past the chunk's first packs", frameChunk + 2, func(i int, f *Frame) {
			if i == frameChunk+1 {
				f.off = big + frameChunk*100 + 1<<30 - 1
			}
		}, []bool{false, false}},
		{"an offset 1 GiB past the chunk's first does not", frameChunk + 2, func(i int, f *Frame) {
			if i == frameChunk+1 {
				f.off = big + frameChunk*100 + 1<<30
			}
		}, []bool{false, true}},
		{"a line of 1 MiB - 1 packs", 3, func(i int, f *Frame) { f.n = 1<<20 - 1 }, []bool{false}},
		{"a line of 1 MiB does not, even as the first", frameChunk + 3, func(i int, f *Frame) {
			if i == frameChunk {
				f.n = 1 << 20
			}
		}, []bool{false, true}},
		{"a line number 16383 past the chunk's first packs", 3, func(i int, f *Frame) {
			if i == 2 {
				f.line = 1 + 1<<14 - 1
			}
		}, []bool{false}},
		{"one 16384 past does not", 3, func(i int, f *Frame) {
			if i == 2 {
				f.line = 1 + 1<<14
			}
		}, []bool{true}},
		{"the last line number packs", 3, func(i int, f *Frame) { f.line = math.MaxInt32 - 2 + int32(i) }, []bool{false}},
		{"an unknown line number (0) does not", frameChunk + 4, func(i int, f *Frame) {
			if i == frameChunk+3 {
				f.line = 0
			}
		}, []bool{false, true}},
		{"a first frame of unknown line number does not", 4, func(i int, f *Frame) {
			if i == 0 {
				f.line = 0
			}
		}, []bool{true}},
		{"an offset before the chunk's first does not", 4, func(i int, f *Frame) {
			if i == 3 {
				f.off = big - 1
			}
		}, []bool{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l FrameList
			want := make([]Frame, tc.n)
			for i := range want {
				want[i] = plain(i)
				tc.edit(i, &want[i])
				l.Append(want[i])
			}
			for i, w := range want {
				if f := l.At(i); f != w {
					t.Fatalf("At(%d) = %+v, want %+v", i, f, w)
				}
			}
			if len(l.c) != len(tc.wide) {
				t.Fatalf("%d chunks, want %d", len(l.c), len(tc.wide))
			}
			for k, c := range l.c {
				if (c.wide != nil) != tc.wide[k] {
					t.Errorf("chunk %d: wide %v, want %v", k, c.wide != nil, tc.wide[k])
				}
			}
		})
	}
}
