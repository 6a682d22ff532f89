//go:build ignore

// Generator of the compatibility cassettes written by kwrec 26a2720: run
// inside a checkout of that commit, not with this module (see
// ../README.md):
//
//	git worktree add --detach /tmp/wt-old-26a2720 26a2720
//	mkdir /tmp/wt-old-26a2720/cmd/kwrec/compatgen
//	cp 26a2720.go /tmp/wt-old-26a2720/cmd/kwrec/compatgen/
//	cd /tmp/wt-old-26a2720 && go run ./cmd/kwrec/compatgen/26a2720.go DIR
//
// DIR is cassettes/testdata/compat, which holds the source pods.kwrec
// (written by e070fff.go). It writes pods.kwrec as kwrec record -o
// 26a2720-pods-kept.kwrec.zst --max-size 700 --keep 3 did with the
// retention of 0af7156 (26a2720 is 0af7156 and one fix: 0af7156 did not
// read back the "rebased" flag it wrote, so its second retention pass
// failed): a rotated recording (its header "skipped" set, as a recording
// of every resource sets it) whose oldest kept part is rewritten as a
// rebased part, the state at its start (the Pods as a list) and then its
// own lines (internal/cut.Rebase), the parts before it deleted.
package main

import (
	"errors"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cut"
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
	r := &retention{out: filepath.Join(dir, "26a2720-pods-kept.kwrec.zst"), oldest: 1}
	write(r.out, c, cassettes.WriterOptions{MaxSize: 700, OnPart: r.started})
}

// retention is kwrec record --keep 3 of that version, run when
// each part starts (OnPart) and once the recording ends (n = -1), as
// cmd/kwrec/keep.go's retention.apply then did (by count: --keep-for
// left out).
type retention struct {
	out    string
	oldest int // the oldest whole part kept
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

// rebase rewrites part k as a rebased part, then deletes the parts
// before it (keep.go's retention.rebase at 0af7156).
func (r *retention) rebase(k int) {
	var names []string
	for j := r.oldest; j <= k; j++ {
		names = append(names, cassettes.PartName(r.out, j))
	}
	part := names[len(names)-1]
	rec, err := cut.Read(names...)
	if err != nil {
		log.Fatal(err)
	}
	res, err := cut.Rebase(rec, part)
	if err != nil {
		log.Fatal(err)
	}
	form, err := cassettes.FormOf(part)
	if err != nil {
		log.Fatal(err)
	}
	opts := cassettes.WriterOptions{Compress: form.Compressed}
	if err := cassettes.WriteAtomic(part, func(w io.Writer) error { return res.Write(w, opts) }); err != nil {
		log.Fatal(err)
	}
	for _, n := range names[:len(names)-1] {
		if err := os.Remove(n); err != nil && !errors.Is(err, os.ErrNotExist) {
			log.Fatal(err)
		}
	}
	r.oldest = k
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
