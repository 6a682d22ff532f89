package recorder_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
)

// Record a watch whose server sends two events in one chunk, and read the
// cassette back: one frame per event.
func Example() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}}`+"\n"+
			`{"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"8"}}}`+"\n")
	}))
	defer srv.Close()

	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "watch.kwrec.zst")
	opts := recorder.Options{}
	w, err := cassettes.Create(path, recorder.Header("v1.37.2", opts), cassettes.WriterOptions{})
	if err != nil {
		panic(err)
	}
	rec, err := recorder.New(w, opts)
	if err != nil {
		panic(err)
	}

	client := &http.Client{Transport: rec.Wrap(nil)}
	resp, err := client.Get(srv.URL + "/api/v1/namespaces/default/configmaps?watch=true")
	if err != nil {
		panic(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := rec.Close(); err != nil {
		panic(err)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}

	c, err := cassettes.Load(path)
	if err != nil {
		panic(err)
	}
	in := c.Interactions[0]
	fmt.Println(in.Request.Method, in.Response.Status, len(in.Frames), "frames, end:", in.End.Reason)
	for _, f := range in.Frames {
		fmt.Print(string(f.Data))
	}
	// Output:
	// GET 200 2 frames, end: eof
	// {"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}}
	// {"type":"DELETED","object":{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"8"}}}
}
