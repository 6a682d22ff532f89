//go:build ignore

// Generator of the compatibility cassettes written by kwrec e058fd0: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-e058fd0 e058fd0
//	mkdir /tmp/wt-old-e058fd0/compatgen
//	cp e058fd0.go /tmp/wt-old-e058fd0/compatgen/
//	cd /tmp/wt-old-e058fd0 && go run ./compatgen/e058fd0.go DIR
//
// DIR is cassettes/testdata/compat, which holds the source pods.kwrec
// (written by e070fff.go). It writes pods.kwrec as kwrec compact did
// then: its watch events deltas against their Pod's previous version, each
// Pod's first against its item in the list before the watch (the list
// "shared", the deltas "from" it), in small segments.
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
	write(filepath.Join(dir, "e058fd0-pods-shared.kwrec.zst"), load("pods.kwrec"), cassettes.WriterOptions{Compact: true, SegmentSize: 8 << 10})
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
