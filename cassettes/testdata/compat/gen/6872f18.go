//go:build ignore

// Generator of the compatibility cassettes written by kwrec 6872f18: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-6872f18 6872f18
//	mkdir /tmp/wt-old-6872f18/compatgen
//	cp 6872f18.go /tmp/wt-old-6872f18/compatgen/
//	cd /tmp/wt-old-6872f18 && go run ./compatgen/6872f18.go DIR
//
// DIR is cassettes/testdata/compat, which holds the sources pods.kwrec
// and binary.kwrec (written by e070fff.go), and the
// committed ../protobuf-watch.kwrec. It writes them in that version's
// compressed form, whose binary frames are in the "bytes" form, and
// pods.kwrec also as its Compact form (kwrec compact then: the better
// level, a window as large as a segment).
package main

import (
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
)

func main() {
	dir := os.Args[1]
	load := func(name string) *cassettes.Cassette {
		c, err := cassettes.Load(filepath.Join(dir, name))
		if err != nil {
			log.Fatal(err)
		}
		return c
	}
	write(filepath.Join(dir, "6872f18-binary.kwrec.zst"), load("binary.kwrec"), cassettes.WriterOptions{SegmentSize: 1 << 10})
	write(filepath.Join(dir, "6872f18-protobuf-watch.kwrec.zst"), load("../protobuf-watch.kwrec"), cassettes.WriterOptions{})
	write(filepath.Join(dir, "6872f18-pods-compact.kwrec.zst"), load("pods.kwrec"), cassettes.WriterOptions{Compact: true})
}

// write writes c as a recorder does: each interaction's lines in turn,
// flushed every 10 frames; compressed for a name ending in ".zst".
func write(path string, c *cassettes.Cassette, opts cassettes.WriterOptions) {
	opts.FlushInterval = time.Hour
	w, err := cassettes.Create(path, c.Header, opts)
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
