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
func (vw *views) discoveryPlan(req *http.Request) *plan {
	if req.Method != http.MethodGet || !discovery.IsPath(req.URL.Path) {
		return nil
	}
	accept := req.Header.Get("Accept")
	if p := vw.recordedDiscovery(req.URL.Path, accept); p != nil {
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

// discoveryDocs builds the discovery answered when the cassette did not
// record it, once per Replayer.
func (vw *views) discoveryDocs() (*discovery.Docs, error) {
	vw.discOnce.Do(func() {
		d, err := discovery.Builtin()
		if err != nil {
			vw.discErr = err
			return
		}
		var verbs []string // get, list, watch
		if vw.writes {
			verbs = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
		}
		// The definitions first: they know the scope and the status
		// subresource of resources that were perhaps never listed.
		extra := vw.recordedCRDs(verbs)
		for _, t := range vw.world.Recorded() {
			if t.Kind == "" {
				continue
			}
			extra = append(extra, discovery.Resource{Group: t.Res.Group, Version: t.Res.Version, Resource: t.Res.Resource,
				Kind: t.Kind, Namespaced: t.Namespaced(), Verbs: verbs})
		}
		vw.disc, vw.discErr = d.With(extra)
	})
	return vw.disc, vw.discErr
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
func (vw *views) recordedCRDs(verbs []string) []discovery.Resource {
	var out []discovery.Resource
	for _, t := range vw.world.Recorded() {
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
		raws, err := objects{vw.src}.raws(t, l.Items)
		if err != nil {
			continue
		}
		for i, raw := range raws {
			b, err := vw.codec.Object(t, &l.Items[i], raw, false)
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
