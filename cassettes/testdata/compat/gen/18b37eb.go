//go:build ignore

// Generator of the compatibility cassettes written by kwrec 18b37eb: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-18b37eb 18b37eb
//	mkdir /tmp/wt-old-18b37eb/compatgen
//	cp 18b37eb.go /tmp/wt-old-18b37eb/compatgen/
//	cd /tmp/wt-old-18b37eb && go run ./compatgen/18b37eb.go DIR
//
// DIR is cassettes/testdata/compat, which holds the sources pods.kwrec
// and binary.kwrec (written by e070fff.go). It writes
// pods.kwrec as kwrec compact did then (Compact, which implies object
// deltas: every watch event a delta against its Pod's previous version)
// in small segments, so that seek points fall among the deltas; and as a
// rotated recording of parts of about 600 bytes, compacted likewise, so that
// deltas name frames in earlier parts.
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
	write(filepath.Join(dir, "18b37eb-pods-deltas.kwrec.zst"), load("pods.kwrec"), cassettes.WriterOptions{Compact: true, SegmentSize: 8 << 10})
	write(filepath.Join(dir, "18b37eb-pods-parts.kwrec.zst"), load("pods.kwrec"), cassettes.WriterOptions{Compact: true, SegmentSize: 8 << 10, MaxSize: 600})
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
