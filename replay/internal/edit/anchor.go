package edit

import (
	"net/http"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Anchor is the resource an edit anchored by resource names: Group ""
// for the core group, Namespace "" for any.
type Anchor struct {
	Resource, Group, Namespace string
	// Name, when set, narrows the anchor to one object's requests.
	Name string
}

// What names the anchor for reports: "deployments.apps in namespace prod".
func (a Anchor) What() string {
	what := a.Resource
	if a.Group != "" {
		what += "." + a.Group
	}
	if a.Namespace != "" {
		what += " in namespace " + a.Namespace
	}
	if a.Name != "" {
		what += " named " + a.Name
	}
	return what
}

// Names reports whether a request of rp is on the anchor's resource.
func (a Anchor) Names(rp apipath.Path) bool {
	return rp.Resource == a.Resource && rp.Group == a.Group && (a.Namespace == "" || rp.Namespace == a.Namespace) &&
		(a.Name == "" || rp.Name == a.Name)
}

// On returns the timelines of tls the anchor names, in order.
func (a Anchor) On(tls []*timeline.Timeline) []*timeline.Timeline {
	var out []*timeline.Timeline
	for _, t := range tls {
		if a.Names(t.Res) {
			out = append(out, t)
		}
	}
	return out
}

// Verb is the API verb of a request, "" for a path that is not a
// resource, with the path parsed.
func Verb(req *http.Request) (apipath.Path, string) {
	rp, ok := apipath.Parse(req.URL.Path)
	if !ok {
		return rp, ""
	}
	if req.Method == http.MethodGet {
		switch {
		case wire.IsWatch(req.URL.Query()):
			return rp, "watch"
		case rp.Name != "":
			return rp, "get"
		}
		return rp, "list"
	}
	return rp, WriteVerb(req.Method, rp.Name == "")
}

// WriteVerb is the API verb of a write of method, to a collection or one
// object; "" for a method that does not write.
func WriteVerb(method string, collection bool) string {
	switch method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if collection {
			return "deletecollection"
		}
		return "delete"
	}
	return ""
}

// ContinueExpired is kube-apiserver's answer to a paged list whose
// continue token tok names a compacted resourceVersion: 410 Expired, and
// in the Status a token that continues from the same key at the latest
// state (resourceVersion -1). nil when tok is not a token the server would
// read (it answers those with a 400 whatever was compacted).
func ContinueExpired(tok string) *metav1.Status {
	if tok == "" {
		return nil
	}
	start, _, err := wire.DecodeContinue(tok, "")
	if err != nil {
		return nil
	}
	latest, err := wire.EncodeContinue(start, "", -1)
	if err != nil {
		return nil
	}
	st := wire.Status(http.StatusGone, metav1.StatusReasonExpired, wire.ContinueInconsistent, 0)
	st.Continue = latest
	return st
}
