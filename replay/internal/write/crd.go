package write

import (
	"context"

	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// CustomResourceDefinitions are written by the apiextensions-apiserver's
// own strategy (k8s.io/apiextensions-apiserver/pkg/registry/
// customresourcedefinition), which works on the group's internal types:
// each v1 object is converted to them for the strategy and back.

// isCRD reports whether the write is of a CustomResourceDefinition.
func (w *write) isCRD() bool {
	return w.gvk.Group == apiextensionsv1.GroupName && w.gvk.Kind == "CustomResourceDefinition"
}

// crdInternal converts a v1 CustomResourceDefinition in the server's JSON
// form to the internal type the strategy takes.
func crdInternal(obj *object) (*apiextensionsinternal.CustomResourceDefinition, error) {
	var v1 apiextensionsv1.CustomResourceDefinition
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &v1); err != nil {
		return nil, err
	}
	var in apiextensionsinternal.CustomResourceDefinition
	if err := apiextensionsv1.Convert_v1_CustomResourceDefinition_To_apiextensions_CustomResourceDefinition(&v1, &in, nil); err != nil {
		return nil, err
	}
	return &in, nil
}

// validateCRD is the strategy's validation of a CustomResourceDefinition
// created (old nil) or updated from old, or of a status update, with the
// warnings it answers a create or an update with. An object the
// conversion refuses was refused by the decode already: it is not
// validated again.
func (w *write) validateCRD(obj, old *object) field.ErrorList {
	ctx := context.Background()
	in, err := crdInternal(obj)
	if err != nil {
		return nil
	}
	strategy := customresourcedefinition.NewStrategy(serverTypes())
	if old == nil {
		w.warnings = append(w.warnings, strategy.WarningsOnCreate(ctx, in)...)
		return strategy.Validate(ctx, in)
	}
	prev, err := crdInternal(old)
	if err != nil {
		return nil
	}
	if w.req.Subresource == "status" {
		return customresourcedefinition.NewStatusStrategy(serverTypes()).ValidateUpdate(ctx, in, prev)
	}
	w.warnings = append(w.warnings, strategy.WarningsOnUpdate(ctx, in, prev)...)
	return strategy.ValidateUpdate(ctx, in, prev)
}

// prepareCRD is what the strategy's PrepareForCreate and PrepareForUpdate
// do to the status of a CustomResourceDefinition: the storage version is
// added to status.storedVersions.
func prepareCRD(o *apiextensionsv1.CustomResourceDefinition) {
	for _, v := range o.Spec.Versions {
		if !v.Storage {
			continue
		}
		for _, s := range o.Status.StoredVersions {
			if s == v.Name {
				return
			}
		}
		o.Status.StoredVersions = append(o.Status.StoredVersions, v.Name)
		return
	}
}
