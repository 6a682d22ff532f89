package overlay

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/discovery"
	"github.com/kwrec/kwrec/replay/internal/edit"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// Config is what a [Writer] needs besides its world.
type Config struct {
	// Engine applies a write to one object.
	Engine *write.Engine
	Codec  timeline.Codec
	Docs   Docs
	// Clock stamps what is written; Started is the replay's start, from
	// which a noted write's time counts.
	Clock   clock.Clock
	Started time.Time
	// DisableGarbageCollection leaves the dependents of what is deleted
	// as they are.
	DisableGarbageCollection bool
	// Out, when set, receives every write applied, as it is noted.
	Out *cassettes.Writer
	// Redact takes what must never land in a cassette (Secret data,
	// tokens) out of each write kept, as a recorder does, before it is
	// kept or written to Out. Required.
	Redact func(*cassettes.Interaction)
	// Logf, when set, is told once of each custom resource written that
	// has no definition in the world, so no schema.
	Logf func(format string, args ...any)
}

// Writer applies writes to a [World] as kube-apiserver would. Its lock
// guards its random sequence and what it has written; the world's
// timelines guard themselves.
type Writer struct {
	world *World
	cfg   Config
	// gcMarked: a write may have left an object waiting for the garbage
	// collector (the orphan or foregroundDeletion finalizer).
	gcMarked atomic.Bool

	mu         sync.Mutex
	rand       *rand.Rand // names and uids of writes
	written    []*cassettes.Interaction
	schemaless map[string]bool // the custom resources told of to Logf
}

// NewWriter returns a Writer of world. Its names and uids come from a
// sequence seeded the same for every Writer: a replay makes the same ones
// every time, so what a test wrote compares with a golden file.
func NewWriter(world *World, cfg Config) *Writer {
	return &Writer{world: world, cfg: cfg, rand: rand.New(rand.NewPCG(1, 2))}
}

// Answer is the API server's answer to a write, for the replay to encode
// as the client asked and serve.
type Answer struct {
	// Code is the HTTP status.
	Code int
	// Body is the JSON answered (an object or a list); nil when Status
	// is set.
	Body []byte
	// Status is the answer when it is a Status (a refusal), with
	// RetryAfter seconds when above 0.
	Status     *metav1.Status
	RetryAfter int
	// Timeline is the collection written; Proto asks for Body in
	// protobuf when it is an object of the collection's kind, Partial for
	// its metadata-only form.
	Timeline       *timeline.Timeline
	Proto, Partial bool
	// Warnings are the Warning header values.
	Warnings []string
}

// writeRetries bounds how often a write is computed again because a
// recorded event changed its object meanwhile.
const writeRetries = 16

// Write applies req, a write whose body is body, to the world, and
// answers it as the API server would; ok is false for a request that is
// not a write of a resource.
func (wr *Writer) Write(req *http.Request, body []byte) (a Answer, ok bool) {
	if a, ok := wr.nameless(req); ok {
		return a, true
	}
	rp, sub, verb := writeOf(req)
	if verb == "" {
		return Answer{}, false
	}
	accept := req.Header.Get("Accept")
	proto := wire.Accepts(accept, wire.MediaProtobuf) && !wire.Accepts(accept, wire.MediaJSON)
	partial, _ := wire.AcceptsPartial(accept)
	t, info, refused := wr.target(rp, sub, verb)
	if refused != nil {
		return *refused, true
	}
	proto = proto && wr.cfg.Codec.CanProtobuf(t)
	ct := wire.MediaType(req.Header.Get("Content-Type"))
	if ct == wire.MediaProtobuf {
		var err error
		if body, err = writeJSON(wr.cfg.Codec, t, verb, sub, body); err != nil {
			return fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, "%v", err), true
		}
		ct = wire.MediaJSON
	}
	w := write.Request{Verb: verb, Subresource: sub, Group: rp.Group, Version: rp.Version, Resource: rp.Resource, Kind: info.Kind,
		Namespaced: info.Namespaced, StatusSubresource: info.Status, Namespace: rp.Namespace, Name: rp.Name, ContentType: ct, Body: body,
		Query: req.URL.Query(), UserAgent: req.Header.Get("User-Agent")}
	dry, err := dryRun(verb, req.URL.Query(), body)
	if err != nil {
		return errorAnswer(err, proto), true
	}
	w.DryRun = dry
	if w.Custom, err = wr.custom(rp); err != nil {
		return fail(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: %v", err), true
	}
	if a, ok := wr.postSubresource(t, w, proto); ok {
		return a, true
	}
	if verb == "deletecollection" {
		return wr.deleteCollection(req, t, w, proto), true
	}
	return wr.apply(req, t, w, proto, partial), true
}

// nameless answers a write whose path has an empty name
// (".../configmaps/", ".../widgets//status", ".../pods//eviction") as
// kube-apiserver does: a custom resource's handler, and a built-in
// resource's subresource handler, read the path and want a name (400); a
// built-in resource's routes have no update or patch on a collection
// (405).
func (wr *Writer) nameless(req *http.Request) (Answer, bool) {
	p := req.URL.Path
	var rp apipath.Path
	switch i := strings.Index(p, "//"); {
	case i > 0:
		var ok bool
		if rp, ok = apipath.Parse(p[:i]); !ok || rp.Name != "" {
			return Answer{}, false
		}
		sub := strings.TrimSuffix(p[i+2:], "/")
		if verb := edit.WriteVerb(req.Method, false); verb != "" && sub != "status" && simulated(rp, wr.customOrNil(rp), sub, verb) {
			return fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, "name must be provided"), true
		}
	case strings.HasSuffix(p, "/"):
		var ok bool
		if rp, ok = apipath.Parse(strings.TrimSuffix(p, "/")); !ok || rp.Name != "" {
			return Answer{}, false
		}
	default:
		return Answer{}, false
	}
	if req.Method != http.MethodPut && req.Method != http.MethodPatch {
		return Answer{}, false
	}
	if c, err := wr.custom(rp); err == nil && c != nil {
		return fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, "name must be provided"), true
	}
	if strings.Contains(p, "//") {
		return Answer{}, false
	}
	return Answer{Code: http.StatusMethodNotAllowed, Status: &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Message: "the server does not allow this method on the requested resource",
		Reason: metav1.StatusReasonMethodNotAllowed, Details: &metav1.StatusDetails{}, Code: http.StatusMethodNotAllowed}}, true
}

// fail answers a write with a Status of code and reason.
func fail(code int, reason metav1.StatusReason, format string, a ...any) Answer {
	return Answer{Code: code, Status: wire.Status(code, reason, fmt.Sprintf(format, a...), 0)}
}

// errorAnswer answers a write with the API server's Status for err: its
// own for an API error or a timeline's, else a 500 that names kwrec.
func errorAnswer(err error, proto bool) Answer {
	var se *timeline.StatusError
	if errors.As(err, &se) {
		return Answer{Code: int(se.Status.Code), Status: se.Status, RetryAfter: se.RetryAfter, Proto: proto}
	}
	var as apierrors.APIStatus
	if errors.As(err, &as) {
		st := as.Status()
		return Answer{Code: int(st.Code), Status: &st, Proto: proto}
	}
	return Answer{Code: http.StatusInternalServerError, Proto: proto,
		Status: wire.Status(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: "+err.Error(), 0)}
}

// object answers a write with the object (or list) JSON b.
func object(t *timeline.Timeline, code int, b []byte, proto, partial bool) Answer {
	return Answer{Code: code, Body: b, Timeline: t, Proto: proto, Partial: partial}
}

// target returns the timeline a write of verb on rp (and its subresource
// sub) goes to, and what discovery says of its resource; or the answer
// that refuses the write.
func (wr *Writer) target(rp apipath.Path, sub, verb string) (*timeline.Timeline, discovery.Info, *Answer) {
	var info discovery.Info
	if sub != "" && sub != "status" && !simulated(rp, wr.customOrNil(rp), sub, verb) {
		a := fail(http.StatusMethodNotAllowed, metav1.StatusReasonMethodNotAllowed,
			"kwrec replay: %s of the %s subresource of %s is not simulated", verb, sub, rp.Resource)
		return nil, info, &a
	}
	docs, err := wr.cfg.Docs()
	if err != nil {
		a := fail(http.StatusInternalServerError, metav1.StatusReasonInternalError, "kwrec replay: discovery: %v", err)
		return nil, info, &a
	}
	info, ok := docs.Lookup(rp.Group, rp.Version, rp.Resource)
	if !ok || info.Namespaced != (rp.Namespace != "") {
		a := fail(http.StatusNotFound, metav1.StatusReasonNotFound, "the server could not find the requested resource")
		return nil, info, &a
	}
	t := wr.world.ForWrite(rp, info.Kind)
	if why := t.Broken(); why != "" {
		a := fail(http.StatusInternalServerError, metav1.StatusReasonInternalError,
			"kwrec replay: the timeline of %s cannot be rebuilt: %s", t.Path, why)
		return nil, info, &a
	}
	return t, info, nil
}

// writeJSON returns the protobuf body of a write as JSON. A delete's body
// is DeleteOptions, a subresource's its own kind, not an object of the
// resource's kind.
func writeJSON(codec timeline.Codec, t *timeline.Timeline, verb, sub string, body []byte) ([]byte, error) {
	switch {
	case verb == "delete" || verb == "deletecollection":
		return deleteOptionsJSON(body)
	case sub != "" && sub != "status" && sub != write.SubresourceApproval:
		return envelopedJSON(body)
	}
	return codec.ToJSON(t, body)
}

// apply applies w to t and answers it.
func (wr *Writer) apply(req *http.Request, t *timeline.Timeline, w write.Request, proto, partial bool) Answer {
	res, stored, err := wr.applyWrite(t, w)
	if err != nil {
		// The body was decoded before the write failed: its warnings
		// (unknown and duplicate fields) come with the error, as the
		// server's do.
		return withWarnings(errorAnswer(err, proto), res.Warnings)
	}
	answer := res.Body
	if stored != nil {
		switch {
		case w.Subresource == write.SubresourceScale:
			if answer, err = write.ScaleOf(stored, w.Custom); err != nil {
				return errorAnswer(err, proto)
			}
		case bytes.Equal(res.Body, res.Object):
			answer = stored
		}
		wr.note(req, w.Body, res.Code, answer)
	}
	return withWarnings(object(t, res.Code, answer, proto, partial), res.Warnings)
}

// withWarnings returns a with a Warning header for each of warnings.
func withWarnings(a Answer, warnings []string) Answer {
	for _, w := range warnings {
		if h, err := utilnet.NewWarningHeader(299, "-", w); err == nil {
			a.Warnings = append(a.Warnings, h)
		}
	}
	return a
}

// dryRun reads a write's dryRun: the query parameter, and for a delete
// the DeleteOptions body's too, where client-go and controller-runtime
// send it (the server reads both); true for "All", an error with the
// server's 422 for any other value.
func dryRun(verb string, q url.Values, body []byte) (bool, error) {
	vs := q["dryRun"]
	if (verb == "delete" || verb == "deletecollection") && len(body) > 0 {
		var opts struct {
			DryRun []string `json:"dryRun"`
		}
		if json.Unmarshal(body, &opts) == nil {
			vs = append(vs, opts.DryRun...)
		}
	}
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

// deleteOptionsJSON returns an enveloped protobuf DeleteOptions (the body
// of a typed client's delete) as JSON.
func deleteOptionsJSON(body []byte) ([]byte, error) {
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

// IsWrite reports whether req is a write of a resource or of one of its
// subresources.
func IsWrite(req *http.Request) bool {
	_, _, verb := writeOf(req)
	return verb != ""
}

// customOrNil is custom, nil when the definition cannot be read (the
// write then fails on it).
func (wr *Writer) customOrNil(rp apipath.Path) *write.CustomResource {
	c, _ := wr.custom(rp)
	return c
}

// custom returns what the world's CustomResourceDefinition of rp's
// resource says of rp's version; nil when the world holds none.
func (wr *Writer) custom(rp apipath.Path) (*write.CustomResource, error) {
	c, err := wr.world.Custom(rp)
	if err == nil && c == nil {
		if _, ok := wr.world.Definition(rp); !ok && strings.Contains(rp.Group, ".") && !wr.builtin(rp) {
			wr.tellSchemaless(rp.Resource + "." + rp.Group)
		}
	}
	return c, err
}

// builtin reports whether rp's resource is one kube-apiserver serves
// itself.
func (wr *Writer) builtin(rp apipath.Path) bool {
	d, err := discovery.Builtin()
	if err != nil {
		return false
	}
	_, ok := d.Lookup(rp.Group, rp.Version, rp.Resource)
	return ok
}

// tellSchemaless tells Config.Logf, once, that the custom resource
// resource is written with no schema.
func (wr *Writer) tellSchemaless(resource string) {
	if wr.cfg.Logf == nil {
		return
	}
	wr.mu.Lock()
	told := wr.schemaless[resource]
	if wr.schemaless == nil {
		wr.schemaless = map[string]bool{}
	}
	wr.schemaless[resource] = true
	wr.mu.Unlock()
	if !told {
		wr.cfg.Logf("%s has no CustomResourceDefinition in the recording or the CRDs given: its objects are kept as written, with no pruning, defaults or validation (give its manifest with --crds)", resource)
	}
}
