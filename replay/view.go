package replay

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/discovery"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/pace"
)

// views answers reads of the recorded world as kube-apiserver would: a
// get, list or watch of a collection's timeline in the encoding the
// client negotiated (kubectl's Table form included), discovery, and the
// plain answers (a Status, a body) every part of a replay sends.
type views struct {
	world  *overlay.World
	codec  timeline.Codec
	src    indexSource
	tables map[string]*tableSet // kubectl's Table form of a collection, by path
	// printers print the Table rows of what was never recorded in it.
	printers *printers
	header   cassettes.Header
	ivs      []*ivState // read for the recorded discovery answers
	writes   bool       // Overlay mode
	clock    clock.Clock
	pace     pace.Pacing // how a view's waits are scaled: Options and the global warps

	discMu    sync.Mutex // guards the discovery built for the world's definitions
	discKey   crdsKey
	discBuilt bool
	disc      *discovery.Docs
	discErr   error
}

// viewPlan answers a GET list, watch or get of a recorded collection from
// its timeline, in the encoding the client negotiated. It returns a nil
// plan and the reason when it cannot.
func (vw *views) viewPlan(req *http.Request) (*plan, string) {
	if req.Method != http.MethodGet {
		return nil, "only GET list, watch and get requests are answered from the recorded timeline"
	}
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		if a, ok := overlay.Scale(vw.world, req); ok {
			return vw.answerPlan(a), ""
		}
		if a, ok := overlay.Status(vw.world, req); ok {
			return vw.answerPlan(a), ""
		}
		return nil, "not a resource path"
	}
	t, ns := vw.world.ForRead(rp)
	if t == nil {
		st := wire.Status(http.StatusNotFound, metav1.StatusReasonNotFound,
			fmt.Sprintf("the server could not find the requested resource (kwrec: the cassette records no list or watch of %s)", rp.Collection()), 0)
		return vw.statusPlan(st, 0, false), ""
	}
	if why := t.Broken(); why != "" {
		return nil, "the timeline of " + t.Path + " cannot be rebuilt: " + why
	}
	q := req.URL.Query()
	if rp.Name != "" && wire.IsWatch(q) {
		return nil, "a watch of one object by its path is deprecated; use fieldSelector=metadata.name=NAME"
	}
	enc, ok := vw.negotiate(t, rp.Collection(), req.Header.Get("Accept"))
	if !ok {
		st := wire.Status(http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable,
			fmt.Sprintf("only the following media types are accepted: %s, %s", wire.MediaJSON, wire.MediaProtobuf), 0)
		return vw.statusPlan(st, 0, false), ""
	}
	sel, err := t.Selector(q, ns, vw.world.Fields(t))
	if err != nil {
		return vw.errorPlanOf(err, enc.proto), ""
	}
	p, err := vw.viewOf(t, rp, enc, q, sel)
	if err != nil {
		return vw.errorPlanOf(err, enc.proto), ""
	}
	return p, ""
}

// viewOf plans the answer to a get, list or watch of t's view sel.
func (vw *views) viewOf(t *timeline.Timeline, rp apipath.Path, enc encoding, q url.Values, sel timeline.Selector) (*plan, error) {
	p := &plan{status: http.StatusOK, header: http.Header{"Content-Type": {wire.MediaJSON}}, pace: vw.pace, tl: t,
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
		err = vw.getView(p, enc, rp)
		p.shape = wire.ShapeObject
	case !wire.IsWatch(q):
		err = vw.listView(p, enc, q, sel)
		p.shape = wire.ShapeList
	default:
		err = vw.watchView(p, enc, q, sel)
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
	table   tableForm // x nil: not in the Table form
	gv      table.GroupVersion
}

// negotiate picks the encoding of an answer about t, for a request of
// collection, for a client with this Accept header; ok is false when the
// client takes none kwrec serves.
func (vw *views) negotiate(t *timeline.Timeline, collection, accept string) (enc encoding, ok bool) {
	if gv, wants := table.Wants(accept); wants {
		if f, ok := vw.tableForm(t, collection); ok {
			enc.table, enc.gv = f, gv
		}
	}
	if partial, proto := wire.AcceptsPartial(accept); partial {
		return encoding{partial: true, proto: proto && vw.codec.CanProtobuf(t)}, true
	}
	enc.proto, ok = wire.Negotiate(accept)
	if enc.proto && !vw.codec.CanProtobuf(t) {
		enc.proto, ok = false, wire.Accepts(accept, wire.MediaJSON)
	}
	return enc, ok
}

// getView answers a get of one object as of now.
func (vw *views) getView(p *plan, enc encoding, rp apipath.Path) error {
	o, err := p.tl.Get(rp.Namespace, rp.Name)
	if err != nil {
		return err
	}
	if enc.table.x != nil {
		if b, ok := enc.table.x.Get(enc.gv, vw.rowOf(enc.table, p.tl, &o)); ok {
			p.frames = []outFrame{dataFrame(b)}
			return nil
		}
	}
	// One object, read now (through the source's cache: gets repeat).
	raws, err := objects{vw.src}.raws(p.tl, []timeline.Object{o})
	if err != nil {
		return err
	}
	b, err := vw.codec.Object(p.tl, &o, raws[0], enc.proto)
	if err != nil {
		return err
	}
	p.frames = []outFrame{dataFrame(b)}
	return nil
}

// listView answers a list.
func (vw *views) listView(p *plan, enc encoding, q url.Values, sel timeline.Selector) error {
	l, err := p.tl.List(q, sel)
	if err != nil {
		return err
	}
	p.frames = []outFrame{{rv: l.RV, payload: listView{&l}}}
	if enc.table.x != nil {
		items := make([]*timeline.Object, len(l.Items))
		for i := range l.Items {
			items[i] = &l.Items[i]
		}
		vs := vw.rowsOf(enc.table, p.tl, items)
		if b, ok := enc.table.x.List(enc.gv, strconv.FormatInt(l.RV, 10), l.Continue, l.Remaining, vs); ok {
			p.frames = []outFrame{{rv: l.RV, payload: rawBytes(b)}}
		}
	}
	return nil
}

// watchView answers a watch or a streaming list.
func (vw *views) watchView(p *plan, enc encoding, q url.Values, sel timeline.Selector) error {
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
	if enc.table.x != nil && vw.tableHasRows(enc.table, p.tl, steps.All()) {
		p.table, p.tableGV = enc.table, enc.gv
	}
	return nil
}

// errorPlanOf answers with the Status of a timeline view's error.
func (vw *views) errorPlanOf(err error, proto bool) *plan {
	var se *timeline.StatusError
	if !errors.As(err, &se) { // reading the recording failed
		return vw.statusPlan(wire.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: "+err.Error(), 0), 0, proto)
	}
	return vw.statusPlan(se.Status, se.RetryAfter, proto)
}

// statusPlan answers with st, and Retry-After when retryAfter > 0.
func (vw *views) statusPlan(st *metav1.Status, retryAfter int, proto bool) *plan {
	h := http.Header{"Content-Type": {wire.MediaJSON}}
	if proto {
		h.Set("Content-Type", wire.MediaProtobuf)
	}
	if retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(retryAfter))
	}
	return &plan{status: int(st.Code), header: h, pace: vw.pace, end: endEOF,
		frames: []outFrame{dataFrame(wire.StatusBody(st, proto))}}
}

// tooOld is the watch answer to a compacted resourceVersion rv: 200 and
// an ERROR event, 410 Expired. Not a watch of recorded changes: Hold and
// Settle do not hold it.
func (vw *views) tooOld(req *http.Request, rv int64) *plan {
	proto, _ := wire.Negotiate(req.Header.Get("Accept"))
	st := wire.Status(http.StatusGone, metav1.StatusReasonExpired, fmt.Sprintf("too old resource version: %d (%d)", rv, rv+1), 0)
	ct := wire.MediaJSON
	if proto {
		ct = wire.MediaProtobufWatch
	}
	return &plan{status: http.StatusOK, header: http.Header{"Content-Type": {ct}}, pace: vw.pace, end: endEOF,
		frames: []outFrame{dataFrame(vw.codec.ErrorEvent(st, proto))}}
}

// answerPlan serves a write's answer: a Status, or its JSON encoded as
// the client asked (protobuf for an object of the collection's kind, the
// metadata-only form).
func (vw *views) answerPlan(a overlay.Answer) *plan {
	if a.Status != nil {
		p := vw.statusPlan(a.Status, a.RetryAfter, a.Proto)
		for _, w := range a.Warnings {
			p.header.Add("Warning", w)
		}
		return p
	}
	b, ct, proto := a.Body, wire.MediaJSON, a.Proto
	if a.Partial {
		if pb, err := wire.PartialMetadata(b, wire.ShapeObject, false); err == nil {
			b, proto = pb, false
		}
	}
	if proto {
		if m, err := wire.MetaJSON(b); err == nil && m.Kind == a.Timeline.Kind {
			o := timeline.Object{Ref: timeline.Ref{Enc: timeline.JSON, Typed: true}}
			if pb, err := vw.codec.Object(a.Timeline, &o, b, true); err == nil {
				b, ct = pb, wire.MediaProtobuf
			}
		}
	}
	if ct == wire.MediaJSON && !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	p := vw.dataPlan(a.Code, ct, b)
	for _, w := range a.Warnings {
		p.header.Add("Warning", w)
	}
	return p
}
