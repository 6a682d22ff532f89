package write

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// fieldValidation is the request's fieldValidation directive: Ignore,
// Warn (the server's default) or Strict.
func (w *write) fieldValidation() string {
	if v := w.req.Query.Get("fieldValidation"); v != "" {
		return v
	}
	return metav1.FieldValidationWarn
}

// strictErrors returns the unknown and duplicate fields of data, the JSON
// of an object of the request's kind, as the server's strict decoder
// reports them: for a built-in kind by its Go type, for a custom resource
// by its schema (none without [Request.Custom]); nil under
// fieldValidation=Ignore.
func (w *write) strictErrors(data []byte) []error {
	if w.fieldValidation() == metav1.FieldValidationIgnore {
		return nil
	}
	if !w.kind.typed {
		if w.req.Custom == nil {
			return nil
		}
		errs, _ := kjson.UnmarshalStrict(data, &map[string]any{}, kjson.DisallowDuplicateFields)
		return append(errs, w.req.Custom.unknownFields(data)...)
	}
	obj, err := serverTypes().New(w.gvk)
	if err != nil {
		return nil
	}
	errs, err := kjson.UnmarshalStrict(data, obj, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return nil // not a strict error: the non-strict decode reports it
	}
	return errs
}

// checkBody handles the strict errors of a create's or an update's body:
// under Strict a 400 as the create and update handlers answer, under Warn
// Warning headers.
func (w *write) checkBody(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if w.fieldValidation() == metav1.FieldValidationStrict {
		return apierrors.NewBadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", w.gvk.Kind, w.gvk.Version, w.gvk.Kind, runtime.NewStrictDecodingError(errs)))
	}
	w.warn(errs)
	return nil
}

// checkPatchedStrict handles the strict errors of a patch and of the object it
// made: under Strict the patch handler's 422 on the field "patch", under
// Warn Warning headers.
func (w *write) checkPatchedStrict(patched []byte, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	if w.fieldValidation() == metav1.FieldValidationStrict {
		return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), string(patched), runtime.NewStrictDecodingError(errs).Error()),
		})
	}
	w.warn(errs)
	return nil
}

func (w *write) warn(errs []error) {
	for _, e := range errs {
		w.warnings = append(w.warnings, e.Error())
	}
}
