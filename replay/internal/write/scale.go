package write

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// The subresources the engine writes besides status.
const (
	SubresourceScale    = "scale"
	SubresourceApproval = "approval"
)

// scaled are the built-in resources with a scale subresource.
var scaled = map[schema.GroupResource]bool{
	{Group: "apps", Resource: "deployments"}:  true,
	{Group: "apps", Resource: "replicasets"}:  true,
	{Group: "apps", Resource: "statefulsets"}: true,
	{Resource: "replicationcontrollers"}:      true,
}

// HasSubresource reports whether the engine writes subresource sub of
// resource gr (status is decided by [Request.StatusSubresource]).
func HasSubresource(gr schema.GroupResource, sub string) bool {
	switch sub {
	case SubresourceScale:
		return scaled[gr]
	case SubresourceApproval:
		return gr == schema.GroupResource{Group: "certificates.k8s.io", Resource: "certificatesigningrequests"}
	}
	return false
}

// ScaleOf returns the autoscaling/v1 Scale of obj, the JSON of a
// Deployment, ReplicaSet, StatefulSet or ReplicationController, or of a
// custom resource whose c has a scale subresource, as a GET of its scale
// subresource answers.
func ScaleOf(obj []byte, c *CustomResource) ([]byte, error) {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(obj, &m); err != nil {
		return nil, err
	}
	s, err := scaleOf(&object{Object: m}, c)
	if err != nil {
		return nil, err
	}
	return json.Marshal(s)
}

func scaleOf(o *object, c *CustomResource) (*autoscalingv1.Scale, error) {
	if c.HasScale() {
		s, found, err := customScale(o, c)
		if err == nil && !found {
			// ScaleREST.Get's words.
			err = apierrors.NewInternalError(fmt.Errorf("the spec replicas field %q does not exist", c.scale.SpecReplicasPath))
		}
		return s, err
	}
	replicas, _, _ := unstructured.NestedInt64(o.Object, "spec", "replicas")
	status, _, _ := unstructured.NestedInt64(o.Object, "status", "replicas")
	var sel string
	if o.GetKind() == "ReplicationController" {
		set, _, _ := unstructured.NestedStringMap(o.Object, "spec", "selector")
		sel = labels.SelectorFromSet(set).String()
	} else if m, ok, _ := unstructured.NestedMap(o.Object, "spec", "selector"); ok {
		var ls metav1.LabelSelector
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, &ls); err != nil {
			return nil, err
		}
		s, err := metav1.LabelSelectorAsSelector(&ls)
		if err != nil {
			return nil, err
		}
		sel = s.String()
	}
	return newScale(o, replicas, status, sel), nil
}

func newScale(o *object, replicas, status int64, sel string) *autoscalingv1.Scale {
	return &autoscalingv1.Scale{
		TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Name: o.GetName(), Namespace: o.GetNamespace(), UID: o.GetUID(),
			ResourceVersion: o.GetResourceVersion(), CreationTimestamp: o.GetCreationTimestamp()},
		Spec:   autoscalingv1.ScaleSpec{Replicas: int32(replicas)},
		Status: autoscalingv1.ScaleStatus{Replicas: int32(status), Selector: sel},
	}
}

// customScale is k8s.io/apiextensions-apiserver's scaleFromCustomResource
// (pkg/registry/customresource/etcd.go, unexported): the Scale of a
// custom resource read at its definition's paths, and whether its spec
// replicas were found.
func customScale(o *object, c *CustomResource) (*autoscalingv1.Scale, bool, error) {
	replicas, found, err := unstructured.NestedInt64(o.Object, splitReplicasPath(c.scale.SpecReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	status, _, err := unstructured.NestedInt64(o.Object, splitReplicasPath(c.scale.StatusReplicasPath)...)
	if err != nil {
		return nil, false, err
	}
	var sel string
	if p := c.scale.LabelSelectorPath; p != nil && *p != "" {
		if sel, _, err = unstructured.NestedString(o.Object, splitReplicasPath(*p)...); err != nil {
			return nil, false, err
		}
	}
	return newScale(o, replicas, status, sel), found, nil
}

// splitReplicasPath is the server's: a path's fields, its leading dot
// dropped.
func splitReplicasPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// replicasPath is where a Scale's spec.replicas goes in the object.
func (w *write) replicasPath() []string {
	if w.req.Custom.HasScale() {
		return splitReplicasPath(w.req.Custom.scale.SpecReplicasPath)
	}
	return []string{"spec", "replicas"}
}

// scale handles an update or a patch of the scale subresource: the Scale
// the request makes from the current one sets the object's spec.replicas,
// recorded in managedFields as the scale subresource's, and the answer is
// the new Scale.
func (w *write) scale() (Result, error) {
	if w.req.Verb == VerbUpdate {
		// The update handler decodes the body and checks its name
		// before the store looks the object up.
		if _, err := w.decodeScale(w.req.Body); err != nil {
			return Result{}, err
		}
	}
	if w.cur == nil {
		return Result{}, apierrors.NewNotFound(w.gr, w.req.Name)
	}
	if w.isApply() {
		return w.applyScale()
	}
	next, err := w.requestedScale()
	if err != nil {
		return Result{}, err
	}
	s, err := w.decodeScale(next)
	if err != nil {
		return Result{}, err
	}
	obj, err := w.scaled(s)
	if err != nil {
		return Result{}, err
	}
	rv := s.ResourceVersion
	if rv == "" {
		rv = w.cur.GetResourceVersion() // a Scale without one updates unconditionally
	}
	obj.SetResourceVersion(rv)
	if err := w.trackScale(obj, s); err != nil {
		return Result{}, err
	}
	res, err := w.updated(obj)
	if err != nil {
		return Result{}, err
	}
	return scaleAnswer(res, w.req.Custom)
}

// decodeScale decodes a Scale whose name, if it has one, must be the
// URL's.
func (w *write) decodeScale(b []byte) (*autoscalingv1.Scale, error) {
	var s autoscalingv1.Scale
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &s); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Scale in version \"v1\" cannot be handled as a Scale: %v", err))
	}
	if s.Name != "" && s.Name != w.req.Name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", s.Name, w.req.Name))
	}
	return &s, nil
}

// requestedScale is the JSON of the Scale the request makes of the
// current object's: the body of an update, or the current Scale patched
// by the body of a patch.
func (w *write) requestedScale() ([]byte, error) {
	cur, err := w.currentScale()
	if err != nil {
		return nil, err
	}
	curJS, err := json.Marshal(cur)
	if err != nil {
		return nil, err
	}
	var next []byte
	switch w.req.Verb {
	case VerbUpdate:
		next = w.req.Body
	case VerbPatch:
		switch types.PatchType(w.req.ContentType) {
		case types.MergePatchType:
			next, err = jsonpatch.MergePatch(curJS, w.req.Body)
		case types.JSONPatchType:
			var ops jsonpatch.Patch
			if ops, err = jsonpatch.DecodePatch(w.req.Body); err == nil {
				next, err = ops.Apply(curJS)
			}
		case types.StrategicMergePatchType:
			next, err = strategicpatch.StrategicMergePatch(curJS, w.req.Body, &autoscalingv1.Scale{})
		default:
			return nil, apierrors.NewBadRequest(fmt.Sprintf("kwrec: %s patches of the scale subresource are not simulated", w.req.ContentType))
		}
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, apierrors.NewMethodNotSupported(w.gr, w.req.Verb)
	}
	return next, nil
}

// scaleAnswer is res, the result of the update of the scaled object,
// answering with the object's new Scale.
func scaleAnswer(res Result, c *CustomResource) (Result, error) {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(res.Object, &m); err != nil {
		return Result{}, statusError(err)
	}
	answer, err := scaleOf(&object{Object: m}, c)
	if err != nil {
		return Result{}, statusError(err)
	}
	if res.Body, err = json.Marshal(answer); err != nil {
		return Result{}, err
	}
	res.Code = http.StatusOK
	return res, nil
}

// scaleGVK is the kind of every scale subresource kwrec writes.
var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// replicasPaths are where a scaled object keeps its replicas, by
// apiVersion (k8s.io/kubernetes v1.37.2 pkg/registry/apps/*/storage and
// core/replicationcontroller/storage: replicasPathIn*).
var replicasPaths = managedfields.ResourcePathMappings{
	"apps/v1": fieldpath.MakePathOrDie("spec", "replicas"), "apps/v1beta1": fieldpath.MakePathOrDie("spec", "replicas"),
	"apps/v1beta2": fieldpath.MakePathOrDie("spec", "replicas"), "v1": fieldpath.MakePathOrDie("spec", "replicas"),
}

// trackScale sets obj's managedFields as the scale storage does for an
// update or a patch: the field manager compares the current Scale with
// next (see [write.scaleManaged]). A Scale's replicas is omitempty, so a
// scale to 0 sets no field its manager owns: the manager gets no entry,
// and whoever owned the replicas loses them.
func (w *write) trackScale(obj *object, next *autoscalingv1.Scale) error {
	nextCopy := next.DeepCopy()
	nextCopy.TypeMeta = metav1.TypeMeta{Kind: scaleGVK.Kind, APIVersion: scaleGVK.GroupVersion().String()}
	updated, err := runtime.DefaultUnstructuredConverter.ToUnstructured(nextCopy)
	if err != nil {
		return statusError(err)
	}
	_, entries, err := w.scaleManaged(func(fm *managedfields.FieldManager, live *object) (runtime.Object, error) {
		return fm.Update(live, &object{Object: updated}, w.manager())
	})
	if err != nil {
		obj.SetManagedFields(w.cur.GetManagedFields())
		return nil
	}
	obj.SetManagedFields(entries)
	return nil
}

// scaleManaged runs change, the field manager's update or apply, on the
// current Scale, whose owners a [managedfields.ScaleHandler] maps from
// the object's entries, as the scale storage does, and returns the Scale
// change made and its owners mapped back to the object's entries.
func (w *write) scaleManaged(change func(fm *managedfields.FieldManager, live *object) (runtime.Object, error)) (*object, []metav1.ManagedFieldsEntry, error) {
	h := managedfields.NewScaleHandler(w.cur.GetManagedFields(), w.gvk.GroupVersion(), w.replicasMappings())
	entries, err := h.ToSubresource()
	if err != nil {
		return nil, nil, statusError(err)
	}
	cur, err := w.currentScale()
	if err != nil {
		return nil, nil, err
	}
	cur.ManagedFields = entries
	live, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, nil, statusError(err)
	}
	// client-go's models have no Scale; the deduced converter's granular
	// maps are what the server's Scale schema is (no lists in it).
	fm, err := managedfields.NewDefaultFieldManager(w.engine.typeConverter(false), unstructuredConvertor{}, noDefaults{}, scaleCreater{},
		scaleGVK, scaleGVK.GroupVersion(), SubresourceScale, nil)
	if err != nil {
		return nil, nil, statusError(err)
	}
	out, err := change(fm, &object{Object: live})
	if err != nil {
		return nil, nil, statusError(err)
	}
	u, ok := out.(*object)
	if !ok {
		return nil, nil, statusError(errors.New("write: field manager returned a typed object"))
	}
	parent, err := h.ToParent(u.GetManagedFields())
	if err != nil {
		return nil, nil, statusError(err)
	}
	return u, parent, nil
}

// applyScale is a server-side apply to the scale subresource: the field
// manager applies the patch to the current Scale, whose replicas then
// become the object's.
func (w *write) applyScale() (Result, error) {
	patch, err := w.applyPatch()
	if err != nil {
		return Result{}, err
	}
	force := w.req.Query.Get("force") == "true"
	applied, entries, err := w.scaleManaged(func(fm *managedfields.FieldManager, live *object) (runtime.Object, error) {
		return fm.Apply(live, patch, w.req.Query.Get("fieldManager"), force)
	})
	if err != nil {
		return Result{}, err
	}
	b, err := applied.MarshalJSON()
	if err != nil {
		return Result{}, statusError(err)
	}
	s, err := w.decodeScale(b)
	if err != nil {
		return Result{}, err
	}
	obj, err := w.scaled(s)
	if err != nil {
		return Result{}, err
	}
	obj.SetManagedFields(entries)
	res, err := w.updated(obj)
	if err != nil {
		return Result{}, err
	}
	return scaleAnswer(res, w.req.Custom)
}

// scaleCreater makes the empty Scale the field manager starts from.
type scaleCreater struct{}

func (scaleCreater) New(gvk schema.GroupVersionKind) (runtime.Object, error) {
	u := &object{Object: map[string]any{}}
	u.SetGroupVersionKind(gvk)
	return u, nil
}

// noDefaults is the defaulter of a kind the server sets no defaults on.
type noDefaults struct{}

func (noDefaults) Default(runtime.Object) {}

// replicasMappings is where the object keeps the replicas a Scale
// changes, by apiVersion, as the scale storage maps managed fields: a
// custom resource's specReplicasPath, else a built-in kind's.
func (w *write) replicasMappings() managedfields.ResourcePathMappings {
	if !w.req.Custom.HasScale() {
		return replicasPaths
	}
	return managedfields.ResourcePathMappings{w.gvk.GroupVersion().String(): fieldpath.MakePathOrDie(toAny(w.replicasPath())...)}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// currentScale is the Scale of the current object. A custom resource
// without its spec replicas has one that a write must set, with the
// server's answer when it does not (scaleUpdatedObjectInfo).
func (w *write) currentScale() (*autoscalingv1.Scale, error) {
	if !w.req.Custom.HasScale() {
		s, err := scaleOf(w.cur, nil)
		if err != nil {
			return nil, statusError(err)
		}
		return s, nil
	}
	s, found, err := customScale(w.cur, w.req.Custom)
	if err != nil {
		return nil, statusError(err)
	}
	if !found {
		s.Spec.Replicas = invalidSpecReplicas
	}
	return s, nil
}

// invalidSpecReplicas marks a custom resource's Scale whose spec replicas
// were not set, as the server's scaleUpdatedObjectInfo does.
const invalidSpecReplicas = -2147483648

// validateScale is the built-in scale storages' ValidateScale: replicas
// not negative. A custom resource's Scale is not validated on its own:
// its replicas land in the object, which its definition validates.
func (w *write) validateScale(s *autoscalingv1.Scale) field.ErrorList {
	if w.req.Custom.HasScale() {
		return nil
	}
	return apivalidation.ValidateNonnegativeField(int64(s.Spec.Replicas), field.NewPath("spec", "replicas"))
}

// scaled is the current object with the replicas of s, a Scale the
// request made: refused as the scale storage refuses it (a custom
// resource's spec replicas unset, ValidateScale) before it touches the
// object.
func (w *write) scaled(s *autoscalingv1.Scale) (*object, error) {
	if s.Spec.Replicas == invalidSpecReplicas {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the spec replicas field %q cannot be empty", w.req.Custom.scale.SpecReplicasPath))
	}
	if errs := w.validateScale(s); len(errs) > 0 {
		return nil, apierrors.NewInvalid(scaleGVK.GroupKind(), w.req.Name, errs)
	}
	obj := deepCopy(w.cur)
	if err := unstructured.SetNestedField(obj.Object, int64(s.Spec.Replicas), w.replicasPath()...); err != nil {
		return nil, statusError(err)
	}
	return obj, nil
}
