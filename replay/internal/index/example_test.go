package index_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// An Index holds a cassette's structure and reads frame bytes from the
// file when asked, so a cassette of any size replays in constant memory.
func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "kwrec-example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "watch.kwrec.zst")
	w, _ := cassettes.Create(path, cassettes.Header{}, cassettes.WriterOptions{})
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/namespaces/default/configmaps?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i := 1; i <= 3; i++ {
		w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Second, Data: fmt.Appendf(nil, `{"type":"ADDED","object":{"metadata":{"name":"cm%d"}}}`+"\n", i)})
	}
	w.End(id, cassettes.End{At: 4 * time.Second, Reason: cassettes.EndStopped})
	w.Close()

	x, err := index.Open(path, index.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer x.Close()
	in := x.Interactions[0]
	fmt.Println(in.Frames.Len(), "frames; in memory, the first is at", in.Frames.At(0).At)
	fr, _ := x.Frames(in, 1) // from the second frame on
	defer fr.Close()
	for {
		f, err := fr.Next()
		if err != nil { // io.EOF after the last
			break
		}
		fmt.Printf("%v %s", f.At, f.Data)
	}
	// Output:
	// 3 frames; in memory, the first is at 1s
	// 2s {"type":"ADDED","object":{"metadata":{"name":"cm2"}}}
	// 3s {"type":"ADDED","object":{"metadata":{"name":"cm3"}}}
}
