package discovery

import (
	"github.com/kwrec/kwrec/internal/wire"
)

// wantsAggregated reports whether the Accept header accept ranks the
// aggregated discovery document (apidiscovery.k8s.io/v2) above the legacy
// one, the way the API server's negotiation decides: the first range in
// its order ([wire.Clauses]: by q, the more specific first) that asks for
// either.
//
// client-go 1.37 sends "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json",
// at times after a profile=nopeer twin of the first range; kubectl 1.32
// (the one on this project's machines) sends a v2beta1 range between the
// two. The profile only asks a server that merges its peers' discovery
// not to, which this one never does. A protobuf range counts
// as its JSON twin: the answer is JSON and its Content-Type says so, which
// clients accept. v2beta1 is not served (kube-apiserver 1.37 no longer
// does), so its range is passed over like any other this server cannot
// answer (a Table, say). A header with no range this server can answer
// gets the legacy document rather than a 406: a discovery client always
// understands it.
func wantsAggregated(accept string) bool {
	for _, c := range wire.Clauses(accept) {
		if agg, legacy := classify(c.Type+"/"+c.SubType, c.Params); agg || legacy {
			return agg
		}
	}
	return false
}

// classify tells whether a media range asks for the aggregated document or
// accepts the legacy one.
func classify(typ string, params map[string]string) (aggregated, legacy bool) {
	switch typ {
	case "application/json", "application/vnd.kubernetes.protobuf":
	case "*/*", "application/*":
		return false, true
	default:
		return false, false
	}
	g, v, as := params["g"], params["v"], params["as"]
	switch {
	case g == "" && v == "" && as == "":
		return false, true
	case g == "apidiscovery.k8s.io" && v == "v2" && as == "APIGroupDiscoveryList":
		return true, false
	}
	return false, false
}
