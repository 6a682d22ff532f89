package table

import (
	"github.com/munnerz/goautoneg"

	"github.com/kwrec/kwrec/internal/wire"
)

// GroupVersion is the apiVersion of a Table answer: the version the
// client asked for in its Accept header. The server writes it as the
// Table's apiVersion and as every row object's (a PartialObjectMetadata).
// The zero value means [V1].
type GroupVersion string

// The Table versions the API server serves.
const (
	V1      GroupVersion = "meta.k8s.io/v1"
	V1beta1 GroupVersion = "meta.k8s.io/v1beta1"
)

func (gv GroupVersion) orV1() GroupVersion {
	if gv == "" {
		return V1
	}
	return gv
}

// serializers are the media types the API server offers for built-in
// resources, in its order: a "*/*" or "application/*" element picks the
// first, JSON. (Its 406 message lists them so.)
var serializers = [...]struct{ typ, sub string }{
	{"application", "json"},
	{"application", "yaml"},
	{"application", "vnd.kubernetes.protobuf"},
}

// Wants reports whether the API server would answer a request with this
// Accept header with a JSON Table, and in which version. It negotiates as
// the server does (k8s.io/apiserver's NegotiateMediaTypeOptions): elements
// in goautoneg order (by q, then the more specific first; [wire.Clauses]), each matched
// against JSON, YAML and protobuf in turn; the first element the server
// can serve wins. An element with as=, g= or v= asks for a conversion,
// served only as a Table (g=meta.k8s.io, v=v1 or v1beta1, JSON or YAML)
// or a PartialObjectMetadata(List); any other is skipped, as is a Table
// in protobuf. A conversion asked of application/* gets a 406. kubectl sends
//
//	application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json
//
// and gets a meta.k8s.io/v1 Table. Wants is false for an empty header, a
// plain element winning, a YAML Table (kwrec writes no YAML) and a
// PartialObjectMetadata.
func Wants(accept string) (GroupVersion, bool) {
	if accept == "" {
		return "", false
	}
	for _, clause := range wire.Clauses(accept) {
		if _, conv := convertsTo(clause.Params); conv && clause.Type == "application" && clause.SubType == "*" {
			// Measured: v1.37 answers 406 to application/*;as=Table;...
			// (the meta codecs it encodes Tables with negotiate apart).
			return "", false
		}
		for _, s := range serializers {
			if !matches(clause, s.typ, s.sub) {
				continue
			}
			as, conv := convertsTo(clause.Params)
			switch {
			case !conv:
				return "", false // plain media type
			case as == "PartialObjectMetadata" || as == "PartialObjectMetadataList":
				return "", false
			case as != "":
				if s.sub == "json" {
					return GroupVersion("meta.k8s.io/" + clause.Params["v"]), true
				}
				if s.sub == "yaml" {
					return "", false
				}
			}
		}
	}
	return "", false
}

func matches(c goautoneg.Accept, typ, sub string) bool {
	return (c.Type == typ && (c.SubType == sub || c.SubType == "*")) || (c.Type == "*" && c.SubType == "*")
}

// convertsTo reads the conversion parameters of an Accept element: conv
// is false when it has none. as is "Table", "PartialObjectMetadata" or
// "PartialObjectMetadataList" for a conversion the server serves, ""
// otherwise.
func convertsTo(params map[string]string) (as string, conv bool) {
	kind, hasAs := params["as"]
	g, hasG := params["g"]
	v, hasV := params["v"]
	if !hasAs && !hasG && !hasV {
		return "", false
	}
	if g != "meta.k8s.io" || (v != "v1" && v != "v1beta1") {
		return "", true
	}
	switch kind {
	case "Table", "PartialObjectMetadata", "PartialObjectMetadataList":
		return kind, true
	}
	return "", true
}
