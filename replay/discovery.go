package replay

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	openapibuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/spec3"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/discovery"
	"github.com/kwrec/kwrec/replay/internal/overlay"
)

// discoveryPlan answers a GET of a discovery path (/version, /api, /apis,
// group versions, OpenAPI v3) the replay could not match: with the last
// recorded answer to the same path whose form the client takes, as often
// as it is asked, else with kube-apiserver v1.37.2's own discovery of the
// built-in resources (short names, categories, verbs and OpenAPI included,
// so kubectl get cm, get all and explain work) plus the resources the
// cassette records that it does not know (CRDs). It returns nil for any
// other path. In process and through [Server] alike.
func (vw *views) discoveryPlan(req *http.Request) *plan {
	if req.Method != http.MethodGet || !discovery.IsPath(req.URL.Path) {
		return nil
	}
	accept := req.Header.Get("Accept")
	if p := vw.recordedDiscovery(req.URL.Path, accept); p != nil && !vw.definitionsWritten() {
		return p
	}
	if strings.TrimSuffix(req.URL.Path, "/") == "/version" && vw.header.Server != "" {
		return vw.dataPlan(http.StatusOK, wire.MediaJSON, versionJSON(vw.header.Server))
	}
	docs, err := vw.discoveryDocs()
	if err != nil {
		st := wire.Status(http.StatusInternalServerError, "", "kwrec replay: built-in discovery: "+err.Error(), 0)
		return vw.statusPlan(st, 0, false)
	}
	status, ct, body, ok := docs.Answer(req.URL.Path, accept, req.Host)
	if !ok {
		return nil
	}
	return vw.dataPlan(status, ct, body)
}

func (vw *views) dataPlan(status int, ct string, body []byte) *plan {
	return &plan{status: status, header: http.Header{"Content-Type": {ct}}, pace: vw.pace, end: endEOF,
		frames: []outFrame{dataFrame(body)}}
}

// recordedDiscovery returns the last recorded 200 answer to path that a
// client with this Accept takes: an aggregated document (its Content-Type
// has as=APIGroupDiscoveryList) only to a client that asks for that form.
func (vw *views) recordedDiscovery(path, accept string) *plan {
	path = strings.TrimSuffix(path, "/")
	for i := len(vw.ivs) - 1; i >= 0; i-- {
		in := vw.ivs[i].in
		u, err := url.Parse(in.Request.URL)
		if err != nil || in.Response == nil || in.Response.Status != http.StatusOK || strings.TrimSuffix(u.Path, "/") != path {
			continue
		}
		ct := in.Response.Header.Get("Content-Type")
		if accept != "" && !wire.Accepts(accept, ct) {
			continue
		}
		if _, params, _ := mime.ParseMediaType(ct); params["as"] != "" && !wire.AcceptsAs(accept, params["as"]) {
			continue
		}
		body, err := objects{vw.src}.body(in)
		if err != nil {
			st := wire.Status(http.StatusInternalServerError, "", "kwrec replay: "+err.Error(), 0)
			return vw.statusPlan(st, 0, false)
		}
		return vw.dataPlan(http.StatusOK, ct, body)
	}
	return nil
}

// discoveryDocs returns the discovery answered when the cassette did not
// record it: the built-in one, plus the resources of the world's
// CustomResourceDefinitions (recorded or written by the code under test,
// with their OpenAPI v3 documents), plus every other collection recorded.
// It is built again only when the definitions change.
func (vw *views) discoveryDocs() (*discovery.Docs, error) {
	// Every write asks: the definitions are read only when they changed.
	key := vw.crdsKey()
	vw.discMu.Lock()
	defer vw.discMu.Unlock()
	if vw.discBuilt && vw.discKey == key {
		return vw.disc, vw.discErr
	}
	vw.disc, vw.discErr = vw.buildDiscovery(vw.worldCRDs(key.t))
	vw.discKey, vw.discBuilt = key, true
	return vw.disc, vw.discErr
}

func (vw *views) buildDiscovery(crds []apiextensionsv1.CustomResourceDefinition) (*discovery.Docs, error) {
	d, err := discovery.Builtin()
	if err != nil {
		return nil, err
	}
	var verbs []string // get, list, watch
	if vw.writes {
		verbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	}
	// The definitions first: they know the scope, names and subresources
	// of resources that were perhaps never listed.
	extra := crdResources(crds, verbs)
	for _, t := range vw.world.Recorded() {
		if t.Kind == "" {
			continue
		}
		extra = append(extra, discovery.Resource{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
			Kind: t.Kind, Namespaced: t.Namespaced(), Verbs: verbs})
	}
	if d, err = d.With(extra); err != nil {
		return nil, err
	}
	return d.WithOpenAPI(crdOpenAPI(crds))
}

// recordedCRD returns the CustomResourceDefinition name as a recorded GET
// of it answered (kwrec record records the definition of each custom
// resource it records), for a world that holds no list of definitions.
func (vw *views) recordedCRD(name string) ([]byte, bool) {
	path := "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + name
	for i := len(vw.ivs) - 1; i >= 0; i-- {
		in := vw.ivs[i].in
		u, err := url.Parse(in.Request.URL)
		if err != nil || in.Response == nil || in.Response.Status != http.StatusOK || u.Path != path ||
			!wire.Accepts(wire.MediaJSON, in.Response.Header.Get("Content-Type")) {
			continue
		}
		body, err := objects{vw.src}.body(in)
		return body, err == nil
	}
	return nil, false
}

// definitionsWritten reports whether the code under test wrote a
// CustomResourceDefinition: the recorded discovery no longer says what
// is served then, and kwrec's own is answered instead.
func (vw *views) definitionsWritten() bool {
	t, _ := vw.world.For(overlay.CRDPath)
	return t != nil && t.Takes() && len(t.Writes()) > 0
}

// crdsKey names one state of the world's CustomResourceDefinitions.
type crdsKey struct {
	t              *timeline.Timeline
	newest, writes int64
}

// worldCRDs returns the world's CustomResourceDefinitions: those of t,
// its timeline of them (see listedCRDs), then those recorded by a GET of
// their own.
func (vw *views) worldCRDs(t *timeline.Timeline) []apiextensionsv1.CustomResourceDefinition {
	out := listedCRDs(vw.world, t)
	// Then those recorded by a GET of their own (kwrec record records the
	// definition of each custom resource it records).
	for _, t := range vw.world.Recorded() {
		name := t.Res.Resource + "." + t.Res.Group
		if !strings.Contains(t.Res.Group, ".") || slices.ContainsFunc(out, func(c apiextensionsv1.CustomResourceDefinition) bool { return c.Name == name }) {
			continue
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if b, ok := vw.recordedCRD(name); ok && json.Unmarshal(b, &crd) == nil {
			out = append(out, crd)
		}
	}
	return out
}

// crdsKey is the key of the world's definitions as they are now.
func (vw *views) crdsKey() crdsKey {
	t, _ := vw.world.For(overlay.CRDPath)
	if t == nil || t.Broken() != "" {
		return crdsKey{}
	}
	return crdsKey{t: t, newest: t.Newest(), writes: int64(len(t.Writes()))}
}

// listedCRDs returns the CustomResourceDefinitions of t, the world's
// timeline of them (nil for none): every one recorded, as of the end of
// the recording, with every write made to them so far.
func listedCRDs(world *overlay.World, t *timeline.Timeline) []apiextensionsv1.CustomResourceDefinition {
	if t == nil {
		return nil
	}
	sel, err := t.Selector(url.Values{}, "", nil)
	if err != nil {
		return nil
	}
	l, err := t.List(url.Values{"resourceVersion": {strconv.FormatInt(max(t.Last(), t.Newest()), 10)}, "resourceVersionMatch": {"Exact"}}, sel)
	if err != nil {
		return nil
	}
	var out []apiextensionsv1.CustomResourceDefinition
	for i := range l.Items {
		b, err := world.JSON(t, &l.Items[i])
		var crd apiextensionsv1.CustomResourceDefinition
		if err != nil || json.Unmarshal(b, &crd) != nil {
			continue
		}
		out = append(out, crd)
	}
	return out
}

// crdResources returns the resources crds define, one per served version
// of each definition that is Established (or carries no conditions at
// all, as one written by hand for a test).
func crdResources(crds []apiextensionsv1.CustomResourceDefinition, verbs []string) []discovery.Resource {
	var out []discovery.Resource
	for _, crd := range crds {
		if len(crd.Status.Conditions) > 0 && !apihelpers.IsCRDConditionTrue(&crd, apiextensionsv1.Established) {
			continue // the server serves a definition once it is Established
		}
		n := crd.Spec.Names
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			r := discovery.Resource{Group: crd.Spec.Group, Version: v.Name, Resource: n.Plural, Kind: n.Kind, Singular: n.Singular,
				ShortNames: n.ShortNames, Categories: n.Categories, Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, Verbs: verbs}
			if v.Subresources != nil {
				r.Status, r.Scale = v.Subresources.Status != nil, v.Subresources.Scale != nil
			}
			out = append(out, r)
		}
	}
	return out
}

// crdOpenAPI returns the OpenAPI v3 documents of the served versions of
// crds by group version ("apis/example.com/v1"), built and merged as the
// apiextensions-apiserver's OpenAPI v3 controller does
// (k8s.io/apiextensions-apiserver/pkg/controller/openapiv3). A definition
// the builder refuses is left out of its document, as there.
func crdOpenAPI(crds []apiextensionsv1.CustomResourceDefinition) map[string][]byte {
	specs := map[string][]*spec3.OpenAPI{}
	for i := range crds {
		for _, v := range crds[i].Spec.Versions {
			if !v.Served {
				continue
			}
			doc, err := openapibuilder.BuildOpenAPIV3(&crds[i], v.Name, openapibuilder.Options{IncludeSelectableFields: true})
			if err != nil {
				continue
			}
			gv := "apis/" + crds[i].Spec.Group + "/" + v.Name
			specs[gv] = append(specs[gv], doc)
		}
	}
	out := map[string][]byte{}
	for gv, docs := range specs {
		merged, err := openapibuilder.MergeSpecsV3(docs...)
		if err != nil {
			continue
		}
		if b, err := json.Marshal(merged); err == nil {
			out[gv] = b
		}
	}
	return out
}

// versionJSON is /version for the recorded server's gitVersion.
func versionJSON(server string) []byte {
	major, minor := "", ""
	if parts := strings.SplitN(strings.TrimPrefix(server, "v"), ".", 3); len(parts) >= 2 {
		major, minor = parts[0], parts[1]
	}
	b, _ := json.Marshal(map[string]string{"major": major, "minor": minor, "gitVersion": server, "platform": "linux/amd64"})
	return append(b, '\n')
}
