package cassettes_test

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

// A long recording splits into parts of about MaxSize bytes, read back as
// one: a watch started in the first part goes on in the others.
func ExampleCreate_rotation() {
	dir, _ := os.MkdirTemp("", "rotation")
	defer os.RemoveAll(dir)
	w, _ := cassettes.Create(filepath.Join(dir, "rec.kwrec"), cassettes.Header{RecordedAt: time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)},
		cassettes.WriterOptions{MaxSize: 1000})
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/namespaces/default/configmaps?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	for i := range 40 {
		w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Second, Data: fmt.Appendf(nil, `{"type":"MODIFIED","object":{"metadata":{"name":"a","resourceVersion":"%d"}}}`+"\n", 100+i)})
		w.Flush() // as the flush interval would, once a second
	}
	w.End(id, cassettes.End{At: time.Minute, Reason: cassettes.EndStopped})
	w.Close()

	parts, _ := cassettes.Parts(filepath.Join(dir, "rec-*.kwrec"))
	for _, p := range parts {
		fmt.Println(filepath.Base(p))
	}
	c, err := cassettes.Load(filepath.Join(dir, "rec-0001.kwrec")) // the first part brings the others
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(len(c.Interactions), "interaction,", len(c.Interactions[0].Frames), "frames, ended:", c.Interactions[0].End.Reason)
	// Output:
	// rec-0001.kwrec
	// rec-0002.kwrec
	// rec-0003.kwrec
	// rec-0004.kwrec
	// rec-0005.kwrec
	// 1 interaction, 40 frames, ended: stopped
}
