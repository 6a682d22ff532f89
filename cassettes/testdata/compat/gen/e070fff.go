//go:build ignore

// Generator of the compatibility cassettes written by kwrec e070fff (the
// foundation): run inside a checkout of that commit, not with this
// module (see ../README.md):
//
//	git worktree add --detach /tmp/wt-old-e070fff e070fff
//	mkdir /tmp/wt-old-e070fff/compatgen
//	cp e070fff.go /tmp/wt-old-e070fff/compatgen/
//	cd /tmp/wt-old-e070fff && go run ./compatgen/e070fff.go DIR
//
// DIR is cassettes/testdata/compat; the committed list-then-watch.kwrec
// and protobuf-watch.kwrec are read from DIR/.. . It writes the two
// generated sources, pods.kwrec (a list of Pods and a watch of 144
// changes to them) and binary.kwrec (a binary watch whose frames hold
// every byte value), in the text form, and each of the four recordings
// in the compressed form of that version (one zstd stream, no seek
// comments, binary frames in base64).
package main

import (
	"encoding/binary"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

const (
	nPods     = 12
	nVersions = 13 // the list's, then 12 changes of each Pod
)

func main() {
	dir := os.Args[1]
	pods := podsCassette()
	bin := binaryCassette()
	write(filepath.Join(dir, "pods.kwrec"), pods)
	write(filepath.Join(dir, "binary.kwrec"), bin)
	write(filepath.Join(dir, "e070fff-pods.kwrec.zst"), pods)
	write(filepath.Join(dir, "e070fff-binary.kwrec.zst"), bin)
	for _, name := range []string{"list-then-watch", "protobuf-watch"} {
		c, err := cassettes.Load(filepath.Join(dir, "..", name+".kwrec"))
		if err != nil {
			log.Fatal(err)
		}
		write(filepath.Join(dir, "e070fff-"+name+".kwrec.zst"), c)
	}
}

// write writes c as a recorder does: each interaction's lines in turn,
// flushed every 10 frames; compressed for a name ending in ".zst".
func write(path string, c *cassettes.Cassette) {
	w, err := cassettes.Create(path, c.Header, cassettes.WriterOptions{FlushInterval: time.Hour})
	if err != nil {
		log.Fatal(err)
	}
	for _, in := range c.Interactions {
		id, err := w.Request(in.At, in.Request)
		if err != nil {
			log.Fatal(err)
		}
		if in.Response != nil {
			if err := w.Response(id, *in.Response); err != nil {
				log.Fatal(err)
			}
		}
		for i, f := range in.Frames {
			if err := w.Frame(id, f); err != nil {
				log.Fatal(err)
			}
			if i%10 == 9 {
				if err := w.Flush(); err != nil {
					log.Fatal(err)
				}
			}
		}
		if in.End != nil {
			if err := w.End(id, *in.End); err != nil {
				log.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		log.Fatal(err)
	}
}

func hdr(accept string) http.Header { return http.Header{"Accept": {accept}} }

// pod is Pod i at its version v, as the API server writes it.
func pod(i, v, rv int) string {
	ready := v%3 != 1
	return fmt.Sprintf(`{"metadata":{"name":"web-%02d","namespace":"default","uid":"6f1c%04x-3b2a-4c5d-9e8f-0a1b2c3d4e5f","resourceVersion":"%d","generation":%d,"labels":{"app":"web","tier":"t%d"},"annotations":{"kwrec.test/version":"%d"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.%d"}],"nodeName":"node-%d"},"status":{"phase":"Running","containerStatuses":[{"name":"app","ready":%t,"restartCount":%d}]}}`,
		i, i, rv, 1+v/4, i%3, v, 9+v/4, i%4, ready, v/3)
}

func podsCassette() *cassettes.Cassette {
	const api = "https://127.0.0.1:6443/api/v1/namespaces/default/pods"
	json := http.Header{"Content-Type": {"application/json"}}
	var items []string
	rv := 1000
	for i := range nPods {
		rv++
		items = append(items, pod(i, 0, rv))
	}
	list := fmt.Sprintf(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[%s]}`, rv, strings.Join(items, ","))
	from := rv
	var frames []cassettes.Frame
	at := time.Duration(0)
	for v := 1; v < nVersions; v++ {
		for i := range nPods {
			rv++
			at += 137 * time.Millisecond
			ev := fmt.Sprintf(`{"type":"MODIFIED","object":{"kind":"Pod","apiVersion":"v1",%s}`, strings.TrimPrefix(pod(i, v, rv), "{"))
			frames = append(frames, cassettes.Frame{At: at, Data: []byte(ev + "\n")})
		}
	}
	bookmark := fmt.Sprintf(`{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}}}`, rv)
	frames = append(frames, cassettes.Frame{At: at + time.Second, Data: []byte(bookmark + "\n")})
	rv++
	deleted := fmt.Sprintf(`{"type":"DELETED","object":{"kind":"Pod","apiVersion":"v1",%s}`, strings.TrimPrefix(pod(0, nVersions, rv), "{"))
	frames = append(frames, cassettes.Frame{At: at + 2*time.Second, Data: []byte(deleted + "\n")})
	return &cassettes.Cassette{
		Header: cassettes.Header{Version: 1, RecordedAt: time.Date(2026, 12, 1, 8, 0, 0, 0, time.UTC), Server: "v1.37.2",
			Redactions: []string{"header:Authorization"}, Labels: map[string]string{"scenario": "compat"}},
		Interactions: []*cassettes.Interaction{{
			ID: 1, Request: cassettes.Request{Method: "GET", URL: api + "?limit=500", Header: hdr("application/json")},
			Response: &cassettes.Response{Status: 200, Header: json, Latency: 2 * time.Millisecond},
			Frames:   []cassettes.Frame{{Data: []byte(list + "\n")}},
			End:      &cassettes.End{At: 3 * time.Millisecond, Reason: cassettes.EndEOF},
		}, {
			ID: 2, At: 5 * time.Millisecond,
			Request:  cassettes.Request{Method: "GET", URL: fmt.Sprintf("%s?allowWatchBookmarks=true&resourceVersion=%d&timeoutSeconds=600&watch=true", api, from), Header: hdr("application/json")},
			Response: &cassettes.Response{Status: 200, Header: json, Latency: time.Millisecond},
			Frames:   frames,
			End:      &cassettes.End{At: at + 3*time.Second, Reason: cassettes.EndStopped},
		}},
	}
}

// binaryCassette is a watch of 32 length-prefixed binary frames which
// between them hold every byte value 0x00-0xff.
func binaryCassette() *cassettes.Cassette {
	const ct = "application/vnd.kubernetes.protobuf;stream=watch"
	var frames []cassettes.Frame
	for i := range 32 {
		body := []byte("k8s\x00")
		for b := range 8 {
			body = append(body, byte(i*8+b))
		}
		body = append(body, fmt.Sprintf("\n\x03Pod\x12\x06web-%02d\"quote\\", i)...)
		f := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		frames = append(frames, cassettes.Frame{At: time.Duration(i) * 250 * time.Millisecond, Data: append(f, body...)})
	}
	return &cassettes.Cassette{
		Header: cassettes.Header{Version: 1, RecordedAt: time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC), Redactions: []string{}},
		Interactions: []*cassettes.Interaction{{
			ID: 1, Request: cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/namespaces/default/pods?watch=true", Header: hdr(ct)},
			Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {ct}}, Latency: time.Millisecond},
			Frames:   frames,
			End:      &cassettes.End{At: 10 * time.Second, Reason: cassettes.EndTimeout},
		}},
	}
}
