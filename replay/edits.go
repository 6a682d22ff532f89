package replay

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/edit"
)

// editSet is a replay's resolved edits: every one, for Edits, and the
// warps that apply to every interaction.
type editSet struct {
	all    []*editState
	global []Edit

	compacted compactions
}

// editState is one resolved edit: where it sits and whether it fired.
type editState struct {
	Edit
	edit.State
}

// EditReport says where an edit sits on the cassette and whether it
// fired.
type EditReport struct {
	Edit Edit
	// Where is the edit's place: an interaction and frame, a collection
	// and resourceVersion, or "nowhere" with the reason.
	Where string
	// Interaction is the ID of the interaction the edit names (with
	// request= or match=), 0 for none.
	Interaction int
	// Collections and RV are the timeline point of a watch-error, reset
	// or truncate: the collection paths it sits on and the recorded
	// resourceVersion after which it fires; nil and 0 for other edits.
	Collections []string
	RV          int64
	// Fired counts the times it took effect: at most 1 for a watch-error,
	// reset or truncate (they fire once), one per attempt for an error.
	Fired int
}

func (e EditReport) String() string {
	if e.Fired == 0 {
		return fmt.Sprintf("%s at %s: did not fire", e.Edit, e.Where)
	}
	return fmt.Sprintf("%s at %s: fired %d time(s)", e.Edit, e.Where, e.Fired)
}

// Edits reports every edit of the replay (the cassette's, then
// [Options.Edits]), where it sits and whether it has fired so far. After
// a replay, an edit with Fired 0 was never reached by any client: a test
// that meant to inject a failure did not.
func (r *Replayer) Edits() []EditReport {
	out := make([]EditReport, 0, len(r.edits.all))
	for _, e := range r.edits.all {
		var rv int64
		if e.Mark != nil && len(e.Paths) > 0 {
			rv = r.world.Timeline(e.Paths[0]).Recorded(e.Mark.RV)
		}
		out = append(out, EditReport{Edit: e.Edit, Where: e.Where, Fired: e.Fired(), Interaction: e.Interaction,
			Collections: e.Paths, RV: rv})
	}
	return out
}

// anchoredError counts req against the edits anchored by resource that
// answer a request (error, expire-continue, a reset before the first
// byte) and returns the plan of the one it fires, or of a compacted
// watch; nil for none. A replay without such edits does not parse req.
func (r *Replayer) anchoredError(req *http.Request) *plan {
	var rp apipath.Path
	var verb string
	for _, es := range r.edits.all {
		if es.Kind != EditError && es.Kind != EditExpireContinue && (es.Kind != EditReset || es.Verb == "" || es.After > 0 || es.BeforeBookmark) || es.Resource == "" {
			continue
		}
		if verb == "" {
			if rp, verb = edit.Verb(req); verb == "" {
				return nil
			}
			if rv := r.edits.compacted.refuses(req, rp, verb); rv != 0 {
				return r.views.tooOld(req, rv)
			}
		}
		if !es.anchor().Names(rp) {
			continue
		}
		var expired *metav1.Status
		switch {
		case (es.Kind == EditError || es.Kind == EditReset) && es.Verb != "" && es.Verb != verb:
			continue
		case es.Kind == EditExpireContinue:
			if verb != "list" {
				continue
			}
			if expired = edit.ContinueExpired(req.URL.Query().Get("continue")); expired == nil {
				continue // no token, or one the server refuses with a 400 anyway
			}
		}
		if !es.Count(es.Nth) {
			continue
		}
		es.Fire(req.Method + " " + req.URL.Path)
		switch {
		case expired != nil:
			enc, _ := wire.Negotiate(req.Header.Get("Accept"))
			return r.views.statusPlan(expired, 0, enc)
		case es.Kind == EditReset:
			// Reset before a byte of the answer, as a connection dropped
			// by a load balancer or an apiserver going away.
			return &plan{end: endReset, pace: r.pacing(nil)}
		case verb == "watch" && es.Status == http.StatusGone:
			// A watch from a compacted resourceVersion, as kube-apiserver
			// answers it: 200 and one ERROR event, 410 Expired "too old
			// resource version". From then on every watch of the
			// resource from that version or older gets the same, as on
			// a cluster whose etcd compacted it, so a client that
			// retries the same version never gets through and must
			// list again. A server compacts only what is older than
			// its newest version: a watch from the world's newest, or
			// from none (a streaming list from now), gets it once.
			rv, _ := strconv.ParseInt(req.URL.Query().Get("resourceVersion"), 10, 64)
			if t, _ := r.world.For(rp); rv > 0 && t != nil && rv < t.Progress() {
				r.edits.compacted.add(es.anchor(), rv)
			}
			return r.views.tooOld(req, rv)
		}
		return r.errorPlan(nil, es.Edit)
	}
	return nil
}

// compaction is a resourceVersion of a collection an edit compacted:
// every watch of it from that version or older is refused as too old.
type compaction struct {
	anchor edit.Anchor
	rv     int64
}

// compactions are the resourceVersions the 410 edits on watch opens
// compacted, each of one resource (see [Replayer.anchoredError]).
type compactions struct {
	mu     sync.Mutex
	floors []compaction
}

// add notes that rv of a's resource is compacted.
func (c *compactions) add(a edit.Anchor, rv int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.floors = append(c.floors, compaction{anchor: a, rv: rv})
}

// refuses returns the resourceVersion of req, a request of verb on rp,
// when it is a watch from a compacted version or older, 0 otherwise. A
// streaming list (sendInitialEvents) not older than it is served, as the
// server's watch cache serves it.
func (c *compactions) refuses(req *http.Request, rp apipath.Path, verb string) int64 {
	q := req.URL.Query()
	if verb != "watch" || q.Get("sendInitialEvents") == "true" && q.Get("resourceVersionMatch") == string(metav1.ResourceVersionMatchNotOlderThan) {
		return 0
	}
	rv, _ := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	if rv <= 0 {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, f := range c.floors {
		if f.anchor.Names(rp) && rv <= f.rv {
			return rv
		}
	}
	return 0
}

// errorPlan answers with the HTTP error of edit e, in front of iv (nil for
// an edit anchored by resource).
func (r *Replayer) errorPlan(iv *ivState, e Edit) *plan {
	h := http.Header{"Content-Type": {wire.MediaJSON}}
	if e.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	st := wire.Status(e.Status, metav1.StatusReason(e.Reason), fmt.Sprintf("kwrec: injected by edit %s", e), e.RetryAfter)
	var lat time.Duration
	if iv != nil && iv.in.Response != nil {
		lat = iv.in.Response.Latency
	}
	return &plan{status: e.Status, header: h, latency: lat, pace: r.pacing(iv), end: endEOF,
		frames: []outFrame{dataFrame(wire.StatusBody(st, false))}}
}

// cut counts req against the edits anchored by resource and verb
// that cut a stream after its first frames (reset or watch-error with
// after) or before the bookmark that ends a streaming list's initial
// events (before=bookmark, counting streaming lists only), and returns
// the mark of the one that fires and where it cuts: the frames before it,
// or cutAtBookmark; nil for none. The mark is the plan's own: it fires
// once, when the stream gets there.
func (s *editSet) cut(req *http.Request) (*timeline.Mark, int) {
	var rp apipath.Path
	var verb string
	for _, es := range s.all {
		if es.Kind != EditReset && es.Kind != EditWatchError || es.Resource == "" || es.Verb == "" || es.After == 0 && !es.BeforeBookmark {
			continue
		}
		if verb == "" {
			if rp, verb = edit.Verb(req); verb == "" {
				return nil, 0
			}
		}
		if es.Verb != verb || !es.anchor().Names(rp) {
			continue
		}
		if es.BeforeBookmark && req.URL.Query().Get("sendInitialEvents") != "true" {
			continue
		}
		if !es.Count(es.Nth) {
			continue
		}
		es.Fire(req.Method + " " + req.URL.Path)
		if es.BeforeBookmark {
			return newEditMark(es.Edit), cutAtBookmark
		}
		return newEditMark(es.Edit), es.After
	}
	return nil, 0
}

// cutAtBookmark is where [editSet.cut] cuts a stream with before=bookmark:
// just before the bookmark that ends a streaming list's initial events.
const cutAtBookmark = -1
