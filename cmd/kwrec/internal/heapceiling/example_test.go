package heapceiling_test

import (
	"fmt"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/heapceiling"
)

func Example() {
	o := heapceiling.Options{Floor: 96 << 20, Margin: 0.3, Overhead: 8 << 20}
	if !heapceiling.Chosen() {
		c := heapceiling.Start(o)
		defer c.Stop()
	}
	for _, live := range []int64{10 << 20, 200 << 20} {
		fmt.Printf("a live heap of %d MiB: a limit of %d MiB\n", live>>20, o.Limit(live)>>20)
	}
	// Output:
	// a live heap of 10 MiB: a limit of 96 MiB
	// a live heap of 200 MiB: a limit of 268 MiB
}
