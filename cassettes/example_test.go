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

// A recorder killed mid-way leaves interactions open and maybe a cut last
// line; Repair keeps what is readable and ends what was open.
func ExampleRepair() {
	dir, _ := os.MkdirTemp("", "repair")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "crash.kwrec")
	os.WriteFile(path, []byte(`{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[]}
{"request":1,"at":"0s","method":"GET","url":"/api/v1/namespaces/default/configmaps?watch=true"}
{"response":1,"latency":"2ms","status":200}
{"frame":1,"at":"10ms","json":{"type":"ADDED","object":{"metadata":{"name":"a"}}}}
{"frame":1,"at":"2`), 0o644)

	kept, ended, err := cassettes.Repair(path)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("kept", kept, "lines, ended", ended)
	c, _ := cassettes.Load(path)
	fmt.Println(len(c.Interactions[0].Frames), "frame, ended:", c.Interactions[0].End.Reason, "at", c.Interactions[0].End.At)
	// Output:
	// kept 3 lines, ended [1]
	// 1 frame, ended: stopped at 10ms
}
