package cassettes_test

import (
	"bytes"
	"fmt"
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
