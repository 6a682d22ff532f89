package replay

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timelineFor returns the timeline that answers for rp's collection, and
// the namespace to filter it by: the collection's own, else for a
// namespaced request the all-namespaces timeline of the same resource.
func (r *Replayer) timelineFor(rp apipath.Path) (*timeline.Timeline, string) {
	if t := r.timelines[rp.Collection()]; t != nil {
		return t, ""
	}
	if rp.Namespace != "" {
		all := rp
		all.Namespace, all.Name = "", ""
		if t := r.timelines[all.Collection()]; t != nil {
			return t, rp.Namespace
		}
	}
	return nil, ""
}

// viewPlan answers a GET list, watch or get of a recorded collection from
// its timeline, in the encoding the client negotiated: kubectl's Table form
// (server-side printing) from the recorded Table rows when every object in
// the answer has one, else protobuf or JSON. It returns a nil plan and the
// reason when it cannot.
func (r *Replayer) viewPlan(req *http.Request) (*plan, string) {
	if req.Method != http.MethodGet {
		return nil, "only GET list, watch and get requests are answered from the recorded timeline"
	}
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		return nil, "not a resource path"
	}
	t, ns := r.timelineFor(rp)
	if t == nil {
		if t = r.emptyTimeline(rp); t == nil {
			st := wire.Status(http.StatusNotFound, metav1.StatusReasonNotFound,
				fmt.Sprintf("the server could not find the requested resource (kwrec: the cassette records no list or watch of %s)", rp.Collection()), 0)
			return r.statusPlan(st, 0, false), ""
		}
	}
	if why := t.Broken(); why != "" {
		return nil, "the timeline of " + t.Path + " cannot be rebuilt: " + why
	}
	accept := req.Header.Get("Accept")
	var tbl *table.Index
	gv, wantsTable := table.Wants(accept)
	if x := r.tables[t.Path]; wantsTable && x != nil && x.Len() > 0 {
		tbl = x
	}
	proto, ok := wire.Negotiate(accept)
	if proto && !r.codec.CanProtobuf(t) {
		proto = false
		ok = wire.Accepts(accept, wire.MediaJSON)
	}
	if !ok {
		st := wire.Status(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("only the following media types are accepted: %s, %s", wire.MediaJSON, wire.MediaProtobuf), 0)
		return r.statusPlan(st, 0, false), ""
	}
	q := req.URL.Query()
	sel, err := t.Selector(q, ns)
	if err != nil {
		return r.errorPlanOf(err, proto), ""
	}
	p := &plan{status: http.StatusOK, header: http.Header{}, pace: r.pacing(nil), tl: t, proto: proto,
		end: endEOF, timeout: wire.TimeoutSeconds(q)}
	ct := wire.MediaJSON
	if proto {
		ct = wire.MediaProtobuf
	}
	p.header.Set("Content-Type", ct)
	switch {
	case rp.Name != "" && wire.IsWatch(q):
		return nil, "a watch of one object by its path is deprecated; use fieldSelector=metadata.name=NAME"
	case rp.Name != "":
		o, err := t.Get(rp.Namespace, rp.Name)
		if err != nil {
			return r.errorPlanOf(err, proto), ""
		}
		p.frames = []outFrame{{obj: &o}}
		if tbl != nil {
			if b, ok := tbl.Get(gv, tableVersion(&o)); ok {
				p.frames = []outFrame{{data: b}}
			}
		}
	case !wire.IsWatch(q):
		l, err := t.List(q, sel)
		if err != nil {
			return r.errorPlanOf(err, proto), ""
		}
		p.frames = []outFrame{{list: &l, rv: l.RV}}
		if tbl != nil {
			vs := make([]table.Version, len(l.Items))
			for i := range l.Items {
				vs[i] = tableVersion(&l.Items[i])
			}
			var remaining *int64
			if l.Continue != "" {
				remaining = &l.Remaining
			}
			if b, ok := tbl.List(gv, strconv.FormatInt(l.RV, 10), l.Continue, remaining, vs); ok {
				p.frames = []outFrame{{data: b, rv: l.RV}}
			}
		}
	default:
		steps, err := t.Watch(q, sel)
		if err != nil {
			return r.errorPlanOf(err, proto), ""
		}
		if proto {
			p.header.Set("Content-Type", wire.MediaProtobufWatch)
		}
		p.steps, p.end = steps, endIdle
		if len(steps) == 1 && steps[0].Kind == timeline.StepExpired {
			p.end = endEOF
		}
		if tbl != nil && tableHasRows(tbl, steps) {
			p.table, p.tableGV = tbl, gv
		}
	}
	return p, ""
}

// emptyTimeline answers for a collection the cassette never recorded of a
// resource the server has (kubectl describe lists the events of what it
// describes): no objects, as of the newest resourceVersion recorded of any
// collection (they are one etcd revision sequence). nil for a resource the
// server's discovery does not know.
func (r *Replayer) emptyTimeline(rp apipath.Path) *timeline.Timeline {
	docs, err := r.discoveryDocs()
	if err != nil {
		return nil
	}
	kind, namespaced, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	if !ok || !namespaced && rp.Namespace != "" {
		return nil
	}
	var rv int64
	for _, t := range r.tlOrder {
		rv = max(rv, t.Last())
	}
	return timeline.Empty(rp.Collection(), rp, kind, rv)
}

// tableVersion names an object's row in a table index.
func tableVersion(o *timeline.Object) table.Version {
	return table.Version{Key: o.Key, RV: strconv.FormatInt(o.RV, 10)}
}

// tableHasRows reports whether every object a watch sends has a recorded
// Table row: a watch is served in the Table form whole or not at all (its
// client then prints plain objects, as it does for a server without
// server-side printing).
func tableHasRows(x *table.Index, steps []timeline.Step) bool {
	for _, s := range steps {
		o := s.Obj
		if s.Kind == timeline.StepEvent {
			o = &s.Ev.Obj
		}
		if o != nil && !x.Has(tableVersion(o)) {
			return false
		}
	}
	return true
}

// errorPlanOf answers with the Status of a timeline view's error.
func (r *Replayer) errorPlanOf(err error, proto bool) *plan {
	se := err.(*timeline.StatusError)
	return r.statusPlan(se.Status, se.RetryAfter, proto)
}

// statusPlan answers with st, and Retry-After when retryAfter > 0.
func (r *Replayer) statusPlan(st *metav1.Status, retryAfter int, proto bool) *plan {
	h := http.Header{"Content-Type": {wire.MediaJSON}}
	if proto {
		h.Set("Content-Type", wire.MediaProtobuf)
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	return &plan{status: int(st.Code), header: h, pace: r.pacing(nil), end: endEOF,
		frames: []outFrame{{data: r.codec.Status(st, proto)}}}
}
