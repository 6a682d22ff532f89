package replay

import (
	"encoding/json"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/discovery"
)

// discoveryPlan answers a GET of a discovery path (/version, /api, /apis,
// group versions, OpenAPI v3) the replay could not match: with the last
// recorded answer to the same path whose form the client takes, as often
// as it is asked, else with kube-apiserver v1.37.2's own discovery of the
// built-in resources (short names, categories, verbs and OpenAPI included,
// so kubectl get cm, get all and explain work) plus the resources the
// cassette records that it does not know (CRDs). It returns nil for any
// other path. In process and through [Server] alike.
func (r *Replayer) discoveryPlan(req *http.Request) *plan {
	if req.Method != http.MethodGet || !discovery.IsPath(req.URL.Path) {
		return nil
	}
	accept := req.Header.Get("Accept")
	if p := r.recordedDiscovery(req.URL.Path, accept); p != nil {
		return p
	}
	if strings.TrimSuffix(req.URL.Path, "/") == "/version" && r.header.Server != "" {
		return r.dataPlan(http.StatusOK, wire.MediaJSON, versionJSON(r.header.Server))
	}
	docs, err := r.discoveryDocs()
	if err != nil {
		st := wire.Status(http.StatusInternalServerError, "", "kwrec replay: built-in discovery: "+err.Error(), 0)
		return r.statusPlan(st, 0, false)
	}
	status, ct, body, ok := docs.Answer(req.URL.Path, accept, req.Host)
	if !ok {
		return nil
	}
	return r.dataPlan(status, ct, body)
}

func (r *Replayer) dataPlan(status int, ct string, body []byte) *plan {
	return &plan{status: status, header: http.Header{"Content-Type": {ct}}, pace: r.pacing(nil), end: endEOF,
		frames: []outFrame{dataFrame(body)}}
}

// recordedDiscovery returns the last recorded 200 answer to path that a
// client with this Accept takes: an aggregated document (its Content-Type
// has as=APIGroupDiscoveryList) only to a client that asks for that form.
func (r *Replayer) recordedDiscovery(path, accept string) *plan {
	path = strings.TrimSuffix(path, "/")
	for i := len(r.ivs) - 1; i >= 0; i-- {
		in := r.ivs[i].in
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
		body, err := r.body(in)
		if err != nil {
			st := wire.Status(http.StatusInternalServerError, "", "kwrec replay: "+err.Error(), 0)
			return r.statusPlan(st, 0, false)
		}
		return r.dataPlan(http.StatusOK, ct, body)
	}
	return nil
}

// discoveryDocs builds the discovery answered when the cassette did not
// record it, once per Replayer.
func (r *Replayer) discoveryDocs() (*discovery.Docs, error) {
	r.discOnce.Do(func() {
		d, err := discovery.Builtin()
		if err != nil {
			r.discErr = err
			return
		}
		var verbs []string // get, list, watch
		if r.overlay() {
			verbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
		}
		// The definitions first: they know the scope and the status
		// subresource of resources that were perhaps never listed.
		extra := r.recordedCRDs(verbs)
		for _, t := range r.world.Recorded() {
			if t.Kind == "" {
				continue
			}
			extra = append(extra, discovery.Resource{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
				Kind: t.Kind, Namespaced: t.Namespaced(), Verbs: verbs})
		}
		r.disc, r.discErr = d.With(extra)
	})
	return r.disc, r.discErr
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

// crdJSON is what discovery needs of a CustomResourceDefinition.
type crdJSON struct {
	Spec struct {
		Group    string
		Names    struct{ Plural, Kind string }
		Scope    string
		Versions []struct {
			Name         string
			Served       bool
			Subresources struct {
				Status *struct{}
			}
		}
	}
}

// recordedCRDs returns the resources the CustomResourceDefinitions the
// cassette recorded define, as of the end of the recording, for writes and
// reads of their objects even where none was recorded.
func (r *Replayer) recordedCRDs(verbs []string) []discovery.Resource {
	var out []discovery.Resource
	for _, t := range r.world.Recorded() {
		if t.Res.Group != "apiextensions.k8s.io" || t.Res.Resource != "customresourcedefinitions" || t.Broken() != "" {
			continue
		}
		sel, err := t.Selector(url.Values{}, "", nil)
		if err != nil {
			continue
		}
		l, err := t.List(url.Values{"resourceVersion": {strconv.FormatInt(t.Last(), 10)}, "resourceVersionMatch": {"Exact"}}, sel)
		if err != nil {
			continue
		}
		raws, err := r.raws(t, l.Items)
		if err != nil {
			continue
		}
		for i, raw := range raws {
			b, err := r.codec.Object(t, &l.Items[i], raw, false)
			var crd crdJSON
			if err != nil || json.Unmarshal(b, &crd) != nil {
				continue
			}
			for _, v := range crd.Spec.Versions {
				if !v.Served {
					continue
				}
				out = append(out, discovery.Resource{Group: crd.Spec.Group, Version: v.Name, Resource: crd.Spec.Names.Plural,
					Kind: crd.Spec.Names.Kind, Namespaced: crd.Spec.Scope == "Namespaced", Verbs: verbs, Status: v.Subresources.Status != nil})
			}
		}
	}
	return out
}
