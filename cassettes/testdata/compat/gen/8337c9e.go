//go:build ignore

// Generator of the compatibility cassettes written by kwrec 8337c9e: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-8337c9e 8337c9e
//	mkdir /tmp/wt-old-8337c9e/compatgen
//	cp 8337c9e.go /tmp/wt-old-8337c9e/compatgen/
//	cd /tmp/wt-old-8337c9e && go run ./compatgen/8337c9e.go DIR
//
// DIR is cassettes/testdata/compat, which holds the sources pods.kwrec
// and binary.kwrec (written by e070fff.go). It writes them in
// that version's compressed form: segments, each a zstd frame with a
// window of 1 MiB at most, every one after the first starting with a
// seek comment; small segments, so that these small files have several.
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
	write(filepath.Join(dir, "8337c9e-pods.kwrec.zst"), load("pods.kwrec"), cassettes.WriterOptions{SegmentSize: 8 << 10})
	write(filepath.Join(dir, "8337c9e-binary.kwrec.zst"), load("binary.kwrec"), cassettes.WriterOptions{SegmentSize: 1 << 10})
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
