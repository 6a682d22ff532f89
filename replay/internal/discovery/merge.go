package discovery

import (
	"crypto/sha512"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
)

// Resource is a collection to add to discovery with [Docs.With]: one a
// cassette recorded that the snapshot does not know, a CRD's.
type Resource struct {
	// Group is the API group; "" for the core group (/api).
	Group string
	// Version is the group version, e.g. v1.
	Version string
	// Resource is the plural, lower-case resource name, e.g. widgets.
	Resource string
	// Kind is the kind of one object, e.g. Widget. Its lower-case form is
	// the singular name, as for a CRD that names none.
	Kind string
	// Namespaced is true for a namespaced resource.
	Namespaced bool
	// Verbs are the verbs discovery lists; nil means get, list, watch
	// (what a replay answers).
	Verbs []string
	// Status says the resource has a status subresource (a CRD's
	// subresources.status), Scale a scale subresource.
	Status, Scale bool
	// Singular is the singular name; "" means the lower-case Kind.
	Singular string
	// ShortNames and Categories are a CRD's names.shortNames and
	// names.categories (kubectl get wd, kubectl get all).
	ShortNames, Categories []string
}

// ErrInvalidResource means a [Resource] lacks a field discovery needs.
var ErrInvalidResource = errors.New("discovery: invalid resource")

func (r Resource) check() error {
	switch {
	case r.Version == "":
		return fmt.Errorf("%w %q: no version", ErrInvalidResource, r.Resource)
	case r.Resource == "" || strings.Contains(r.Resource, "/"):
		return fmt.Errorf("%w %q in %s: want a plural name without a slash", ErrInvalidResource, r.Resource, r.gv())
	case r.Kind == "":
		return fmt.Errorf("%w %q in %s: no kind", ErrInvalidResource, r.Resource, r.gv())
	}
	return nil
}

func (r Resource) gv() schema.GroupVersion {
	return schema.GroupVersion{Group: r.Group, Version: r.Version}
}

func (r Resource) singular() string {
	if r.Singular != "" {
		return r.Singular
	}
	return strings.ToLower(r.Kind)
}

// scaleKind is what the scale subresource answers with.
var scaleKind = metav1.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "Scale"}

// subresourceVerbs are the verbs of the status and scale subresources.
var subresourceVerbs = []string{"get", "patch", "update"}

func (r Resource) verbs() []string {
	if r.Verbs == nil {
		return []string{"get", "list", "watch"}
	}
	return r.Verbs
}

// With returns Docs that also serve extra in the legacy and the aggregated
// documents: a new group or version is added, a resource already listed
// is left as it is (the snapshot's, with its short names and categories, is
// the better answer). d is unchanged. The error wraps
// [ErrInvalidResource] when a resource lacks its version, name or kind.
func (d *Docs) With(extra []Resource) (*Docs, error) {
	m := merger{files: maps.Clone(d.files)}
	for _, r := range extra {
		if err := r.check(); err != nil {
			return nil, err
		}
		if err := m.add(r); err != nil {
			return nil, fmt.Errorf("discovery: adding %s to %s: %w", r.Resource, r.gv(), err)
		}
	}
	return &Docs{files: m.files, types: d.types, v2: d.v2}, nil
}

// merger edits a copy of the archive's documents: it decodes, changes and
// re-encodes one document at a time, so documents no resource touches keep
// the captured bytes.
type merger struct {
	files map[string][]byte
}

func (m merger) add(r Resource) error {
	added, err := m.addLegacy(r)
	if err != nil || !added {
		return err
	}
	if err := m.addVersion(r.gv()); err != nil {
		return err
	}
	return m.addAggregated(r)
}

// edit decodes the document name into v (left as it is when there is no
// such document), calls change and stores v re-encoded if change reports a
// change.
func edit[T any](m merger, name string, v *T, change func() bool) error {
	if b, ok := m.files[name]; ok {
		if err := json.Unmarshal(b, v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	if !change() {
		return nil
	}
	return m.put(name, v)
}

// put stores v as the document name, encoded as the API server encodes it.
func (m merger) put(name string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m.files[name] = append(b, '\n')
	return nil
}

// legacyName is the archive name of the APIResourceList of gv.
func legacyName(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "api/" + gv.Version
	}
	return "apis/" + gv.String()
}

// addLegacy adds r to the APIResourceList of its group version; added is
// false when it was there already.
func (m merger) addLegacy(r Resource) (added bool, err error) {
	list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: r.gv().String()}
	err = edit(m, legacyName(r.gv()), &list, func() bool {
		if slices.ContainsFunc(list.APIResources, func(a metav1.APIResource) bool { return a.Name == r.Resource }) {
			return false
		}
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: r.Resource, SingularName: r.singular(), Namespaced: r.Namespaced,
			Kind: r.Kind, Verbs: r.verbs(), ShortNames: r.ShortNames, Categories: r.Categories,
		})
		if r.Status {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Resource + "/status", Namespaced: r.Namespaced, Kind: r.Kind, Verbs: subresourceVerbs,
			})
		}
		if r.Scale {
			list.APIResources = append(list.APIResources, metav1.APIResource{
				Name: r.Resource + "/scale", Namespaced: r.Namespaced, Group: scaleKind.Group, Version: scaleKind.Version,
				Kind: scaleKind.Kind, Verbs: subresourceVerbs,
			})
		}
		added = true
		return true
	})
	return added, err
}

// addVersion lists gv in /api, or in /apis and /apis/GROUP.
func (m merger) addVersion(gv schema.GroupVersion) error {
	if gv.Group == "" {
		var vs metav1.APIVersions
		return edit(m, "api", &vs, func() bool {
			if slices.Contains(vs.Versions, gv.Version) {
				return false
			}
			vs.Versions = append(vs.Versions, gv.Version)
			slices.SortStableFunc(vs.Versions, byPriority)
			return true
		})
	}
	var group metav1.APIGroup
	var list metav1.APIGroupList
	err := edit(m, "apis", &list, func() bool {
		i := slices.IndexFunc(list.Groups, func(g metav1.APIGroup) bool { return g.Name == gv.Group })
		if i < 0 {
			// A new group is listed after the built-in ones, as the
			// aggregator lists CRD groups.
			list.Groups = append(list.Groups, metav1.APIGroup{Name: gv.Group})
			i = len(list.Groups) - 1
		}
		g := &list.Groups[i]
		if !slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool { return v.Version == gv.Version }) {
			g.Versions = append(g.Versions, metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version})
			slices.SortStableFunc(g.Versions, func(a, b metav1.GroupVersionForDiscovery) int { return byPriority(a.Version, b.Version) })
		}
		g.PreferredVersion = g.Versions[0]
		group = *g
		return true
	})
	if err != nil {
		return err
	}
	group.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
	return m.put("apis/"+gv.Group, group)
}

// addAggregated adds r to the aggregated document of its group.
func (m merger) addAggregated(r Resource) error {
	name := aggregatedPrefix + "apis"
	if r.Group == "" {
		name = aggregatedPrefix + "api"
	}
	var list apidiscoveryv2.APIGroupDiscoveryList
	return edit(m, name, &list, func() bool {
		i := slices.IndexFunc(list.Items, func(g apidiscoveryv2.APIGroupDiscovery) bool { return g.Name == r.Group })
		if i < 0 {
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: r.Group}})
			i = len(list.Items) - 1
		}
		g := &list.Items[i]
		j := slices.IndexFunc(g.Versions, func(v apidiscoveryv2.APIVersionDiscovery) bool { return v.Version == r.Version })
		if j < 0 {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: r.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent})
			slices.SortStableFunc(g.Versions, func(a, b apidiscoveryv2.APIVersionDiscovery) int { return byPriority(a.Version, b.Version) })
			j = slices.IndexFunc(g.Versions, func(v apidiscoveryv2.APIVersionDiscovery) bool { return v.Version == r.Version })
		}
		scope := apidiscoveryv2.ScopeCluster
		if r.Namespaced {
			scope = apidiscoveryv2.ScopeNamespace
		}
		rd := apidiscoveryv2.APIResourceDiscovery{
			Resource: r.Resource, SingularResource: r.singular(), Scope: scope, Verbs: r.verbs(),
			ResponseKind: &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind},
			ShortNames:   r.ShortNames, Categories: r.Categories,
		}
		if r.Status {
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "status", Verbs: subresourceVerbs,
				ResponseKind: &metav1.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}})
		}
		if r.Scale {
			rd.Subresources = append(rd.Subresources, apidiscoveryv2.APISubresourceDiscovery{Subresource: "scale", Verbs: subresourceVerbs,
				ResponseKind: &scaleKind})
		}
		g.Versions[j].Resources = append(g.Versions[j].Resources, rd)
		// The apiextensions-apiserver lists a group version's resources
		// by name.
		slices.SortStableFunc(g.Versions[j].Resources, func(a, b apidiscoveryv2.APIResourceDiscovery) int { return strings.Compare(a.Resource, b.Resource) })
		return true
	})
}

// byPriority orders versions as the API server prefers them: GA before
// beta before alpha, higher numbers first (v2, v1, v1beta2, v1beta1).
func byPriority(a, b string) int {
	return -version.CompareKubeAwareVersionStrings(a, b)
}

// WithOpenAPI returns Docs that also serve docs, OpenAPI v3 documents by
// their group version ("apis/example.com/v1"), each listed in the
// /openapi/v3 index with the hash the server gives it (its SHA-512, in
// upper-case hex). A group version the snapshot serves already is
// replaced. d is unchanged.
func (d *Docs) WithOpenAPI(docs map[string][]byte) (*Docs, error) {
	if len(docs) == 0 {
		return d, nil
	}
	m := merger{files: maps.Clone(d.files)}
	types := maps.Clone(d.types)
	var index struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(m.files[openAPIIndex], &index); err != nil {
		return nil, fmt.Errorf("discovery: %s: %w", openAPIIndex, err)
	}
	for _, gv := range slices.Sorted(maps.Keys(docs)) {
		name := openAPIIndex + "/" + gv
		m.files[name] = docs[gv]
		types[name] = types[openAPIIndex+"/api/v1"]
		sum := sha512.Sum512(docs[gv])
		index.Paths[gv] = struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		}{"/" + name + "?hash=" + strings.ToUpper(hex.EncodeToString(sum[:]))}
	}
	if err := m.put(openAPIIndex, index); err != nil {
		return nil, err
	}
	return &Docs{files: m.files, types: types, v2: d.v2}, nil
}

// openAPIIndex is the archive name of the OpenAPI v3 index.
const openAPIIndex = "openapi/v3"
