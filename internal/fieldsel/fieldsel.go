// Package fieldsel knows the field selectors kube-apiserver supports for
// its built-in resources beyond metadata.name and metadata.namespace
// (each registry's ToSelectableFields and field label conversion), and
// reads their values from an object's JSON.
//
// A replay evaluates `kubectl drain`'s fieldSelector=spec.nodeName=NODE,
// or an event list's involvedObject.name=X, with it; a field the server
// does not support for the resource is refused with the server's message,
// [Unsupported].
package fieldsel

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
)

// field is one selectable field: its label, where its value is in the
// object's JSON, and its value when absent.
type field struct {
	label string
	path  []string
	def   string
}

func f(label string, path ...string) field {
	if len(path) == 0 {
		path = strings.Split(label, ".")
	}
	return field{label: label, path: path}
}

func (x field) or(def string) field { x.def = def; return x }

// selectable lists each built-in resource's fields beyond metadata, as
// kube-apiserver v1.37 defines them.
var selectable = map[schema.GroupResource][]field{
	{Resource: "pods"}: {
		f("spec.nodeName"), f("spec.restartPolicy"), f("spec.schedulerName"), f("spec.serviceAccountName"),
		f("spec.hostNetwork").or("false"), f("status.phase"), f("status.podIP"), f("status.nominatedNodeName"),
	},
	{Resource: "events"}: {
		f("involvedObject.kind"), f("involvedObject.namespace"), f("involvedObject.name"), f("involvedObject.uid"),
		f("involvedObject.apiVersion"), f("involvedObject.resourceVersion"), f("involvedObject.fieldPath"),
		f("reason"), f("reportingComponent"), f("source", "source", "component"), f("type"),
	},
	{Resource: "secrets"}:                    {f("type")},
	{Resource: "namespaces"}:                 {f("status.phase")},
	{Resource: "nodes"}:                      {f("spec.unschedulable").or("false")},
	{Resource: "replicationcontrollers"}:     {f("status.replicas").or("0")},
	{Resource: "services"}:                   {f("spec.clusterIP"), f("spec.type")},
	{Group: "apps", Resource: "replicasets"}: {f("status.replicas").or("0")},
	{Group: "batch", Resource: "jobs"}:       {f("status.successful").or("0")},
	{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}: {f("spec.signerName")},
}

// metadata are the fields every resource selects on.
func metadata(label string) bool { return label == "metadata.name" || label == "metadata.namespace" }

// Known reports whether kwrec knows gr's selectable fields: a resource of
// a built-in group (client-go's scheme registers it). For others (custom
// resources, which may declare selectableFields) only metadata's are.
func Known(gr schema.GroupResource) bool {
	_, ok := selectable[gr]
	return ok || scheme.Scheme.IsGroupRegistered(gr.Group)
}

// Unsupported returns the first requirement of sel that gr does not
// support, with the server's message for it, or "" when every requirement
// is supported. Resources with fields beyond metadata refuse with "field
// label not supported: LABEL", the others with the default conversion's
// message. Custom resources are checked for metadata fields alone.
func Unsupported(gr schema.GroupResource, sel fields.Selector) (label, msg string) {
	for _, r := range sel.Requirements() {
		switch {
		case metadata(r.Field) || supports(gr, r.Field):
		case len(selectable[gr]) > 0:
			return r.Field, "field label not supported: " + r.Field
		default:
			return r.Field, fmt.Sprintf("%q is not a known field selector: only %q, %q", r.Field, "metadata.name", "metadata.namespace")
		}
	}
	return "", ""
}

func supports(gr schema.GroupResource, label string) bool {
	for _, x := range selectable[gr] {
		if x.label == label {
			return true
		}
	}
	return false
}

// Deep reports whether sel needs an object's fields beyond its name and
// namespace.
func Deep(sel fields.Selector) bool {
	for _, r := range sel.Requirements() {
		if !metadata(r.Field) {
			return true
		}
	}
	return false
}

// Set returns the selectable fields of the object whose JSON is raw, a
// resource of gr, with its name and namespace.
func Set(gr schema.GroupResource, raw []byte) (fields.Set, error) {
	var obj map[string]any
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("reading the fields of a %s object: %w", gr, err)
	}
	set := fields.Set{}
	if m, ok := obj["metadata"].(map[string]any); ok {
		set["metadata.name"], _ = m["name"].(string)
		set["metadata.namespace"], _ = m["namespace"].(string)
	}
	for _, x := range selectable[gr] {
		set[x.label] = lookup(obj, x.path, x.def)
	}
	return set, nil
}

// lookup returns the value at path in obj as the server formats it for a
// field selector, def when absent.
func lookup(obj map[string]any, path []string, def string) string {
	var v any = obj
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return def
		}
		if v, ok = m[p]; !ok {
			return def
		}
	}
	switch v := v.(type) {
	case string:
		return v
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	default:
		return def
	}
}
