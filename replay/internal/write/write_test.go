package write

import (
	"encoding/json"
	"errors"
	"net/url"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func stamp(rv string) Stamp {
	return Stamp{RV: rv, Now: t0, UID: "uid-1", Suffix: "abcde"}
}

// apply applies req, in a fresh Engine stamped with resourceVersion 7,
// to the current object cur (its JSON, "" when absent).
func apply(req Request, cur string) (Result, error) {
	var c []byte
	if cur != "" {
		c = []byte(cur)
	}
	var e Engine
	return e.Apply(req, c, stamp("7"))
}

func cm(verb, name string) Request {
	return Request{Verb: verb, Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true, Namespace: "default", Name: name, ContentType: "application/json", UserAgent: "kubectl/v1.37.2 (linux/amd64)"}
}

func deploy(verb, name string) Request {
	return Request{Verb: verb, Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment", Namespaced: true, StatusSubresource: true, Namespace: "default", Name: name, ContentType: "application/json"}
}

func widget(verb, name string) Request {
	return Request{Verb: verb, Group: "example.com", Version: "v1", Resource: "widgets", Kind: "Widget", Namespaced: true, Namespace: "default", Name: name, ContentType: "application/json"}
}

func with(r Request, body string, ct string, q url.Values) Request {
	r.Body = []byte(body)
	if ct != "" {
		r.ContentType = ct
	}
	r.Query = q
	return r
}

const stored = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","creationTimestamp":"2025-01-01T00:00:00Z"},"data":{"a":"1"}}`

func jsonAt(t *testing.T, obj []byte, path ...string) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(obj, &v); err != nil {
		t.Fatalf("result is not JSON: %v", err)
	}
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

func TestApplySucceeds(t *testing.T) {
	tests := []struct {
		name      string
		req       Request
		cur       string
		code      int
		event     string
		want      map[string]any // dotted path → value in Object
		bodyIsObj bool
	}{
		{
			name: "a create with generateName gets the suffix, the stamp and managedFields",
			req:  with(cm("create", ""), `{"metadata":{"generateName":"g-"},"data":{"k":"v"}}`, "", nil),
			code: 201, event: EventAdded,
			want: map[string]any{"metadata.name": "g-abcde", "metadata.namespace": "default", "metadata.uid": "uid-1", "metadata.resourceVersion": "7", "metadata.creationTimestamp": "2026-01-02T03:04:05Z", "metadata.generation": nil, "kind": "ConfigMap", "apiVersion": "v1"},
		},
		{
			name: "a create of a Deployment sets generation 1 and drops status",
			req:  with(deploy("create", ""), `{"metadata":{"name":"d"},"spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":9}}`, "", nil),
			code: 201, event: EventAdded,
			want: map[string]any{"metadata.generation": float64(1), "status.replicas": nil},
		},
		{
			name: "an unconditional update keeps uid and creationTimestamp",
			req:  with(cm("update", "x"), `{"metadata":{"name":"x"},"data":{"a":"2"}}`, "", nil),
			cur:  stored, code: 200, event: EventModified,
			want: map[string]any{"metadata.uid": "uid-0", "metadata.creationTimestamp": "2025-01-01T00:00:00Z", "data.a": "2", "metadata.resourceVersion": "7"},
		},
		{
			name: "an update that changes nothing makes no event and keeps the resourceVersion",
			req:  with(cm("update", "x"), `{"metadata":{"name":"x","resourceVersion":"5"},"data":{"a":"1"}}`, "", url.Values{"fieldManager": {"before-first-apply"}}),
			cur:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","creationTimestamp":"2025-01-01T00:00:00Z","managedFields":[{"manager":"before-first-apply","operation":"Update","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{".":{},"f:a":{}}}}]},"data":{"a":"1"}}`,
			code: 200, event: "",
			want: map[string]any{"metadata.resourceVersion": "5"},
		},
		{
			name: "a merge patch changes the field",
			req:  with(cm("patch", "x"), `{"data":{"b":"2"}}`, "application/merge-patch+json", nil),
			cur:  stored, code: 200, event: EventModified,
			want: map[string]any{"data.a": "1", "data.b": "2"},
		},
		{
			name: "a strategic merge patch of a built-in type works",
			req:  with(cm("patch", "x"), `{"data":{"a":null,"c":"3"}}`, "application/strategic-merge-patch+json", nil),
			cur:  stored, code: 200, event: EventModified,
			want: map[string]any{"data.a": nil, "data.c": "3"},
		},
		{
			name: "a JSON patch replaces the field",
			req:  with(cm("patch", "x"), `[{"op":"replace","path":"/data/a","value":"9"}]`, "application/json-patch+json", nil),
			cur:  stored, code: 200, event: EventModified,
			want: map[string]any{"data.a": "9"},
		},
		{
			name: "an apply of a missing object creates it",
			req:  with(cm("patch", "yy"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: yy\ndata:\n  k: v\n", "application/apply-patch+yaml", url.Values{"fieldManager": {"m1"}}),
			code: 201, event: EventAdded,
			want: map[string]any{"metadata.name": "yy", "data.k": "v", "metadata.uid": "uid-1"},
		},
		{
			name: "a delete of an object without finalizers removes it",
			req:  cm("delete", "x"),
			cur:  stored, code: 200, event: EventDeleted,
			want: map[string]any{"metadata.resourceVersion": "7"},
		},
		{
			name: "a delete of an object with a finalizer marks it",
			req:  cm("delete", "x"),
			cur:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","finalizers":["f"]}}`,
			code: 200, event: EventModified, bodyIsObj: true,
			want: map[string]any{"metadata.deletionTimestamp": "2026-01-02T03:04:05Z", "metadata.deletionGracePeriodSeconds": float64(0)},
		},
		{
			name: "a delete of an object already being deleted changes nothing",
			req:  cm("delete", "x"),
			cur:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","finalizers":["f"],"deletionTimestamp":"2025-01-01T00:00:00Z","deletionGracePeriodSeconds":0}}`,
			code: 200, event: "", bodyIsObj: true,
			want: map[string]any{"metadata.resourceVersion": "5"},
		},
		{
			name: "an update removing the last finalizer of a deleting object deletes it",
			req:  with(cm("update", "x"), `{"metadata":{"name":"x","finalizers":[]}}`, "", nil),
			cur:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","finalizers":["f"],"deletionTimestamp":"2025-01-01T00:00:00Z","deletionGracePeriodSeconds":0}}`,
			code: 200, event: EventDeleted,
			want: map[string]any{"metadata.resourceVersion": "7"},
		},
		{
			name: "a Deployment spec change bumps generation and keeps status",
			req:  with(deploy("patch", "d"), `{"spec":{"replicas":3},"status":{"replicas":1}}`, "application/merge-patch+json", nil),
			cur:  `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","uid":"u","resourceVersion":"5","generation":4},"spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":2}}`,
			code: 200, event: EventModified,
			want: map[string]any{"metadata.generation": float64(5), "status.replicas": float64(2), "spec.replicas": float64(3)},
		},
		{
			name: "a status update changes only status",
			req: func() Request {
				r := with(deploy("update", "d"), `{"metadata":{"name":"d","labels":{"l":"x"}},"spec":{"replicas":7},"status":{"replicas":1}}`, "", nil)
				r.Subresource = "status"
				return r
			}(),
			cur:  `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"default","uid":"u","resourceVersion":"5","generation":4},"spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}},"status":{"replicas":2}}`,
			code: 200, event: EventModified,
			want: map[string]any{"metadata.generation": float64(4), "status.replicas": float64(1), "spec.replicas": float64(2), "metadata.labels": nil},
		},
		{
			name: "a custom resource gets generation and keeps unknown fields",
			req:  with(widget("create", ""), `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"w"},"spec":{"anything":{"goes":1}}}`, "", nil),
			code: 201, event: EventAdded,
			want: map[string]any{"metadata.generation": float64(1), "spec.anything.goes": float64(1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := apply(tt.req, tt.cur)
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if res.Code != tt.code || res.Event != tt.event {
				t.Errorf("code, event = %d %q, want %d %q", res.Code, res.Event, tt.code, tt.event)
			}
			for path, want := range tt.want {
				if got := jsonAt(t, res.Object, splitDots(path)...); !cmp.Equal(got, want) {
					t.Errorf("%s = %v, want %v\nobject: %s", path, got, want, res.Object)
				}
			}
			if tt.bodyIsObj && string(res.Body) != string(res.Object) {
				t.Errorf("body %s, want the object %s", res.Body, res.Object)
			}
		})
	}
}

func splitDots(s string) []string {
	var out []string
	start := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '.' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

func TestApplyFails(t *testing.T) {
	tests := []struct {
		name    string
		req     Request
		cur     string
		code    int32
		reason  string
		message string
	}{
		{
			name: "a create of an existing object is AlreadyExists",
			req:  with(cm("create", ""), `{"metadata":{"name":"x"}}`, "", nil),
			cur:  stored, code: 409, reason: "AlreadyExists", message: `configmaps "x" already exists`,
		},
		{
			name: "a create without name or generateName is Invalid",
			req:  with(cm("create", ""), `{"data":{}}`, "", nil),
			code: 422, reason: "Invalid", message: `ConfigMap "" is invalid: metadata.name: Required value: name or generateName is required`,
		},
		{
			name: "a create into another namespace is BadRequest",
			req:  with(cm("create", ""), `{"metadata":{"name":"x","namespace":"other"}}`, "", nil),
			code: 400, reason: "BadRequest", message: `the namespace of the provided object does not match the namespace sent on the request`,
		},
		{
			name: "a create of malformed JSON is BadRequest",
			req:  with(cm("create", ""), `{"metadata":`, "", nil),
			code: 400, reason: "BadRequest", message: `the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; json parse error: unexpected end of JSON input ({"metadata":)`,
		},
		{
			name: "an update of a missing ConfigMap is NotFound",
			req:  with(cm("update", "x"), `{"metadata":{"name":"x"}}`, "", nil),
			code: 404, reason: "NotFound", message: `configmaps "x" not found`,
		},
		{
			name: "a stale update is a Conflict",
			req:  with(cm("update", "x"), `{"metadata":{"name":"x","resourceVersion":"4"}}`, "", nil),
			cur:  stored, code: 409, reason: "Conflict", message: `Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "a patch of a missing object is NotFound",
			req:  with(cm("patch", "x"), `{}`, "application/merge-patch+json", nil),
			code: 404, reason: "NotFound", message: `configmaps "x" not found`,
		},
		{
			name: "a patch of an unknown type is UnsupportedMediaType",
			req:  with(cm("patch", "x"), `{}`, "application/foo", nil),
			cur:  stored, code: 415, reason: "UnsupportedMediaType", message: `415: Unsupported Media Type`,
		},
		{
			name: "a strategic merge patch of a custom resource is UnsupportedMediaType",
			req:  with(widget("patch", "w"), `{}`, "application/strategic-merge-patch+json", nil),
			code: 415, reason: "UnsupportedMediaType", message: `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
		},
		{
			name: "a patch with a stale resourceVersion is a Conflict",
			req:  with(cm("patch", "x"), `{"metadata":{"resourceVersion":"1"}}`, "application/merge-patch+json", nil),
			cur:  stored, code: 409, reason: "Conflict", message: `Operation cannot be fulfilled on configmaps "x": the object has been modified; please apply your changes to the latest version and try again`,
		},
		{
			name: "an apply without fieldManager is Invalid",
			req:  with(cm("patch", "x"), `{}`, "application/apply-patch+yaml", nil),
			cur:  stored, code: 422, reason: "Invalid", message: `PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch`,
		},
		{
			name: "an apply over another manager's field is a Conflict",
			req:  with(cm("patch", "x"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: other\n", "application/apply-patch+yaml", url.Values{"fieldManager": {"m2"}}),
			cur:  `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x","namespace":"default","uid":"uid-0","resourceVersion":"5","managedFields":[{"manager":"m1","operation":"Apply","apiVersion":"v1","time":"2025-01-01T00:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:a":{}}}}]},"data":{"a":"1"}}`,
			code: 409, reason: "Conflict", message: `Apply failed with 1 conflict: conflict with "m1": .data.a`,
		},
		{
			name: "a delete of a missing object is NotFound",
			req:  cm("delete", "x"),
			code: 404, reason: "NotFound", message: `configmaps "x" not found`,
		},
		{
			name: "a delete with a stale resourceVersion precondition is a Conflict",
			req:  with(cm("delete", "x"), `{"preconditions":{"resourceVersion":"1"}}`, "", nil),
			cur:  stored, code: 409, reason: "Conflict", message: `Operation cannot be fulfilled on ConfigMap "x": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (5). The object might have been modified`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := apply(tt.req, tt.cur)
			var se *apierrors.StatusError
			if !errors.As(err, &se) {
				t.Fatalf("Apply error = %v (%T), want a *StatusError", err, err)
			}
			got := [3]any{se.ErrStatus.Code, string(se.ErrStatus.Reason), se.ErrStatus.Message}
			if diff := cmp.Diff([3]any{tt.code, tt.reason, tt.message}, got); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestInvalidObjectsGetTheServersFieldErrors(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{"a ConfigMap name with an underscore", with(cm("create", ""), `{"metadata":{"name":"a_b"}}`, "", nil),
			`ConfigMap "a_b" is invalid: metadata.name: Invalid value: "a_b": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
		{"a ConfigMap data key with a space", with(cm("create", ""), `{"metadata":{"name":"k"},"data":{"a b":"1"}}`, "", nil),
			`ConfigMap "k" is invalid: data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`},
		{"a Deployment without containers", with(deploy("create", ""), `{"metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[]}}}}`, "", nil),
			`Deployment.apps "d" is invalid: spec.template.spec.containers: Required value`},
		{"a Deployment without a selector", with(deploy("create", ""), `{"metadata":{"name":"d"},"spec":{"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, "", nil),
			"Deployment.apps \"d\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Invalid value: {\"a\":\"b\"}: `selector` does not match template `labels`]"},
	}
	var e Engine
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.Apply(tt.req, nil, stamp("7"))
			if !apierrors.IsInvalid(err) || err.Error() != tt.want {
				t.Errorf("got %v\nwant 422 %s", err, tt.want)
			}
		})
	}
}
