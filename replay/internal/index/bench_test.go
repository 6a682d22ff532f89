package index_test

import (
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/internal/testkit/podgen"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// BenchmarkRead reads a 10k-event watch back through an Index: all
// frames in order, and single frames at random places (the compressed form
// decodes from the seek comment before the frame, at most a segment).
func BenchmarkRead(b *testing.B) {
	const n = 10000
	in := &cassettes.Interaction{ID: 1, Request: cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true"},
		Response: &cassettes.Response{Status: 200}, End: &cassettes.End{At: n * time.Millisecond, Reason: cassettes.EndStopped}}
	var raw int64
	for i := 0; i < n; i++ {
		ev := podgen.WatchEventJSON(i % 5000) // as cassettes' BenchmarkWrite
		raw += int64(len(ev))
		in.Frames = append(in.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: ev})
	}
	c := &cassettes.Cassette{Interactions: []*cassettes.Interaction{in}}
	for _, name := range []string{"w.kwrec", "w.kwrec.zst"} {
		path := filepath.Join(b.TempDir(), name)
		cassettetest.WriteInterleaved(b, path, c, cassettes.WriterOptions{})
		x, err := index.Open(path, index.Options{})
		if err != nil {
			b.Fatal(err)
		}
		in := x.Interactions[0]
		b.Run(fmt.Sprintf("events=10k/zstd=%v/all", strings.HasSuffix(name, ".zst")), func(b *testing.B) {
			b.SetBytes(raw)
			for i := 0; i < b.N; i++ {
				fr, err := x.Frames(in, 0)
				if err != nil {
					b.Fatal(err)
				}
				for {
					if _, err := fr.Next(); err == io.EOF {
						break
					} else if err != nil {
						b.Fatal(err)
					}
				}
				fr.Close()
			}
		})
		b.Run(fmt.Sprintf("events=10k/zstd=%v/one", strings.HasSuffix(name, ".zst")), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				fr, err := x.Frames(in, i*7919%in.Frames.Len())
				if err != nil {
					b.Fatal(err)
				}
				if _, err := fr.Next(); err != nil {
					b.Fatal(err)
				}
				fr.Close()
			}
		})
		x.Close()
	}
}
