package explore

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/replay"
)

// World is r's world as text to compare: per object its resource,
// namespace and name, then its JSON ([Normalize]d) without the fields at
// the paths ignore names, each a path into an object's JSON such as
// {"metadata", "annotations", "example.com/count"}.
func World(r *replay.Replayer, ignore [][]string) ([]byte, error) {
	objs, err := r.World()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, o := range objs {
		raw := o.JSON
		if len(ignore) > 0 {
			var v map[string]any
			if err := json.Unmarshal(raw, &v); err != nil {
				return nil, fmt.Errorf("%s %s/%s: %v", o.Resource, o.Namespace, o.Name, err)
			}
			for _, p := range ignore {
				unstructured.RemoveNestedField(v, p...)
			}
			if raw, err = json.Marshal(v); err != nil {
				return nil, err
			}
		}
		fmt.Fprintf(&b, "%s %s/%s\n%s", ResourceName(o.Group, o.Resource), o.Namespace, o.Name, Normalize(raw))
	}
	return b.Bytes(), nil
}

// volatile are the metadata fields [Normalize] drops: the ones the
// server sets and that differ from run to run.
var volatile = []string{"resourceVersion", "uid", "creationTimestamp", "managedFields", "deletionTimestamp", "generation"}

// Normalize returns a JSON body with sorted keys, indented, and without
// the server-set metadata that differs between runs (resourceVersion,
// uid, creationTimestamp, managedFields, deletionTimestamp, generation);
// a body that is not JSON as it is, with one final newline.
func Normalize(body []byte) string {
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		return strings.TrimRight(string(body), "\n") + "\n"
	}
	if m, ok := v.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, k := range volatile {
				delete(md, k)
			}
		}
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	enc.Encode(v) // re-encoding what was just decoded cannot fail
	return out.String()
}

// Deleted returns the paths of the objects writes deleted (a DELETE of
// an object; a deletecollection names none), each once, in order. A
// point's run that deletes an object the reference run never deleted
// lost that object's data for its users, even if it creates it again
// and the world converges.
func Deleted(writes []*cassettes.Interaction) []string {
	var out []string
	for _, in := range writes {
		if in.Request.Method != http.MethodDelete {
			continue
		}
		u, err := url.Parse(in.Request.URL)
		if err != nil {
			continue
		}
		if rp, ok := apipath.Parse(u.Path); ok && rp.Name != "" && !slices.Contains(out, u.Path) {
			out = append(out, u.Path)
		}
	}
	return out
}
