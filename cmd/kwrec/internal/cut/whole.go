package cut

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/kwrec/kwrec/internal/timeline"
)

// ErrNotWhole: a kept recording (its oldest part rebased) that cannot
// replay from its start: a collection watched with no list of it before,
// or a watch that starts past what the parts before it hold.
var ErrNotWhole = errors.New("recording not whole")

// CheckWhole checks that rec replays from its start: every watch of a
// collection comes after a list of it (or is a streaming list), and
// starts from a resourceVersion the lines before it reached, so no
// change between parts is lost. kwrec lint runs it on a recording whose
// oldest part is rebased (kwrec record --keep). The error wraps
// [ErrNotWhole] and names the part.
func (r *Recording) CheckWhole() error {
	known := map[*timeline.Timeline]int64{} // how far each collection's state is known
	listed := map[*timeline.Timeline]bool{}
	cont := map[*iv]bool{} // watches that go on from known state
	first := ""
	if r.lines.Len() > 0 {
		first = r.fileOf(0)
	}
	for i := range r.lines.Len() {
		l := r.lines.At(i)
		v := r.ivOf(l)
		if v.tl == nil {
			continue
		}
		switch {
		case l.kind() == lineResponse && v.watch:
			if v.q.Get("sendInitialEvents") == "true" {
				listed[v.tl], cont[v] = true, true
				continue
			}
			if !listed[v.tl] {
				return fmt.Errorf("%w: %s holds no list of %s before %s watches it (interaction %d): the oldest part kept must start with a list of every collection; keep that part's rebased start, or re-record",
					ErrNotWhole, base(first), v.tl.Path, base(r.fileOf(i)), v.in.ID)
			}
			from, _ := strconv.ParseInt(v.q.Get("resourceVersion"), 10, 64)
			if k := known[v.tl]; from > k {
				return fmt.Errorf("%w: %s: the watch of %s (interaction %d) starts from resourceVersion %d, but the lines before it hold that collection only up to %d: the changes between are lost",
					ErrNotWhole, base(r.fileOf(i)), v.tl.Path, v.in.ID, from, k)
			}
			cont[v] = true
		case l.kind() == lineFrame:
			rv := r.rvOf(i)
			if !v.watch {
				listed[v.tl] = true
				known[v.tl] = max(known[v.tl], rv)
			} else if cont[v] {
				known[v.tl] = max(known[v.tl], rv)
			}
		}
	}
	return nil
}

func base(file string) string { return filepath.Base(file) }
