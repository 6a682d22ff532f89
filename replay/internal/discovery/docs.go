package discovery

import (
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// builtinArchive is the snapshot of kube-apiserver v1.37.2's discovery (see
// the package doc). A string, not a []byte: nothing can change it.
//
//go:embed builtin.kwrec.zst
var builtinArchive string

// Content types of the answers. The aggregated one is what the API server
// labels apidiscovery.k8s.io/v2 with; client-go tells the two forms apart by
// it, not by the body.
const (
	jsonContentType       = "application/json"
	aggregatedContentType = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)

// aggregatedPrefix is the archive directory of the aggregated documents of
// /api and /apis.
const aggregatedPrefix = "aggregated/"

// required are the archive names without which a snapshot is not one.
var required = []string{"version", "api", "api/v1", "apis", aggregatedPrefix + "api", aggregatedPrefix + "apis", "openapi/v3", "openapi/v3/api/v1"}

// Docs is a set of discovery documents. It is immutable, so one Docs serves
// concurrent requests; [Docs.With] returns a new one.
type Docs struct {
	// files maps an archive name (the path without its leading slash, or
	// aggregated/api, aggregated/apis) to its body.
	files map[string][]byte
	// types maps an archive name to the Content-Type the server sent it
	// with; a document [Docs.With] added has none and is JSON.
	types map[string]string
	// parsed caches Lookup's parse of a group version's document, by path.
	parsed sync.Map
	// v2 decodes the OpenAPI v2 document once.
	v2 func() ([]byte, error)
}

// Builtin returns the embedded discovery of kube-apiserver v1.37.2: the
// snapshot (megabytes of documents) is decompressed at the first call, and
// every call returns those same Docs, which nothing can change.
func Builtin() (*Docs, error) { return builtin() }

var builtin = sync.OnceValues(decodeBuiltin)

func decodeBuiltin() (*Docs, error) {
	files, types, err := decodeArchive([]byte(builtinArchive))
	if err != nil {
		return nil, fmt.Errorf("discovery: the embedded snapshot: %w", err)
	}
	for _, n := range required {
		if _, ok := files[n]; !ok {
			return nil, fmt.Errorf("discovery: the embedded snapshot has no %s; regenerate it (see the package doc)", n)
		}
	}
	v2 := files[openAPIV2]
	return &Docs{files: files, types: types, v2: sync.OnceValues(func() ([]byte, error) {
		if v2 == nil {
			return nil, errors.New("it holds none; regenerate it (see the package doc)")
		}
		// Kept as protojson, which compresses with the other documents;
		// encoded back deterministically it is the server's bytes.
		var doc openapi_v2.Document
		if err := protojson.Unmarshal(v2, &doc); err != nil {
			return nil, err
		}
		return proto.MarshalOptions{Deterministic: true}.Marshal(&doc)
	})}, nil
}

// Answer returns the answer of the API server to a GET of path (a query,
// as in the ?hash= of the OpenAPI index, is ignored) with the Accept header
// accept, host being the request's Host (it goes in the
// serverAddressByClientCIDRs of /api and /apis).
//
// ok is false when path is not a discovery path at all (an object, a
// collection, /healthz, /openapi/v2, which the snapshot does not hold): the
// caller answers it. Otherwise status is 200 with the document and the
// Content-Type the server sent it with, or 404 with a metav1.Status body
// for a group, version or OpenAPI document it does not serve. The
// aggregated form of /api and /apis is served when accept ranks it first
// (see the package doc), the legacy one otherwise.
//
// body is shared with d and every other caller: do not modify it.
func (d *Docs) Answer(path, accept, host string) (status int, contentType string, body []byte, ok bool) {
	path, _, _ = strings.Cut(path, "?")
	name, ok := archiveName(path)
	if !ok {
		return 0, "", nil, false
	}
	if name == openAPIV2 {
		return d.openAPIV2(accept)
	}
	if (name == "api" || name == "apis") && wantsAggregated(accept) {
		name = aggregatedPrefix + name
	}
	b, found := d.files[name]
	if !found {
		return http.StatusNotFound, jsonContentType, notFoundBody(), true
	}
	ctype := d.types[name]
	if ctype == "" {
		ctype = jsonContentType
	}
	return http.StatusOK, ctype, withHost(b, host), true
}

// IsPath reports whether [Docs.Answer] answers a GET of path (a query
// ignored): whether path is one of the API server's discovery paths.
func IsPath(path string) bool {
	path, _, _ = strings.Cut(path, "?")
	_, ok := archiveName(path)
	return ok
}

// archiveName maps a discovery path to its archive name; ok is false for a
// path that is not discovery. Every path the API server routes to its
// discovery handlers counts, known to the snapshot or not: /api/V, /apis/G,
// /apis/G/V, and everything under /openapi/v3.
func archiveName(path string) (name string, ok bool) {
	name = strings.TrimPrefix(strings.TrimSuffix(path, "/"), "/")
	segs := strings.Split(name, "/")
	switch {
	case name == "version", name == "api", name == "apis", name == "openapi/v3", name == openAPIV2:
	case segs[0] == "api" && len(segs) == 2:
	case segs[0] == "apis" && (len(segs) == 2 || len(segs) == 3):
	case len(segs) > 2 && segs[0] == "openapi" && segs[1] == "v3":
	default:
		return "", false
	}
	return name, true
}

// notFoundBody is the body kube-apiserver sends for an unknown core
// version (/api/v2). For an unknown group version it sends Go's plain-text
// "404 page not found", and an empty body for an unknown OpenAPI document;
// client-go makes the same NotFound error of all three, and the Status
// tells a person (and a test) more.
func notFoundBody() []byte {
	st := metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusFailure,
		Message:  "the server could not find the requested resource",
		Reason:   metav1.StatusReasonNotFound,
		Details:  &metav1.StatusDetails{},
		Code:     http.StatusNotFound,
	}
	b, _ := json.Marshal(st)
	return append(b, '\n')
}

// jsonString returns s quoted as a JSON string, without the quotes.
func jsonString(s string) ([]byte, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return b[1 : len(b)-1], nil
}

// Info is what discovery says of one resource.
type Info struct {
	Kind       string
	Namespaced bool
	// Status says the resource has a status subresource.
	Status bool
}

// Lookup returns what the legacy discovery of group/version says of
// resource; ok is false when the docs do not know it. The group version's
// document is parsed once and kept.
func (d *Docs) Lookup(group, version, resource string) (info Info, ok bool) {
	path := "/api/" + version
	if group != "" {
		path = "/apis/" + group + "/" + version
	}
	v, done := d.parsed.Load(path)
	if !done {
		v, _ = d.parsed.LoadOrStore(path, d.parse(path))
	}
	info, ok = v.(map[string]Info)[resource]
	return info, ok
}

// parse reads the legacy discovery document at path into Infos by
// resource name, none when it has none.
func (d *Docs) parse(path string) map[string]Info {
	out := map[string]Info{}
	status, _, body, found := d.Answer(path, jsonContentType, "")
	if !found || status != http.StatusOK {
		return out
	}
	var list metav1.APIResourceList
	if json.Unmarshal(body, &list) != nil {
		return out
	}
	for _, r := range list.APIResources {
		if res, sub, isSub := strings.Cut(r.Name, "/"); isSub {
			if sub == "status" {
				i := out[res]
				i.Status = true
				out[res] = i
			}
			continue
		}
		i := out[r.Name]
		i.Kind, i.Namespaced = r.Kind, r.Namespaced
		out[r.Name] = i
	}
	for name, i := range out {
		if i.Kind == "" { // a subresource of nothing listed
			delete(out, name)
		}
	}
	return out
}

// openAPIV2 is the archive name of the OpenAPI v2 document, which the
// snapshot holds as the protojson of the server's protobuf form (the
// archive is text). kubectl reads it to validate a List.
const openAPIV2 = "openapi/v2"

// OpenAPIV2Protobuf is the media type of the OpenAPI v2 document in
// protobuf, which client-go's discovery client asks for.
const OpenAPIV2Protobuf = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"

// openAPIV2 answers a GET of /openapi/v2: the document in protobuf to a
// client that accepts it, as client-go asks for it; ok is false for any
// other Accept (the snapshot has no JSON form), left to the caller.
func (d *Docs) openAPIV2(accept string) (status int, contentType string, body []byte, ok bool) {
	if !wire.Accepts(accept, OpenAPIV2Protobuf) {
		return 0, "", nil, false
	}
	b, err := d.v2()
	if err != nil {
		st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
			Message: "kwrec replay: the OpenAPI v2 document of the snapshot: " + err.Error(), Reason: metav1.StatusReasonInternalError, Code: http.StatusInternalServerError}
		b, _ := json.Marshal(st)
		return http.StatusInternalServerError, jsonContentType, b, true
	}
	return http.StatusOK, d.types[openAPIV2], b, true
}

// MetaSchemas returns the OpenAPI schemas of the snapshot's core v1
// document (meta.k8s.io's ObjectMeta and what it references among them),
// the static part the apiextensions-apiserver builds a custom resource's
// server-side apply schema on. Each call decodes them anew: the caller
// owns them.
func (d *Docs) MetaSchemas() (map[string]*spec.Schema, error) {
	var doc spec3.OpenAPI
	if err := json.Unmarshal(d.files["openapi/v3/api/v1"], &doc); err != nil {
		return nil, fmt.Errorf("discovery: openapi/v3/api/v1: %w", err)
	}
	if doc.Components == nil {
		return nil, errors.New("discovery: openapi/v3/api/v1 has no components")
	}
	return doc.Components.Schemas, nil
}
