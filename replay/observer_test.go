package replay

import (
	"bytes"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// TestObserverSeesEveryFrameInOrder adds frames of mixed sizes, reusing
// one buffer for their bytes as an index's Visit does, and checks that the
// observer sees each one, in order, with the bytes it had when added.
func TestObserverSeesEveryFrameInOrder(t *testing.T) {
	small, big := 1<<10, batchBytes+1
	tests := []struct {
		name  string
		sizes []int
	}{
		{"small frames fill batches and are copied", []int{small, small, batchBytes / 2, batchBytes / 2, small}},
		{"a frame larger than a batch is observed in place", []int{big}},
		{"a large frame waits for the small frames queued before it", []int{small, small, big, small}},
		{"large frames one after another", []int{big, 3 * big, big}},
		{"a frame of exactly a batch is copied", []int{batchBytes, small, batchBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			type seen struct {
				ID, I int
				Data  string
			}
			var got, want []seen
			o := newObserver(func(in *index.Interaction, i int, f cassettes.Frame) {
				got = append(got, seen{in.ID, i, string(f.Data)})
			})
			buf := make([]byte, 0, 4*big)
			for k, n := range tt.sizes {
				in := &index.Interaction{ID: 1 + k%2}
				buf = append(buf[:0], bytes.Repeat([]byte{byte('a' + k)}, n)...)
				want = append(want, seen{in.ID, k, string(buf)})
				o.add(in, k, cassettes.Frame{At: time.Duration(k), Data: buf})
				// A frame observed in place is observed, with every
				// frame before it, before add returns: the observer
				// is idle until the next add.
				if n > batchBytes && len(got) != k+1 {
					t.Fatalf("frame %d of %d bytes: add returned with %d of %d frames observed; want all", k, n, len(got), k+1)
				}
				clear(buf) // the Reader's buffer, reused for the next line
			}
			o.wait()
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("observed frames (-want +got):\n%s", d)
			}
		})
	}
}
