package replay

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// viewPlan answers a GET list, watch or get of a recorded collection from
// its timeline, in the encoding the client negotiated. It returns a nil
// plan and the reason when it cannot.
func (r *Replayer) viewPlan(req *http.Request) (*plan, string) {
	if req.Method != http.MethodGet {
		return nil, "only GET list, watch and get requests are answered from the recorded timeline"
	}
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		if a, ok := overlay.Scale(r.world, req); ok {
			return r.answerPlan(a), ""
		}
		return nil, "not a resource path"
	}
	t, ns := r.world.ForRead(rp)
	if t == nil {
		st := wire.Status(http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("the server could not find the requested resource (kwrec: the cassette records no list or watch of %s)", rp.Collection()), 0)
		return r.statusPlan(st, 0, false), ""
	}
	if why := t.Broken(); why != "" {
		return nil, "the timeline of " + t.Path + " cannot be rebuilt: " + why
	}
	q := req.URL.Query()
	if rp.Name != "" && wire.IsWatch(q) {
		return nil, "a watch of one object by its path is deprecated; use fieldSelector=metadata.name=NAME"
	}
	enc, ok := r.negotiate(t, rp.Collection(), req.Header.Get("Accept"))
	if !ok {
		st := wire.Status(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("only the following media types are accepted: %s, %s", wire.MediaJSON, wire.MediaProtobuf), 0)
		return r.statusPlan(st, 0, false), ""
	}
	sel, err := t.Selector(q, ns, r.world.Reader(t))
	if err != nil {
		return r.errorPlanOf(err, enc.proto), ""
	}
	p, err := r.viewOf(t, rp, enc, q, sel)
	if err != nil {
		return r.errorPlanOf(err, enc.proto), ""
	}
	return p, ""
}

// viewOf plans the answer to a get, list or watch of t's view sel.
func (r *Replayer) viewOf(t *timeline.Timeline, rp apipath.Path, enc encoding, q url.Values, sel timeline.Selector) (*plan, error) {
	p := &plan{status: http.StatusOK, header: http.Header{"Content-Type": {wire.MediaJSON}}, pace: r.pacing(nil), tl: t,
		proto: enc.proto, end: endEOF, timeout: wire.TimeoutSeconds(q), partial: enc.partial}
	if enc.proto {
		p.header.Set("Content-Type", wire.MediaProtobuf)
	}
	for _, w := range t.Warnings {
		p.header.Add("Warning", w)
	}
	var err error
	switch {
	case rp.Name != "":
		err = r.getView(p, enc, rp)
		p.shape = wire.ShapeObject
	case !wire.IsWatch(q):
		err = r.listView(p, enc, q, sel)
		p.shape = wire.ShapeList
	default:
		err = r.watchView(p, enc, q, sel)
		p.shape = wire.ShapeWatch
	}
	return p, err
}

// encoding is how a view answers: protobuf or JSON, and for kubectl's
// server-side printing the collection's recorded Table rows (table) in
// Table version gv, where every object in the answer has one.
type encoding struct {
	proto bool
	// partial: the client asked for the metadata-only form
	// (PartialObjectMetadata), in protobuf when proto.
	partial bool
	table   *table.Index
	gv      table.GroupVersion
}

// negotiate picks the encoding of an answer about t, for a request of
// collection, for a client with this Accept header; ok is false when the
// client takes none kwrec serves.
func (r *Replayer) negotiate(t *timeline.Timeline, collection, accept string) (enc encoding, ok bool) {
	// In Overlay mode a write needs a row too: the Table form is served
	// only where kwrec can print one (table.Index.AddObject).
	if gv, wants := table.Wants(accept); wants {
		x := r.table(t.Path)
		if x == nil {
			// A namespace answered from the all-namespaces timeline has
			// the rows recorded of it.
			x = r.table(collection)
		}
		if x != nil && x.Len() > 0 && (!r.overlay() || x.CanAdd()) {
			enc.table, enc.gv = x, gv
		}
	}
	if partial, proto := wire.AcceptsPartial(accept); partial {
		return encoding{partial: true, proto: proto && r.codec.CanProtobuf(t)}, true
	}
	enc.proto, ok = wire.Negotiate(accept)
	if enc.proto && !r.codec.CanProtobuf(t) {
		enc.proto, ok = false, wire.Accepts(accept, wire.MediaJSON)
	}
	return enc, ok
}

// getView answers a get of one object as of now.
func (r *Replayer) getView(p *plan, enc encoding, rp apipath.Path) error {
	o, err := p.tl.Get(rp.Namespace, rp.Name)
	if err != nil {
		return err
	}
	if enc.table != nil {
		if b, ok := enc.table.Get(enc.gv, r.rowOf(enc.table, p.tl, &o)); ok {
			p.frames = []outFrame{dataFrame(b)}
			return nil
		}
	}
	// One object, read now (through the source's cache: gets repeat).
	raws, err := r.raws(p.tl, []timeline.Object{o})
	if err != nil {
		return err
	}
	b, err := r.codec.Object(p.tl, &o, raws[0], enc.proto)
	if err != nil {
		return err
	}
	p.frames = []outFrame{dataFrame(b)}
	return nil
}

// listView answers a list.
func (r *Replayer) listView(p *plan, enc encoding, q url.Values, sel timeline.Selector) error {
	l, err := p.tl.List(q, sel)
	if err != nil {
		return err
	}
	p.frames = []outFrame{{rv: l.RV, payload: listView{&l}}}
	if enc.table != nil {
		vs := make([]table.Version, len(l.Items))
		for i := range l.Items {
			vs[i] = r.rowOf(enc.table, p.tl, &l.Items[i])
		}
		if b, ok := enc.table.List(enc.gv, strconv.FormatInt(l.RV, 10), l.Continue, l.Remaining, vs); ok {
			p.frames = []outFrame{{rv: l.RV, payload: rawBytes(b)}}
		}
	}
	return nil
}

// watchView answers a watch or a streaming list.
func (r *Replayer) watchView(p *plan, enc encoding, q url.Values, sel timeline.Selector) error {
	steps, _, err := p.tl.WatchSteps(q, sel)
	if err != nil {
		return err
	}
	p.follow = steps.Follow()
	if enc.proto {
		p.header.Set("Content-Type", wire.MediaProtobufWatch)
	}
	p.steps, p.end, p.watch = steps, endIdle, true
	if steps.Expired() {
		p.end, p.follow = endEOF, nil
	}
	if enc.table != nil && r.tableHasRows(enc.table, p.tl, steps.All()) {
		p.table, p.tableGV = enc.table, enc.gv
	}
	return nil
}

// errorPlanOf answers with the Status of a timeline view's error.
func (r *Replayer) errorPlanOf(err error, proto bool) *plan {
	var se *timeline.StatusError
	if !errors.As(err, &se) { // reading the recording failed
		return r.statusPlan(wire.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: "+err.Error(), 0), 0, proto)
	}
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
		frames: []outFrame{dataFrame(wire.StatusBody(st, proto))}}
}
