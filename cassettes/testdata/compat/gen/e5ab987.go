//go:build ignore

// Generator of the compatibility cassettes written by kwrec e5ab987: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-e5ab987 e5ab987
//	mkdir /tmp/wt-old-e5ab987/cmd/kwrec/compatgen
//	cp e5ab987.go /tmp/wt-old-e5ab987/cmd/kwrec/compatgen/
//	cd /tmp/wt-old-e5ab987 && go run ./cmd/kwrec/compatgen/e5ab987.go DIR
//
// DIR is cassettes/testdata/compat, which holds the source pods.kwrec
// (written by e070fff.go). It writes pods.kwrec as kwrec record -o e5ab987-pods-kept.kwrec
// --max-size 8KB --keep 3 did then, counting parts (the byte budget
// left out): a rotated recording in the text form (its header "skipped"
// set, as a recording of every resource sets it) whose state at the
// start of the oldest kept part is its own rebased part
// (cmd/kwrec/internal/cut.Base), written over the part before it, the
// parts before that deleted.
package main

import (
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/cut"
)

// keep is kwrec record --keep's limit: the newest 3 parts.
const keep = 3

func main() {
	dir := os.Args[1]
	c, err := cassettes.Load(filepath.Join(dir, "pods.kwrec"))
	if err != nil {
		log.Fatal(err)
	}
	c.Header.Skipped = []string{"secrets: forbidden (list)"}
	r := &retention{out: filepath.Join(dir, "e5ab987-pods-kept.kwrec"), oldest: 1}
	write(r.out, c, cassettes.WriterOptions{MaxSize: 8 << 10, OnPart: r.started})
}

// retention is kwrec record --keep 3 of that version, run when
// each part starts (OnPart) and once the recording ends (n = -1), as
// cmd/kwrec/keep.go's retention.apply then did (by count: --keep-for
// and the byte budget left out).
type retention struct {
	out    string
	oldest int // the oldest whole part kept
	base   int // the rebased part holding the state, 0 for none
	newest int
}

func (r *retention) started(n int) {
	last := n - 1 // the newest part whole: the oldest kept may be no newer
	if n < 0 {
		n, last = r.newest, r.newest
	}
	r.newest = n
	k := min(max(r.oldest, n-keep+1), last)
	if k > r.oldest {
		r.rebase(k)
	}
}

// rebase writes the state at part k's start over part k-1, then deletes
// the parts before it (keep.go's retention.rebase at e5ab987).
func (r *retention) rebase(k int) {
	var names []string
	if r.base > 0 {
		names = append(names, cassettes.PartName(r.out, r.base))
	}
	for j := r.oldest; j <= k; j++ {
		names = append(names, cassettes.PartName(r.out, j))
	}
	part, into := cassettes.PartName(r.out, k), cassettes.PartName(r.out, k-1)
	rec, err := cut.Read(names...)
	if err != nil {
		log.Fatal(err)
	}
	res, err := cut.Base(rec, part)
	if err != nil {
		log.Fatal(err)
	}
	form, err := cassettes.FormOf(part)
	if err != nil {
		log.Fatal(err)
	}
	opts := cassettes.WriterOptions{Compress: form.Compressed}
	if err := cassettes.WriteAtomic(into, func(w io.Writer) error { return res.Write(w, opts) }); err != nil {
		log.Fatal(err)
	}
	for _, n := range names[:len(names)-2] { // the old state, the parts before k-1
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Fatal(err)
		}
	}
	r.oldest, r.base = k, k-1
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
	if opts.OnPart != nil {
		opts.OnPart(-1) // the last part written
	}
}
