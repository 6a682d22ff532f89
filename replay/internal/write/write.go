package write

import (
	"net/url"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	extensionsapply "k8s.io/apiextensions-apiserver/pkg/client/applyconfiguration"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Verbs of a [Request].
const (
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
)

// Watch event types of a [Result]; the empty string means the write changed
// nothing and makes no event.
const (
	EventAdded    = "ADDED"
	EventModified = "MODIFIED"
	EventDeleted  = "DELETED"
)

// Request is one write as the API server routes it.
type Request struct {
	// Verb is "create", "update" (PUT), "patch" or "delete".
	Verb string
	// Subresource is "" for the main resource, "status", or one of
	// [SubresourceScale] and [SubresourceApproval] where the resource has
	// it (see [HasSubresource]).
	Subresource string
	// Group, Version and Resource are the URL's resource ("" for the core
	// group); Kind is its Kind, which the caller knows from discovery.
	Group, Version, Resource, Kind string
	// Namespaced says whether the resource is namespace-scoped.
	Namespaced bool
	// StatusSubresource says whether the resource has a status subresource
	// (discovery lists "<resource>/status"). When true the main resource
	// ignores changes to .status and the status subresource changes only
	// .status, as the API server's strategies do.
	StatusSubresource bool
	// Namespace and Name come from the URL; Name is "" for a create.
	Namespace, Name string
	// ContentType is the media type of Body without parameters:
	// application/json for create and update; for a patch one of
	// application/json-patch+json, application/merge-patch+json,
	// application/strategic-merge-patch+json (built-in types only) and
	// application/apply-patch+yaml. The caller converts protobuf bodies to
	// JSON first. It is not consulted for create, update and delete.
	ContentType string
	// Body is the request body: the object, the patch, or for a delete
	// optional DeleteOptions.
	Body []byte
	// Query holds the URL's query: fieldManager, force, fieldValidation
	// (Ignore, Warn or Strict, for built-in kinds), and for a delete
	// propagationPolicy (dryRun is [Request.DryRun]).
	Query url.Values
	// DryRun says the write is not stored (dryRun=All): a create then keeps
	// the body's resourceVersion, as the server's dry-run storage does, and
	// the caller does not commit the result.
	DryRun bool
	// UserAgent is the request's User-Agent; the field manager defaults to
	// its part before the first "/" when the query has no fieldManager.
	UserAgent string
	// Custom is what the resource's CustomResourceDefinition says of it,
	// for a custom resource whose definition the caller has (see
	// [NewCustomResource]); nil keeps a custom resource as sent.
	Custom *CustomResource
}

// Stamp holds what the server sets on one write.
type Stamp struct {
	// RV is the resourceVersion the written object gets.
	RV string
	// Now is the creationTimestamp of a create, the deletionTimestamp of a
	// delete and the time of changed managedFields entries. It is written
	// with one-second precision, as metav1.Time is.
	Now time.Time
	// UID is the uid of a created object.
	UID string
	// Suffix is appended to metadata.generateName; the server uses 5
	// random characters.
	Suffix string
}

// Result is the outcome of a write that succeeded.
type Result struct {
	// Object is the JSON of the object as stored after the write, with
	// kind and apiVersion. For a delete that removes the object it is the
	// object as it was, with the Stamp's resourceVersion (as a watch's
	// DELETED event carries it). When Event is "" it is the current object
	// unchanged.
	Object []byte
	// Body is the JSON the API server answers with: the object, or for a
	// delete that removes the object of most resources a Success Status.
	Body []byte
	// Code is the HTTP status: 201 when the write created the object, 200
	// otherwise.
	Code int
	// Warnings are the texts of the Warning headers the server answers
	// with: the unknown and duplicate fields of a built-in object under
	// fieldValidation=Warn, the server's default.
	Warnings []string
	// Event is the watch event the write makes: [EventAdded],
	// [EventModified], [EventDeleted], or "" when nothing changed (the
	// server neither bumps the resourceVersion nor notifies watchers then).
	Event string
	// Marked, set only with Event DELETED, is what the store writes
	// first, with its own resourceVersion and a MODIFIED event: a Pod
	// deleted with a grace period of 0 is marked with a deletionTimestamp
	// and then removed, two changes a watch sees.
	Marked []byte
}

// Engine applies writes. It holds no state but the type converters of
// server-side apply, built at its first write that needs one: the zero
// value is ready and safe for concurrent use. Do not copy an Engine.
type Engine struct {
	typed, deduced sync.Once
	typedTC        managedfields.TypeConverter
	deducedTC      managedfields.TypeConverter
}

// typeConverter returns the converter of built-in kinds (client-go's
// OpenAPI models) or, for custom resources, the deduced one: the first
// costs milliseconds to build, so it is built once.
func (e *Engine) typeConverter(typed bool) managedfields.TypeConverter {
	if typed {
		e.typed.Do(func() {
			e.typedTC = serverTypeConverter{
				builtin:       applyconfigurations.NewTypeConverter(clientgoscheme.Scheme),
				apiextensions: extensionsapply.NewTypeConverter(serverTypes()),
			}
		})
		return e.typedTC
	}
	e.deduced.Do(func() { e.deducedTC = managedfields.NewDeducedTypeConverter() })
	return e.deducedTC
}

// serverTypeConverter is the type converter of the kinds kube-apiserver
// serves itself: client-go's OpenAPI models, and the apiextensions
// group's (CustomResourceDefinitions), which client-go's leave out.
type serverTypeConverter struct {
	builtin, apiextensions managedfields.TypeConverter
}

func (c serverTypeConverter) ObjectToTyped(obj runtime.Object, opts ...typed.ValidationOptions) (*typed.TypedValue, error) {
	if obj.GetObjectKind().GroupVersionKind().Group == apiextensionsv1.GroupName {
		return c.apiextensions.ObjectToTyped(obj, opts...)
	}
	return c.builtin.ObjectToTyped(obj, opts...)
}

// TypedToObject makes the unstructured object of a value, which needs no
// schema: either converter does it.
func (c serverTypeConverter) TypedToObject(v *typed.TypedValue) (runtime.Object, error) {
	return c.builtin.TypedToObject(v)
}

// Apply applies req to the current object cur (its JSON, nil when absent)
// and returns the result, or an error that is always a
// *[apierrors.StatusError] carrying the status the API server answers with.
func (e *Engine) Apply(req Request, cur []byte, st Stamp) (res Result, err error) {
	defer func() {
		// The machinery below is apimachinery's; a panic on odd input must
		// still be an answer, not a crashed replay server.
		if r := recover(); r != nil {
			res, err = Result{}, apierrors.NewInternalError(panicError{r})
		}
	}()
	w, err := newWrite(req, cur, st)
	if err != nil {
		return Result{}, err
	}
	w.engine = e
	defer func() { res.Warnings = w.warnings }()
	if req.Subresource == SubresourceScale {
		return w.scale()
	}
	if req.Subresource != "" && (req.Verb == VerbCreate || req.Verb == VerbDelete) {
		// A subresource is read, updated and patched; never created or
		// deleted on its own.
		return Result{}, apierrors.NewMethodNotSupported(w.gr, req.Verb)
	}
	switch req.Verb {
	case VerbCreate:
		return w.create()
	case VerbUpdate:
		return w.update()
	case VerbPatch:
		return w.patch()
	case VerbDelete:
		return w.delete()
	}
	return Result{}, apierrors.NewMethodNotSupported(w.gr, req.Verb)
}

// write is one request in flight: the request, its kind facts and the
// decoded current object.
type write struct {
	engine *Engine
	req    Request
	st     Stamp
	gvk    schema.GroupVersionKind
	gr     schema.GroupResource
	kind   kindFacts
	cur    *object // nil when absent
	// warnings are the Warning headers the answer carries.
	warnings []string
}
