package write

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	kjson "sigs.k8s.io/json"
)

// object is one Kubernetes object as the engine handles it: unstructured
// JSON content, normalized through the Go type for built-in kinds.
type object = unstructured.Unstructured

// optimisticLockErrorMsg is k8s.io/apiserver registry.OptimisticLockErrorMsg.
const optimisticLockErrorMsg = "the object has been modified; please apply your changes to the latest version and try again"

// panicError carries a recovered panic value as an error.
type panicError struct{ v any }

func (p panicError) Error() string { return fmt.Sprintf("panic: %v", p.v) }

func newWrite(req Request, cur []byte, st Stamp) (*write, error) {
	w := &write{
		req: req,
		st:  st,
		gvk: schema.GroupVersionKind{Group: req.Group, Version: req.Version, Kind: req.Kind},
		gr:  schema.GroupResource{Group: req.Group, Resource: req.Resource},
	}
	w.kind = factsFor(w.gvk, w.gr, req.StatusSubresource)
	if req.Subresource != "" && req.Subresource != "status" && !HasSubresource(w.gr, req.Subresource) &&
		!(req.Subresource == SubresourceScale && req.Custom.HasScale()) {
		return nil, apierrors.NewNotFound(w.gr, req.Name)
	}
	if cur != nil {
		m := map[string]any{}
		if err := kjson.UnmarshalCaseSensitivePreserveInts(cur, &m); err != nil {
			return nil, apierrors.NewInternalError(fmt.Errorf("decoding the current object: %v", err))
		}
		// Not normalized: the current object is always the API server's
		// own form, recorded from it or stored by this engine.
		w.cur = &object{Object: m}
		w.cur.SetGroupVersionKind(w.gvk)
	}
	return w, nil
}

// decodeBody decodes an object body (create, update) as the server's JSON
// decoder does: apiVersion and kind default from the URL, a built-in kind
// goes through its Go type.
func (w *write) decodeBody() (*object, error) {
	var tm struct {
		APIVersion string `json:"apiVersion,omitempty"`
		Kind       string `json:"kind,omitempty"`
	}
	if err := json.Unmarshal(w.req.Body, &tm); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): couldn't get version/kind; json parse error: %v (%s)", w.gvk.Kind, err, summarizeData(w.req.Body, 30)))
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", w.gvk.Kind, err, summarizeData(w.req.Body, 30)))
	}
	if w.kind.typed && (tm.APIVersion != "" && gv != w.gvk.GroupVersion() || tm.Kind != "" && tm.Kind != w.gvk.Kind) {
		got := gv.WithKind(tm.Kind)
		if tm.APIVersion == "" {
			got = w.gvk.GroupVersion().WithKind(tm.Kind)
		}
		if got.Kind == "" {
			got.Kind = w.gvk.Kind
		}
		if !serverTypes().Recognizes(got) {
			// The server's decoder looks the body's kind up in its scheme.
			return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", got.Kind, got.Version, w.gvk.Kind, got.Kind, got.GroupVersion()))
		}
	}
	if tm.APIVersion != "" && gv != w.gvk.GroupVersion() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", gv, w.gvk.GroupVersion()))
	}
	if tm.Kind != "" && tm.Kind != w.gvk.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: the kind in the data (%s) does not match the expected kind (%s)", tm.Kind, gv.Version, w.gvk.Kind, tm.Kind, w.gvk.Kind))
	}
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(w.req.Body, &m); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", w.gvk.Kind, w.gvk.Version, w.gvk.Kind, err))
	}
	if err := w.checkBody(w.strictErrors(w.req.Body)); err != nil {
		return nil, err
	}
	obj := &object{Object: m}
	obj.SetGroupVersionKind(w.gvk)
	if err := w.normalize(obj); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", w.gvk.Kind, w.gvk.Version, w.gvk.Kind, err))
	}
	return obj, nil
}

// encodeTyped returns obj's JSON as the server encodes it: for a built-in
// kind through its Go type, so fields come in the type's order (a patch
// handler's error quotes these bytes).
func (w *write) encodeTyped(obj *object) ([]byte, error) {
	if !w.kind.typed {
		return encode(obj)
	}
	typed, err := serverTypes().New(w.gvk)
	if err != nil {
		return encode(obj)
	}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed); err != nil {
		return encode(obj)
	}
	typed.GetObjectKind().SetGroupVersionKind(w.gvk)
	return json.Marshal(typed)
}

// normalize round-trips a built-in object through its Go type, so unknown
// fields are dropped and empty ones omitted as the server's decoding does.
// Custom resources are left as they are.
func (w *write) normalize(obj *object) error {
	return w.roundTrip(obj, setDefaults)
}

// stored returns a copy of obj as the server's storage gives it back
// (throughStorage): what a write answers, and what an update is compared
// with the current object as to tell whether it changed anything.
func (w *write) stored(obj *object) (*object, error) {
	if !w.kind.typed {
		return obj, nil
	}
	c := obj.DeepCopy()
	if err := w.roundTrip(c, throughStorage); err != nil {
		return nil, err
	}
	return c, nil
}

// storageCodec is kube-apiserver's storage encoding of the kinds it
// serves itself (--storage-media-type application/vnd.kubernetes.protobuf),
// made once.
var storageCodec = sync.OnceValue(func() *protobuf.Serializer {
	return protobuf.NewSerializer(serverTypes(), serverTypes())
})

// throughStorage makes obj what the server reads back from etcd after it
// writes obj (and what a dry run answers: the store's DryRunnableStorage
// copies the object through the same codec): protobuf keeps no difference
// between an empty list or map and none, so an empty one that JSON would
// show ("rules": []) comes back nil ("rules": null). A type without
// protobuf is left as it is.
func throughStorage(obj runtime.Object) {
	var b bytes.Buffer
	codec := storageCodec()
	if codec.Encode(obj, &b) != nil {
		return
	}
	gvk := obj.GetObjectKind().GroupVersionKind()
	_, _, _ = codec.Decode(b.Bytes(), nil, obj)
	obj.GetObjectKind().SetGroupVersionKind(gvk)
}

// roundTrip is normalize with change (nil for none) made to the typed
// object.
func (w *write) roundTrip(obj *object, change func(runtime.Object)) error {
	if !w.kind.typed {
		if w.req.Custom != nil {
			// The custom resource decoder's pruning and defaulting.
			w.req.Custom.coerce(obj.Object)
		}
		return nil
	}
	typed, err := serverTypes().New(w.gvk)
	if err != nil {
		return err
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, typed); err != nil {
		return err
	}
	if change != nil {
		change(typed)
	}
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(typed)
	if err != nil {
		return err
	}
	obj.Object = m
	obj.SetGroupVersionKind(w.gvk)
	return nil
}

func summarizeData(data []byte, maxLength int) string {
	switch {
	case len(data) == 0:
		return "<empty>"
	case data[0] == '{':
		if len(data) > maxLength {
			return string(data[:maxLength]) + " ..."
		}
		return string(data)
	default:
		if len(data) > maxLength {
			return fmt.Sprintf("%x ...", data[:maxLength])
		}
		return fmt.Sprintf("%x", data)
	}
}

// encode returns the JSON of obj.
func encode(obj *object) ([]byte, error) {
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	return data, nil
}

// statusError turns any error into the *StatusError the server answers
// with: API status errors as they are, others as the server's
// ErrorToAPIStatus does (500, no reason).
func statusError(err error) error {
	if err == nil {
		return nil
	}
	if se, ok := err.(*apierrors.StatusError); ok {
		return se
	}
	if s, ok := err.(apierrors.APIStatus); ok {
		return &apierrors.StatusError{ErrStatus: s.Status()}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusInternalServerError,
		Message: err.Error(),
	}}
}

// deepCopy copies obj.
func deepCopy(obj *object) *object { return obj.DeepCopy() }

// equalIgnoringTimes reports whether a and b hold the same content apart
// from managedFields times (the server's IgnoreManagedFieldsTimestampsTransformer
// keeps the old times when nothing else changed).
func equalIgnoringTimes(a, b *object) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, o := range []*object{a, b} {
		mf := o.GetManagedFields()
		for i := range mf {
			mf[i].Time = nil
		}
		if mf != nil {
			o.SetManagedFields(mf)
		}
	}
	return equality.Semantic.DeepEqual(a.Object, b.Object) || reflect.DeepEqual(a.Object, b.Object)
}

// withoutKeys returns a copy of obj's content without the top-level keys.
func withoutKeys(obj *object, keys ...string) map[string]any {
	m := make(map[string]any, len(obj.Object))
	for k, v := range obj.Object {
		m[k] = v
	}
	for _, k := range keys {
		delete(m, k)
	}
	return m
}
