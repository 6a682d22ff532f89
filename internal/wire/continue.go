package wire

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"strings"
)

// The continue token of a paged list, as kube-apiserver writes it
// (k8s.io/apiserver/pkg/storage/continue.go, v0.37.2): unpadded URL-safe
// base64 of {"v":"meta.k8s.io/v1","rv":RV,"start":KEY}. KEY is the storage
// key to resume at, relative to the listed collection's prefix:
// "/name\x00" for a list in a namespace or of a cluster-scoped resource,
// "/namespace/name\x00" for a list across namespaces (the NUL makes it the
// first key after the last one served). The leading slash is how v1.37.2's
// watch cache writes it (its prefix has no trailing slash); etcd's store
// writes the key without one, and the server reads both. RV is the list's resourceVersion;
// -1 means "continue at the latest state", which the server hands out with
// a 410 when RV was compacted (see [ContinueExpired]).
//
// kwrec hands out and accepts the server's own tokens, so a token recorded
// from a live server and one made by a replay page through the same
// collection alike, and a client that inspects its token sees the server's
// shape.

// ContinueAPIVersion is the only token version the server knows.
const ContinueAPIVersion = "meta.k8s.io/v1"

// The server's messages for a continue token it cannot serve
// (k8s.io/apiserver/pkg/storage/etcd3/errors.go). A 410 on a continue
// whose resourceVersion was compacted carries ContinueInconsistent and a
// fresh token at resourceVersion -1 in the Status's metadata.continue.
const (
	ContinueExpired = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter."
	ContinueInconsistent = "The provided continue parameter is too old " +
		"to display a consistent list result. You can start a new list without " +
		"the continue parameter, or use the continue token in this response to " +
		"retrieve the remainder of the results. Continuing with the provided " +
		"token results in an inconsistent list - objects that were created, " +
		"modified, or deleted between the time the first chunk was returned " +
		"and now may show up in the list."
)

// The errors of [DecodeContinue], worded as the server's; it answers each
// with a 400 "invalid continue token: " + the error.
var (
	errContinueStartRV  = errors.New("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
	errContinueEmpty    = errors.New("continue key is not valid: encoded start key empty (version meta.k8s.io/v1)")
	errContinueInvalid  = errors.New("continue key is not valid")
	errContinueVersion  = errors.New("continue key is not valid: server does not recognize this encoded version")
	errContinueMismatch = errors.New("unable to encode next field: the key and key prefix do not match")
)

type continueToken struct {
	APIVersion      string `json:"v"`
	ResourceVersion int64  `json:"rv"`
	StartKey        string `json:"start"`
}

// EncodeContinue returns the token that resumes a list at resourceVersion
// rv from key start (a key under prefix, such as "ns/" for a namespaced
// list; "" for a list across namespaces or of a cluster-scoped resource).
func EncodeContinue(start, prefix string, rv int64) (string, error) {
	rel, ok := strings.CutPrefix(start, prefix)
	if !ok || rel == "" {
		return "", errContinueMismatch
	}
	b, err := json.Marshal(continueToken{APIVersion: ContinueAPIVersion, ResourceVersion: rv, StartKey: "/" + rel})
	if err != nil {
		return "", err
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// DecodeContinue reads a token made by [EncodeContinue] or by the API
// server for a collection whose keys start with prefix: the key to resume
// at (prefix included) and the resourceVersion, -1 for the latest. Its
// errors read as the server's.
func DecodeContinue(tok, prefix string) (start string, rv int64, err error) {
	data, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %v", errContinueInvalid, err)
	}
	var c continueToken
	if err := json.Unmarshal(data, &c); err != nil {
		return "", 0, fmt.Errorf("%w: %v", errContinueInvalid, err)
	}
	if c.APIVersion != ContinueAPIVersion {
		return "", 0, fmt.Errorf("%w %v", errContinueVersion, c.APIVersion)
	}
	if c.ResourceVersion == 0 {
		return "", 0, errContinueStartRV
	}
	if c.StartKey == "" {
		return "", 0, errContinueEmpty
	}
	// As the server: a start key cannot climb out of the collection.
	key := c.StartKey
	if !strings.HasPrefix(key, "/") {
		key = "/" + key
	}
	if path.Clean(key) != key {
		return "", 0, fmt.Errorf("%w: %v", errContinueInvalid, c.StartKey)
	}
	return prefix + key[1:], c.ResourceVersion, nil
}
