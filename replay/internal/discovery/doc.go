// Package discovery serves the API server's discovery documents for replay:
// the ones of kube-apiserver v1.37.2, captured from the real control plane
// and embedded, plus the resources a cassette recorded that are not built in
// (CRDs), so that kubectl's short names (get cm), categories (get all),
// api-resources and explain work against a replay of a cassette that never
// recorded discovery.
//
// A replay server keeps one [Docs] and asks it first for every GET:
//
//	docs, err := discovery.Builtin()
//	if err != nil { ... }
//	docs, err = docs.With([]discovery.Resource{{Group: "example.com", Version: "v1",
//		Resource: "widgets", Kind: "Widget", Namespaced: true}})
//	if err != nil { ... }
//	...
//	if status, ctype, body, ok := docs.Answer(req.URL.Path, req.Header.Get("Accept"), req.Host); ok {
//		// write status, Content-Type: ctype and body
//	}
//
// # What is served
//
// [Docs.Answer] answers the paths a real API server answers for discovery:
//
//   - /version;
//   - /api and /apis: the legacy APIVersions and APIGroupList, or the
//     aggregated APIGroupDiscoveryList (apidiscovery.k8s.io/v2) when the
//     Accept header asks for it first, as client-go 1.30+ and kubectl do;
//   - /api/v1, /apis/GROUP and /apis/GROUP/VERSION: the legacy APIResourceList
//     and APIGroup;
//   - /openapi/v3 (the index, whose entries carry ?hash= queries) and each
//     /openapi/v3/api/v1, /openapi/v3/apis/GROUP/VERSION document (the
//     query is ignored);
//   - any other /api/V, /apis/G, /apis/G/V, /openapi/v3/... path: 404 with
//     a metav1.Status body (NotFound).
//
// Each document goes with the Content-Type the server sent it with (the
// OpenAPI index is text/plain, as kube-apiserver labels it). Where the
// server would answer a protobuf Accept in protobuf, the snapshot has only
// JSON and serves it, labelled JSON: clients send a JSON fallback and
// decode by the Content-Type. The serverAddressByClientCIDRs of /api names
// the host the request was sent to, as the real server's would.
// /openapi/v2 is answered in protobuf, the form client-go asks for (kubectl
// validates a List by it), byte for byte the server's; its JSON form is not
// in the snapshot, and Answer leaves a request for it to the caller.
//
// Resources added by [Docs.With] appear in every legacy and aggregated
// document, with their short names, categories and status and scale
// subresources; [Docs.WithOpenAPI] adds their OpenAPI v3 documents (a
// replay builds them from CustomResourceDefinitions with the
// apiextensions-apiserver's own builder), so kubectl explain knows them.
// The OpenAPI v2 document stays the built-in one.
//
// # The snapshot
//
// builtin.kwrec.zst is a zstd-compressed txtar archive: one file per path
// (aggregated/api and aggregated/apis for the aggregated documents), exactly
// as kube-apiserver v1.37.2 started by internal/testkit/controlplanetest served them,
// with a trailing newline added where a body had none and the
// serverAddressByClientCIDRs address replaced by a placeholder. Regenerate it
// after a control plane upgrade with
//
//	KWREC_UPDATE_DISCOVERY=1 go test ./replay/internal/discovery -run TestLiveCaptureBuiltin
//
// and without the variable the same test checks the snapshot against the
// live server.
package discovery
