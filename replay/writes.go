package replay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/internal/write"
	"github.com/kwrec/kwrec/recorder"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
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
	proto := wire.Accepts(req.Header.Get("Accept"), wire.MediaProtobuf) && !wire.Accepts(req.Header.Get("Accept"), wire.MediaJSON)
	partial, _ := wire.AcceptsPartial(req.Header.Get("Accept"))
	fail := func(code int, reason metav1.StatusReason, format string, a ...any) *plan {
		return r.statusPlan(wire.Status(code, reason, fmt.Sprintf(format, a...), 0), 0, false)
	}
	if sub != "" && sub != "status" && !simulated(rp, sub, verb) {
		return fail(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"kwrec replay: %s of the %s subresource of %s is not simulated", verb, sub, rp.Resource)
	}
	docs, err := r.discoveryDocs()
	if err != nil {
		return fail(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: discovery: %v", err)
	}
	info, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	kind, namespaced := info.Kind, info.Namespaced
	if !ok {
		return fail(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
	if namespaced != (rp.Namespace != "") {
		return fail(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
	}
	t := r.writeTimeline(rp, kind)
	if why := t.Broken(); why != "" {
		return fail(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"kwrec replay: the timeline of %s cannot be rebuilt: %s", t.Path, why)
	}
	proto = proto && r.codec.CanProtobuf(t)
	ct := wire.MediaType(req.Header.Get("Content-Type"))
	if ct == wire.MediaProtobuf {
		// A delete's body is DeleteOptions, a subresource's its own kind,
		// not an object of the resource's kind.
		toJSON := r.codec.ToJSON
		if verb == "delete" || verb == "deletecollection" {
			toJSON = deleteOptionsJSON
		} else if sub != "" && sub != "status" && sub != write.SubresourceApproval {
			toJSON = envelopedJSON
		}
		if body, err = toJSON(t, body); err != nil {
			return fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err)
		}
		ct = wire.MediaJSON
	}
	w := write.Request{Verb: verb, Subresource: sub, Group: rp.Group, Version: rp.Version, Resource: rp.Resource, Kind: kind,
		Namespaced: namespaced, StatusSubresource: info.Status, Namespace: rp.Namespace, Name: rp.Name, ContentType: ct, Body: body,
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
	res, stored, err := r.applyWrite(t, w)
	if err != nil {
		return r.writeError(err, proto)
	}
	answer := res.Body
	if stored != nil {
		switch {
		case sub == write.SubresourceScale:
			if answer, err = write.ScaleOf(stored); err != nil {
				return r.writeError(err, proto)
			}
		case bytes.Equal(res.Body, res.Object):
			answer = stored
		}
		r.noteWrite(req, body, res.Code, answer)
	}
	p := r.writeAnswer(t, res.Code, answer, proto, partial)
	for _, w := range res.Warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", w); err == nil {
			p.header.Add("Warning", h)
		}
	}
	return p
}

// applyWrite is applyOnce, then the garbage collector when the write
// deleted an object or marked it for deletion with its dependents.
func (r *Replayer) applyWrite(t *timeline.Timeline, w write.Request) (res write.Result, stored []byte, err error) {
	res, stored, err = r.applyOnce(t, w)
	if err != nil || stored == nil || r.opts.DisableGarbageCollection {
		return res, stored, err
	}
	if res.Event != write.EventDeleted && !bytes.Contains(stored, []byte(metav1.FinalizerDeleteDependents)) &&
		!bytes.Contains(stored, []byte(metav1.FinalizerOrphanDependents)) {
		return res, stored, nil // most writes: nothing for the collector
	}
	var o struct {
		Metadata metav1.ObjectMeta `json:"metadata"`
	}
	if json.Unmarshal(stored, &o) != nil {
		return res, stored, nil
	}
	m := o.Metadata
	switch {
	case res.Event == write.EventDeleted:
		r.collectGarbage([]types.UID{m.UID})
	case m.DeletionTimestamp != nil && (slices.Contains(m.Finalizers, metav1.FinalizerDeleteDependents) || slices.Contains(m.Finalizers, metav1.FinalizerOrphanDependents)):
		r.gcMarked.Store(true)
		r.collectGarbage(nil)
	}
	return res, stored, nil
}

// applyOnce computes w from the current object and commits it to t,
// again if a recorded event changed the object meanwhile. stored is the
// object as committed, with its resourceVersion; nil for a dry run or a
// write that changed nothing.
func (r *Replayer) applyOnce(t *timeline.Timeline, w write.Request) (res write.Result, stored []byte, err error) {
	for range writeRetries {
		name := w.Name
		suffix, uid := r.nameSuffix()
		if w.Verb == "create" {
			name = createName(w.Body, suffix)
		}
		key := w.Namespace + "/" + name
		cur, exists := t.Current(key)
		var curJSON []byte
		if exists {
			if curJSON, err = r.objectJSON(t, &cur); err != nil {
				return res, nil, err
			}
		}
		st := write.Stamp{Now: r.clock.Now(), UID: uid, Suffix: suffix}
		if w.DryRun && exists {
			// Nothing is stored: the answer carries the version it was
			// computed from, as the server's dry-run storage answers.
			st.RV = strconv.FormatInt(cur.RV, 10)
		}
		if res, err = r.writes.Apply(w, curJSON, st); err != nil {
			return res, nil, err
		}
		if w.DryRun || res.Event == "" {
			return res, nil, nil
		}
		m, err := wire.MetaJSON(res.Object)
		if err != nil {
			return res, nil, fmt.Errorf("the written object: %v", err)
		}
		base := cur.RV
		if res.Marked != nil {
			// A graceful delete's mark, then the delete: two events.
			base, _, err = t.Commit(write.EventModified, m.Key(), m.Labels, base, res.Marked)
			switch {
			case errors.Is(err, timeline.ErrStale):
				continue
			case err != nil:
				return res, nil, fmt.Errorf("%s: %v", t.Path, err)
			}
		}
		_, stored, err = t.Commit(res.Event, m.Key(), m.Labels, base, res.Object)
		switch {
		case errors.Is(err, timeline.ErrStale) && res.Marked == nil:
			continue
		case err != nil:
			return res, nil, fmt.Errorf("%s: %v", t.Path, err)
		}
		return res, stored, nil
	}
	return res, nil, apierrors.NewConflict(schema.GroupResource{Group: w.Group, Resource: w.Resource}, w.Name,
		fmt.Errorf("kwrec replay: the object changed %d times while the write was computed; try again", writeRetries))
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
	switch req.Method {
	case http.MethodPost:
		verb = "create"
	case http.MethodPut:
		verb = "update"
	case http.MethodPatch:
		verb = "patch"
	case http.MethodDelete:
		verb = "delete"
		if rp.Name == "" {
			verb = "deletecollection"
		}
	default:
		return rp, "", ""
	}
	return rp, sub, verb
}

// writeTimeline returns the timeline a write of rp's collection goes to:
// the all-namespaces one when the recording has it (so its watchers see
// every write), else the collection's own, else a new empty one.
func (r *Replayer) writeTimeline(rp apipath.Path, kind string) *timeline.Timeline {
	if t, _ := r.timelineFor(rp); t != nil {
		return t
	}
	t, _ := r.made(rp, kind)
	return t
}

// made returns the timeline of a collection the cassette never recorded,
// of a resource of kind kind, and the namespace to filter it by: empty as
// of the newest resourceVersion recorded, made at its first request and
// kept (in Overlay mode the code under test writes to it). A resource
// never recorded in any namespace has one timeline, of all namespaces, so
// that what is written in one namespace is listed and watched across all
// of them, as on the server.
func (r *Replayer) made(rp apipath.Path, kind string) (*timeline.Timeline, string) {
	rp.Name = ""
	ns := ""
	if rp.Namespace != "" && !r.recordedSome(rp) {
		ns, rp.Namespace = rp.Namespace, ""
	}
	path := rp.Collection()
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.empties[path]; t != nil {
		return t, ns
	}
	var objs [][]byte
	rv := r.newestRV()
	if rp.Group == "" && rp.Resource == "namespaces" {
		objs = r.namespaces(rv)
	}
	t := timeline.Empty(path, rp, kind, rv, r.overlay(), objs...)
	r.empties[path] = t
	return t, ns
}

// namespaces returns the Namespace objects of a recording that never
// listed namespaces: the four every cluster has, and each one a recorded
// collection lives in, Active (kubectl asks for the namespace when a get
// in it finds nothing, and reports the namespace missing if it is).
func (r *Replayer) namespaces(rv int64) [][]byte {
	ns := map[string]bool{"default": true, "kube-system": true, "kube-public": true, "kube-node-lease": true}
	for _, t := range r.tlOrder {
		t.Namespaces(ns)
	}
	at := r.header.RecordedAt.UTC().Format(time.RFC3339)
	var out [][]byte
	for _, n := range slices.Sorted(maps.Keys(ns)) {
		uid := uuid.NewSHA1(uuid.NameSpaceOID, []byte("kwrec namespace "+n))
		out = append(out, fmt.Appendf(nil, `{"kind":"Namespace","apiVersion":"v1","metadata":{"name":%q,"uid":%q,"resourceVersion":"%d","creationTimestamp":%q,"labels":{"kubernetes.io/metadata.name":%q}},"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, n, uid, rv, at, n))
	}
	return out
}

// newestRV is the newest resourceVersion recorded of any collection: they
// are one etcd revision sequence.
func (r *Replayer) newestRV() int64 {
	var rv int64
	for _, t := range r.tlOrder {
		rv = max(rv, t.Last())
	}
	return rv
}

// objectJSON returns the current bytes of o as typed JSON with its
// (scaled) resourceVersion.
func (r *Replayer) objectJSON(t *timeline.Timeline, o *timeline.Object) ([]byte, error) {
	raws, err := r.raws(t, []timeline.Object{*o})
	if err != nil {
		return nil, err
	}
	b, err := r.codec.Object(t, o, raws[0], false)
	return bytes.TrimRight(b, "\n"), err
}

// reader reads t's objects for a field selector that looks into them.
func (r *Replayer) reader(t *timeline.Timeline) timeline.ObjectReader {
	return func(o *timeline.Object) ([]byte, error) { return r.objectJSON(t, o) }
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

// createName is the name a create makes: the body's name, else its
// generateName plus suffix.
func createName(body []byte, suffix string) string {
	var o struct {
		Metadata struct{ Name, GenerateName string }
	}
	if json.Unmarshal(body, &o) != nil || o.Metadata.Name != "" {
		return o.Metadata.Name
	}
	if o.Metadata.GenerateName != "" {
		return o.Metadata.GenerateName + suffix
	}
	return ""
}

// nameSuffix is five characters from the API server's alphabet for
// generateName (no vowels, no confusable digits), and uid a UUID, both
// from the replay's own seeded sequence: a replay makes the same names and
// uids every time, so what a test wrote compares with a golden file.
func (r *Replayer) nameSuffix() (suffix, uid string) {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	r.rmu.Lock()
	defer r.rmu.Unlock()
	var b [5]byte
	for i := range b {
		b[i] = alphabet[r.rand.IntN(len(alphabet))]
	}
	var u [16]byte
	for i := range u {
		u[i] = byte(r.rand.Uint32())
	}
	u[6] = u[6]&0x0f | 0x40 // version 4
	u[8] = u[8]&0x3f | 0x80 // RFC 4122 variant
	return string(b[:]), fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}

// noteWrite keeps an applied write, and appends it to Options.WritesOut.
func (r *Replayer) noteWrite(req *http.Request, body []byte, code int, answer []byte) {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	at := r.clock.Since(r.started)
	h := http.Header{}
	for _, k := range []string{"Content-Type", "Accept", "User-Agent"} {
		if v := req.Header.Get(k); v != "" {
			h.Set(k, v)
		}
	}
	if wire.MediaType(h.Get("Content-Type")) == wire.MediaProtobuf {
		h.Set("Content-Type", wire.MediaJSON) // the body kept is the JSON it was read as
	}
	in := &cassettes.Interaction{
		ID:       len(r.written) + 1,
		At:       at,
		Request:  cassettes.Request{Method: req.Method, URL: req.URL.String(), Header: h, Body: body},
		Response: &cassettes.Response{Status: code, Header: http.Header{"Content-Type": {wire.MediaJSON}}},
		Frames:   []cassettes.Frame{{Data: answer}},
		End:      &cassettes.End{Reason: cassettes.EndEOF},
	}
	// As in any cassette: no Secret data, no token (the answers here do
	// not come from a real server, but the code's bodies may hold them).
	recorder.RedactInteraction(in, recorder.Options{})
	r.written = append(r.written, in)
	if r.opts.WritesOut != nil {
		if _, err := r.opts.WritesOut.WriteInteraction(in); err != nil && r.writesErr == nil {
			r.writesErr = err
		}
	}
}

// Writes returns the writes applied in Overlay mode, in order: each an
// interaction with the request, its JSON body, and the answer.
func (r *Replayer) Writes() []*cassettes.Interaction {
	r.wmu.Lock()
	defer r.wmu.Unlock()
	return append([]*cassettes.Interaction(nil), r.written...)
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
