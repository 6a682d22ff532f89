package cassettes_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

// A recorder appends interactions as they happen; a reader streams them.
func Example() {
	var file bytes.Buffer
	w, _ := cassettes.NewWriter(&file, cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)}, cassettes.WriterOptions{Compress: true})
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/namespaces/default/configmaps?watch=true"})
	w.Response(id, cassettes.Response{Status: 200, Latency: 2 * time.Millisecond})
	w.Frame(id, cassettes.Frame{At: 10 * time.Millisecond, Data: []byte(`{"type":"ADDED","object":{"metadata":{"name":"a"}}}` + "\n")})
	w.End(id, cassettes.End{At: time.Second, Reason: cassettes.EndStopped})
	w.Close()

	c, err := cassettes.Read(&file, "example.kwrec.zst")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, in := range c.Interactions {
		fmt.Println(in.ID, in.Request.Method, in.Response.Status, len(in.Frames), "frame(s), ended:", in.End.Reason)
		fmt.Printf("%s", in.Frames[0].Data)
	}
	// Output:
	// 1 GET 200 1 frame(s), ended: stopped
	// {"type":"ADDED","object":{"metadata":{"name":"a"}}}
}

// An Index holds a cassette's structure and reads frame bytes from the
// file when asked, so a cassette of any size replays in constant memory.
func ExampleOpenIndex() {
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

	x, err := cassettes.OpenIndex(path, cassettes.IndexOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer x.Close()
	in := x.Interactions[0]
	fmt.Println(len(in.Frames), "frames; in memory, the first is at", in.Frames[0].At, "with", len(in.Frames[0].Data), "bytes")
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
	// 3 frames; in memory, the first is at 1s with 0 bytes
	// 2s {"type":"ADDED","object":{"metadata":{"name":"cm2"}}}
	// 3s {"type":"ADDED","object":{"metadata":{"name":"cm3"}}}
}
