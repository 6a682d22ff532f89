package write

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

// maxJSONPatchOperations is the patch handler's limit.
const maxJSONPatchOperations = 10000

// patchTypes returns the patch media types the server accepts for the
// resource, in its order: strategic merge patch only for built-in types,
// CBOR apply only behind a feature gate that is off by default.
func (w *write) patchTypes() []string {
	if w.kind.typed {
		return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}
	}
	return []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.ApplyYAMLPatchType)}
}

// patch handles a PATCH (the patch handler, then registry Store.Update).
func (w *write) patch() (Result, error) {
	pt := types.PatchType(w.req.ContentType)
	accepted := w.patchTypes()
	if !contains(accepted, string(pt)) {
		if w.kind.typed {
			// go-restful checks the route's Consumes before the handler.
			return Result{}, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status:  metav1.StatusFailure,
				Code:    http.StatusUnsupportedMediaType,
				Reason:  metav1.StatusReasonUnsupportedMediaType,
				Message: "415: Unsupported Media Type",
			}}
		}
		return Result{}, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status:  metav1.StatusFailure,
			Code:    http.StatusUnsupportedMediaType,
			Reason:  metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
		}}
	}
	if err := w.validatePatchOptions(pt); err != nil {
		return Result{}, err
	}
	if pt == types.ApplyYAMLPatchType {
		return w.apply()
	}
	if w.cur == nil {
		return Result{}, apierrors.NewNotFound(w.gr, w.req.Name)
	}
	var obj *object
	var err error
	if pt == types.StrategicMergePatchType {
		obj, err = w.strategicMergePatch()
	} else {
		obj, err = w.jsonPatch(pt)
	}
	if err != nil {
		return Result{}, err
	}
	if err := w.checkPatched(obj); err != nil {
		return Result{}, err
	}
	if err := w.trackUpdate(obj, w.cur); err != nil {
		return Result{}, err
	}
	return w.updated(obj)
}

// validatePatchOptions is validation.ValidatePatchOptions.
func (w *write) validatePatchOptions(pt types.PatchType) error {
	var errs field.ErrorList
	if pt != types.ApplyYAMLPatchType {
		if w.req.Query.Has("force") {
			errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
		}
	} else if w.req.Query.Get("fieldManager") == "" {
		errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "PatchOptions"}, "", errs)
	}
	return nil
}

// jsonPatch applies a JSON patch or a JSON merge patch to the current
// object's JSON, as the handler's jsonPatcher does.
func (w *write) jsonPatch(pt types.PatchType) (*object, error) {
	curJS, err := w.encodeTyped(w.cur)
	if err != nil {
		return nil, err
	}
	var patched []byte
	var applied []error // the patch's own strict errors
	if w.kind.typed && w.fieldValidation() != metav1.FieldValidationIgnore {
		var v any = map[string]any{}
		if pt == types.JSONPatchType {
			v = []map[string]any{}
		}
		errs, err := kjson.UnmarshalStrict(w.req.Body, &v)
		if err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
		for _, e := range errs {
			if pt == types.JSONPatchType {
				e = fmt.Errorf("json patch %v", e)
			}
			applied = append(applied, e)
		}
	}
	if pt == types.JSONPatchType {
		ops, err := jsonpatch.DecodePatch(w.req.Body)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		if patched, err = ops.Apply(curJS); err != nil {
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	} else {
		patched, err = jsonpatch.MergePatch(curJS, w.req.Body)
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if err != nil {
			return nil, statusError(err)
		}
	}
	if err := w.checkPatchedStrict(patched, append(applied, w.strictErrors(patched)...)); err != nil {
		return nil, err
	}
	return w.decodePatched(patched)
}

// decodePatched decodes a patched object into the resource's type; a
// failure is a 422 on the field "patch" as the handler reports it.
func (w *write) decodePatched(patched []byte) (*object, error) {
	invalid := func(err error) error {
		return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), string(patched), err.Error()),
		})
	}
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(patched, &m); err != nil {
		return nil, invalid(err)
	}
	obj := &object{Object: m}
	if err := w.checkKind(obj); err != nil {
		return nil, err
	}
	if err := w.normalize(obj); err != nil {
		return nil, invalid(err)
	}
	return obj, nil
}

// checkKind refuses a patched object whose apiVersion or kind left the
// resource's; absent ones default to it.
func (w *write) checkKind(obj *object) error {
	if obj.GetAPIVersion() == "" {
		obj.SetAPIVersion(w.gvk.GroupVersion().String())
	}
	if obj.GetKind() == "" {
		obj.SetKind(w.gvk.Kind)
	}
	if got := obj.GroupVersionKind(); got != w.gvk {
		return apierrors.NewBadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", got.GroupVersion(), w.gvk.GroupVersion()))
	}
	return nil
}

// strategicMergePatch applies a strategic merge patch with the Go type of
// a built-in kind as its schema.
func (w *write) strategicMergePatch() (*object, error) {
	ref, err := serverTypes().New(w.gvk)
	if err != nil {
		return nil, statusError(err)
	}
	patchMap := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(w.req.Body, &patchMap); err != nil {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	patched, err := strategicpatch.StrategicMergeMapPatch(deepCopy(w.cur).Object, patchMap, ref)
	if err != nil {
		switch err {
		case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys, mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
			return nil, apierrors.NewBadRequest(err.Error())
		case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
			return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
		return nil, statusError(err)
	}
	if w.fieldValidation() != metav1.FieldValidationIgnore {
		var dups []error
		if errs, err := kjson.UnmarshalStrict(w.req.Body, &map[string]any{}); err == nil {
			dups = errs
		}
		js, err := json.Marshal(patched)
		if err != nil {
			return nil, statusError(err)
		}
		if errs := append(dups, w.strictErrors(js)...); len(errs) > 0 {
			if w.fieldValidation() == metav1.FieldValidationStrict {
				return nil, apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
					field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), runtime.NewStrictDecodingError(errs).Error()),
				})
			}
			w.warn(errs)
		}
	}
	obj := &object{Object: patched}
	if err := w.checkKind(obj); err != nil {
		return nil, err
	}
	badPatch := func(err error) error {
		return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), fmt.Sprintf("%+v", patchMap), err.Error()),
		})
	}
	if w.kind.typed {
		// The server turns the patched map into its Go type with the
		// unstructured converter, whose words a wrong type gets ("cannot
		// restore map from string").
		if typed, err := serverTypes().New(w.gvk); err == nil {
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(patched, typed); err != nil {
				return nil, badPatch(err)
			}
		}
	}
	if err := w.normalize(obj); err != nil {
		return nil, badPatch(err)
	}
	return obj, nil
}

// checkPatched is the patcher's applyPatch checks: no uid on a created
// object, the request's namespace, the URL's name.
func (w *write) checkPatched(obj *object) error {
	if w.cur == nil && obj.GetUID() != "" {
		return apierrors.NewConflict(w.gr, w.req.Name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", obj.GetUID()))
	}
	if err := w.ensureNamespace(obj); err != nil {
		return err
	}
	return w.checkName(obj)
}

// apply handles server-side apply: the field manager merges the applied
// configuration, with conflicts unless force; a missing object is created.
func (w *write) apply() (Result, error) {
	patch, err := w.applyPatch()
	if err != nil {
		return Result{}, err
	}
	fm, err := w.fieldManager()
	if err != nil {
		return Result{}, statusError(err)
	}
	live := w.cur
	if live == nil {
		live = w.newEmpty()
	}
	force := w.req.Query.Get("force") == "true"
	out, err := fm.Apply(live, patch, w.req.Query.Get("fieldManager"), force)
	if err != nil {
		return Result{}, statusError(err)
	}
	obj, ok := out.(*object)
	if !ok {
		return Result{}, statusError(errors.New("write: field manager returned a typed object"))
	}
	if !w.kind.typed {
		// The applied YAML's numbers are float64, as JSON's; the
		// server's custom resource decoder reads integers as int64,
		// which its schema and CEL rules then check.
		if err := reread(obj); err != nil {
			return Result{}, statusError(err)
		}
	}
	if err := w.normalize(obj); err != nil {
		return Result{}, statusError(err)
	}
	if err := w.checkPatched(obj); err != nil {
		return Result{}, err
	}
	if w.cur == nil {
		return w.createViaUpdate(obj)
	}
	return w.updated(obj)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// reread decodes obj anew from its JSON, integers as int64.
func reread(obj *object) error {
	b, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(b, &m); err != nil {
		return err
	}
	obj.Object = m
	return nil
}

// applyPatch decodes the body of a server-side apply, YAML or JSON, as
// the server's apply patcher does.
func (w *write) applyPatch() (*object, error) {
	patch := &object{Object: map[string]any{}}
	if err := yaml.Unmarshal(w.req.Body, &patch.Object); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
	}
	if patch.Object == nil {
		patch.Object = map[string]any{}
	}
	return patch, nil
}
