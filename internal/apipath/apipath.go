// Package apipath splits Kubernetes API paths into group, version,
// namespace, resource and name, the way the API server routes them.
package apipath

import (
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Path is an API path split into its parts. Name is empty for a
// collection; Group is empty for the core group (/api/v1).
type Path struct {
	Group, Version, Namespace, Resource, Name string
}

// Parse splits /api/v1/[namespaces/NS/]RES[/NAME] and
// /apis/G/V/[namespaces/NS/]RES[/NAME]; subresources and other paths give
// ok == false.
func Parse(path string) (p Path, ok bool) {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	var rest []string
	switch {
	case len(segs) >= 3 && segs[0] == "api":
		p.Version, rest = segs[1], segs[2:]
	case len(segs) >= 4 && segs[0] == "apis":
		p.Group, p.Version, rest = segs[1], segs[2], segs[3:]
	default:
		return p, false
	}
	if len(rest) >= 3 && rest[0] == "namespaces" {
		p.Namespace, rest = rest[1], rest[2:]
	}
	switch len(rest) {
	case 1:
		p.Resource = rest[0]
	case 2:
		p.Resource, p.Name = rest[0], rest[1]
	default:
		return p, false
	}
	for _, s := range []string{p.Version, p.Resource, p.Name, p.Namespace, p.Group} {
		if strings.ContainsAny(s, " ") {
			return p, false
		}
	}
	return p, p.Resource != "" && p.Version != ""
}

// Collection returns the path of the collection p belongs to.
func (p Path) Collection() string {
	var b strings.Builder
	if p.Group == "" {
		b.WriteString("/api/" + p.Version)
	} else {
		b.WriteString("/apis/" + p.Group + "/" + p.Version)
	}
	if p.Namespace != "" {
		b.WriteString("/namespaces/" + p.Namespace)
	}
	b.WriteString("/" + p.Resource)
	return b.String()
}

// APIVersion returns "v1" or "group/version".
func (p Path) APIVersion() string {
	if p.Group == "" {
		return p.Version
	}
	return p.Group + "/" + p.Version
}

// GroupVersionResource returns p's resource.
func (p Path) GroupVersionResource() schema.GroupVersionResource {
	return schema.GroupVersionResource{Group: p.Group, Version: p.Version, Resource: p.Resource}
}
