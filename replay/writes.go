package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/discovery"
	"github.com/kwrec/kwrec/replay/internal/edit"
	"github.com/kwrec/kwrec/replay/internal/write"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// WriteMode says what a [Replayer] does with a write (POST, PUT, PATCH or
// DELETE) that matches no recorded one.
type WriteMode int

// The write modes.
const (
	// WritesStrict fails such a write with [ErrNoMatch]: a write is
	// answered only by the recorded response to the same request. Through
	// [Server] the client reads a 500 InternalError carrying the error's
	// text, never a status that says something about the object.
	WritesStrict WriteMode = iota
	// WritesOverlay applies it to the recorded world as the API server
	// would (see the package documentation, "Writes"), and every watch,
	// list and get of its collection sees it from then on.
	WritesOverlay
)

// String returns "strict" or "overlay".
func (m WriteMode) String() string {
	if m == WritesOverlay {
		return "overlay"
	}
	return "strict"
}

// ParseWriteMode parses "strict" or "overlay".
func ParseWriteMode(s string) (WriteMode, error) {
	switch s {
	case "strict":
		return WritesStrict, nil
	case "overlay":
		return WritesOverlay, nil
	}
	return 0, fmt.Errorf("unknown write mode %q: use strict or overlay", s)
}

func (r *Replayer) overlay() bool { return r.opts.Writes == WritesOverlay }

// writeRetries bounds how often a write is computed again because a
// recorded event changed its object meanwhile.
const writeRetries = 16

// writePlan applies a write to its collection's timeline (Overlay mode),
// and answers it as the API server would. It returns nil for a request
// that is not a write of a resource.
func (r *Replayer) writePlan(req *http.Request, body []byte) *plan {
	rp, sub, verb := writeOf(req)
	if verb == "" {
		return nil
	}
	accept := req.Header.Get("Accept")
	proto := wire.Accepts(accept, wire.MediaProtobuf) && !wire.Accepts(accept, wire.MediaJSON)
	partial, _ := wire.AcceptsPartial(accept)
	t, info, refused := r.writeTarget(rp, sub, verb)
	if refused != nil {
		return refused
	}
	proto = proto && r.codec.CanProtobuf(t)
	ct := wire.MediaType(req.Header.Get("Content-Type"))
	if ct == wire.MediaProtobuf {
		var err error
		if body, err = writeJSON(r.codec, t, verb, sub, body); err != nil {
			return r.failPlan(http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
		}
		ct = wire.MediaJSON
	}
	w := write.Request{Verb: verb, Subresource: sub, Group: rp.Group, Version: rp.Version, Resource: rp.Resource, Kind: info.Kind,
		Namespaced: info.Namespaced, StatusSubresource: info.Status, Namespace: rp.Namespace, Name: rp.Name, ContentType: ct, Body: body,
		Query: req.URL.Query(), UserAgent: req.Header.Get("User-Agent")}
	dry, err := dryRun(verb, req.URL.Query())
	if err != nil {
		return r.writeError(err, proto)
	}
	w.DryRun = dry
	if p := r.subresourcePlan(t, w, proto); p != nil {
		return p
	}
	if verb == "deletecollection" {
		return r.deleteCollection(req, t, w, proto)
	}
	return r.applyPlan(req, t, w, proto, partial)
}

// failPlan answers a write with a Status of code and reason.
func (r *Replayer) failPlan(code int, reason metav1.StatusReason, format string, a ...any) *plan {
	return r.statusPlan(wire.Status(code, reason, fmt.Sprintf(format, a...), 0), 0, false)
}

// writeTarget returns the timeline a write of verb on rp (and its
// subresource sub) goes to, and what discovery says of its resource; or
// the plan that refuses the write.
func (r *Replayer) writeTarget(rp apipath.Path, sub, verb string) (*timeline.Timeline, discovery.Info, *plan) {
	var info discovery.Info
	if sub != "" && sub != "status" && !simulated(rp, sub, verb) {
		return nil, info, r.failPlan(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"kwrec replay: %s of the %s subresource of %s is not simulated", verb, sub, rp.Resource)
	}
	docs, err := r.discoveryDocs()
	if err != nil {
		return nil, info, r.failPlan(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: discovery: %v", err)
	}
	info, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	if !ok || info.Namespaced != (rp.Namespace != "") {
		return nil, info, r.failPlan(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
	t := r.writeTimeline(rp, info.Kind)
	if why := t.Broken(); why != "" {
		return nil, info, r.failPlan(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"kwrec replay: the timeline of %s cannot be rebuilt: %s", t.Path, why)
	}
	return t, info, nil
}

// writeJSON returns the protobuf body of a write as JSON. A delete's body
// is DeleteOptions, a subresource's its own kind, not an object of the
// resource's kind.
func writeJSON(codec timeline.Codec, t *timeline.Timeline, verb, sub string, body []byte) ([]byte, error) {
	switch {
	case verb == "delete" || verb == "deletecollection":
		return deleteOptionsJSON(t, body)
	case sub != "" && sub != "status" && sub != write.SubresourceApproval:
		return envelopedJSON(t, body)
	}
	return codec.ToJSON(t, body)
}

// applyPlan applies w to t and answers it.
func (r *Replayer) applyPlan(req *http.Request, t *timeline.Timeline, w write.Request, proto, partial bool) *plan {
	res, stored, err := r.applyWrite(t, w)
	if err != nil {
		return r.writeError(err, proto)
	}
	answer := res.Body
	if stored != nil {
		switch {
		case w.Subresource == write.SubresourceScale:
			if answer, err = write.ScaleOf(stored); err != nil {
				return r.writeError(err, proto)
			}
		case bytes.Equal(res.Body, res.Object):
			answer = stored
		}
		r.noteWrite(req, w.Body, res.Code, answer)
	}
	p := r.writeAnswer(t, res.Code, answer, proto, partial)
	for _, w := range res.Warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", w); err == nil {
			p.header.Add("Warning", h)
		}
	}
	return p
}

// dryRun reads a write's dryRun parameter: true for "All", an error with
// the server's 422 for any other value.
func dryRun(verb string, q url.Values) (bool, error) {
	vs := q["dryRun"]
	for _, v := range vs {
		if v != metav1.DryRunAll {
			kind := map[string]string{"create": "CreateOptions", "update": "UpdateOptions", "patch": "PatchOptions"}[verb]
			if kind == "" {
				kind = "DeleteOptions"
			}
			return false, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: kind}, "",
				field.ErrorList{field.NotSupported(field.NewPath("dryRun"), vs, []string{metav1.DryRunAll})})
		}
	}
	return len(vs) > 0, nil
}

// writeOf splits a write's path: the resource, the subresource ("" for
// none) and the API verb; verb is "" for a request that is not a write of
// a resource.
func writeOf(req *http.Request) (rp apipath.Path, sub, verb string) {
	path := strings.TrimSuffix(req.URL.Path, "/")
	rp, ok := apipath.Parse(path)
	if !ok {
		i := strings.LastIndexByte(path, '/')
		if i < 0 {
			return rp, "", ""
		}
		if rp, ok = apipath.Parse(path[:i]); !ok || rp.Name == "" {
			return rp, "", ""
		}
		sub = path[i+1:]
	}
	if verb = edit.WriteVerb(req.Method, rp.Name == ""); verb == "" {
		return rp, "", ""
	}
	return rp, sub, verb
}

// writeAnswer answers a write with the object (or Status) JSON b: in its
// metadata-only form when partial.
func (r *Replayer) writeAnswer(t *timeline.Timeline, code int, b []byte, proto, partial bool) *plan {
	ct := wire.MediaJSON
	if partial {
		if pb, err := wire.PartialMetadata(b, wire.ShapeObject, false); err == nil {
			b, proto = pb, false
		}
	}
	if proto {
		if m, err := wire.MetaJSON(b); err == nil && m.Kind == t.Kind {
			o := timeline.Object{Ref: timeline.Ref{Enc: timeline.JSON, Typed: true}}
			if pb, err := r.codec.Object(t, &o, b, true); err == nil {
				b, ct = pb, wire.MediaProtobuf
			}
		}
	}
	if ct == wire.MediaJSON && !bytes.HasSuffix(b, []byte("\n")) {
		b = append(b, '\n')
	}
	return &plan{status: code, header: http.Header{"Content-Type": {ct}}, pace: r.pacing(nil), end: endEOF,
		frames: []outFrame{dataFrame(b)}}
}

// writeError answers a write with the API server's Status for err.
func (r *Replayer) writeError(err error, proto bool) *plan {
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		st := se.Status()
		return r.statusPlan(&st, 0, proto)
	}
	st := wire.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: "+err.Error(), 0)
	return r.statusPlan(st, 0, proto)
}

// deleteOptionsJSON returns an enveloped protobuf DeleteOptions (the body
// of a typed client's delete) as JSON.
func deleteOptionsJSON(_ *timeline.Timeline, body []byte) ([]byte, error) {
	apiVersion, kind, ms, me, ok := wire.Unenvelope(body)
	if !ok {
		return nil, fmt.Errorf("the request body is not an enveloped protobuf DeleteOptions")
	}
	if kind != "DeleteOptions" {
		// The server's words: its decoder knows only the options kinds
		// (the scheme is named by where apimachinery made it).
		return nil, fmt.Errorf("no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", kind, apiVersion)
	}
	var opts metav1.DeleteOptions
	if err := opts.Unmarshal(body[ms:me]); err != nil {
		return nil, fmt.Errorf("decoding the protobuf request body as DeleteOptions: %v", err)
	}
	opts.TypeMeta = metav1.TypeMeta{Kind: "DeleteOptions", APIVersion: "meta.k8s.io/v1"}
	return json.Marshal(&opts)
}
