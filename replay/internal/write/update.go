package write

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// update handles a PUT (the update handler, then registry Store.Update).
func (w *write) update() (Result, error) {
	obj, err := w.decodeBody()
	if err != nil {
		return Result{}, err
	}
	if err := w.checkName(obj); err != nil {
		return Result{}, err
	}
	if w.cur == nil {
		if !w.kind.createOnUpdate || w.req.Subresource != "" {
			return Result{}, apierrors.NewNotFound(w.gr, w.req.Name)
		}
		// Create on update: the system fields are wiped after the
		// managedFields update, as Store.Update does.
		if err := w.trackUpdate(obj, w.newEmpty()); err != nil {
			return Result{}, err
		}
		return w.createViaUpdate(obj)
	}
	if err := w.trackUpdate(obj, w.cur); err != nil {
		return Result{}, err
	}
	return w.updated(obj)
}

// createViaUpdate creates obj from a PUT or an apply of a missing object.
func (w *write) createViaUpdate(obj *object) (Result, error) {
	wipeSystemFields(obj)
	if !w.req.DryRun {
		// A dry run keeps the body's, as the dry-run storage copies the
		// object it would create.
		unstructured.RemoveNestedField(obj.Object, "metadata", "resourceVersion")
	}
	if err := w.beforeCreate(obj); err != nil {
		return Result{}, err
	}
	return w.created(obj)
}

// checkName is the handlers' checkName: the object's name must be the URL's
// and its namespace, if set, the request's.
func (w *write) checkName(obj *object) error {
	if obj.GetName() != w.req.Name {
		return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", obj.GetName(), w.req.Name))
	}
	if w.req.Namespace != "" && obj.GetNamespace() != "" && obj.GetNamespace() != w.req.Namespace {
		return apierrors.NewBadRequest(fmt.Sprintf("the namespace of the object (%s) does not match the namespace on the request (%s)", obj.GetNamespace(), w.req.Namespace))
	}
	return nil
}

// updated finishes a write to an existing object: Store.Update's
// resourceVersion rules, rest.BeforeUpdate, the strategy's PrepareForUpdate,
// deletion when the last finalizer goes, and the no-op check.
func (w *write) updated(obj *object) (Result, error) {
	cur := w.cur
	switch rv := obj.GetResourceVersion(); {
	case rv == "" && w.kind.conditionalUpdate:
		return Result{}, apierrors.NewInvalid(schema.GroupKind{Group: w.gr.Group, Kind: w.gr.Resource}, w.req.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), 0, "must be specified for an update"),
		})
	case rv != "" && rv != cur.GetResourceVersion():
		return Result{}, apierrors.NewConflict(w.gr, w.req.Name, errors.New(optimisticLockErrorMsg))
	}
	if err := w.ensureNamespace(obj); err != nil {
		return Result{}, err
	}
	obj = w.prepareForUpdate(obj)
	if obj.GetUID() == "" {
		obj.SetUID(cur.GetUID())
	} else if obj.GetUID() != cur.GetUID() {
		return Result{}, apierrors.NewInvalid(w.gvk.GroupKind(), w.req.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "uid"), obj.GetUID(), "field is immutable"),
		})
	}
	if ts, ok, _ := unstructured.NestedFieldNoCopy(cur.Object, "metadata", "creationTimestamp"); ok && ts != nil {
		_ = unstructured.SetNestedField(obj.Object, ts, "metadata", "creationTimestamp")
	}
	if cur.GetDeletionTimestamp() != nil {
		obj.SetDeletionTimestamp(cur.GetDeletionTimestamp())
	}
	if cur.GetDeletionGracePeriodSeconds() != nil && obj.GetDeletionGracePeriodSeconds() == nil {
		obj.SetDeletionGracePeriodSeconds(cur.GetDeletionGracePeriodSeconds())
	}
	if err := w.normalize(obj); err != nil {
		return Result{}, statusError(err)
	}
	if err := w.validate(obj, cur); err != nil {
		return Result{}, err
	}
	obj.SetResourceVersion(cur.GetResourceVersion())
	if cur.GetDeletionTimestamp() != nil && len(obj.GetFinalizers()) == 0 {
		return w.deletedByUpdate(obj)
	}
	st, err := w.stored(obj)
	if err != nil {
		return Result{}, err
	}
	if equalIgnoringTimes(st, cur) {
		return w.unchanged(cur, cur)
	}
	if w.req.Subresource != SubresourceScale {
		// A scale write's entries are the scale handler's, times and all
		// (trackScale): the server stamps none on the scaled object.
		stampManagedFields(obj, cur, metav1.NewTime(w.st.Now))
	}
	if w.isApply() && equalContent(st, cur) {
		// An apply that changed nothing but managedFields: the server's
		// field manager returns no new object, so the applier's entry
		// keeps the time it had (none when it is new).
		keepApplyTime(obj, cur, w.req.Query.Get("fieldManager"))
	}
	obj.SetResourceVersion(w.st.RV)
	if obj, err = w.stored(obj); err != nil {
		return Result{}, err
	}
	data, err := encode(obj)
	if err != nil {
		return Result{}, err
	}
	return Result{Object: data, Body: data, Code: http.StatusOK, Event: EventModified}, nil
}

// prepareForUpdate is the strategy's PrepareForUpdate: generation and the
// split between the main resource and the status subresource. A status
// update keeps everything of the current object but .status and
// managedFields, as the custom resource status strategy does.
func (w *write) prepareForUpdate(obj *object) *object {
	cur := w.cur
	if w.req.Subresource == SubresourceApproval {
		// The approval strategy takes only status.conditions.
		out := deepCopy(cur)
		conds, ok, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		if ok {
			// The strategy dates the conditions that carry no time.
			now := metav1.NewTime(w.st.Now).Rfc3339Copy().UTC().Format(time.RFC3339)
			for _, c := range conds {
				if m, isMap := c.(map[string]any); isMap {
					for _, k := range []string{"lastUpdateTime", "lastTransitionTime"} {
						if v, _ := m[k].(string); v == "" {
							m[k] = now
						}
					}
				}
			}
			_ = unstructured.SetNestedField(out.Object, conds, "status", "conditions")
		} else {
			unstructured.RemoveNestedField(out.Object, "status", "conditions")
		}
		out.SetManagedFields(obj.GetManagedFields())
		out.SetResourceVersion(obj.GetResourceVersion())
		return out
	}
	if w.req.Subresource == "status" {
		out := deepCopy(cur)
		if st, ok := obj.Object["status"]; ok {
			out.Object["status"] = st
		} else {
			delete(out.Object, "status")
		}
		if w.kind.typed {
			w.statusMetadata(out, obj)
		}
		out.SetManagedFields(obj.GetManagedFields())
		out.SetResourceVersion(obj.GetResourceVersion())
		return out
	}
	if w.kind.status {
		if st, ok := cur.Object["status"]; ok {
			obj.Object["status"] = st
		} else {
			delete(obj.Object, "status")
		}
	}
	obj.SetGeneration(cur.GetGeneration())
	if w.kind.generation && w.specChanged(obj) {
		obj.SetGeneration(cur.GetGeneration() + 1)
	}
	if w.isCRD() {
		_ = w.roundTrip(obj, func(o runtime.Object) {
			if crd, ok := o.(*apiextensionsv1.CustomResourceDefinition); ok {
				prepareCRD(crd)
			}
		})
	}
	return obj
}

// specChanged reports whether obj differs from the current object outside
// metadata (and status, when the status subresource owns it).
func (w *write) specChanged(obj *object) bool {
	// Both are in the normalized form already: the current object as the
	// server stores it, obj through normalize.
	cur := deepCopy(w.cur)
	next := deepCopy(obj)
	skip := []string{"metadata", "apiVersion", "kind"}
	if w.kind.status {
		skip = append(skip, "status")
	}
	if !equality.Semantic.DeepEqual(withoutKeys(next, skip...), withoutKeys(cur, skip...)) {
		return true
	}
	return w.kind.annotationsBumpGeneration && !equality.Semantic.DeepEqual(next.GetAnnotations(), cur.GetAnnotations())
}

// unchanged answers a write that changed nothing: no event, no new
// resourceVersion, the body being answer.
func (w *write) unchanged(stored, answer *object) (Result, error) {
	obj, err := encode(stored)
	if err != nil {
		return Result{}, err
	}
	body, err := encode(answer)
	if err != nil {
		return Result{}, err
	}
	return Result{Object: obj, Body: body, Code: http.StatusOK}, nil
}

// deletedByUpdate answers an update that removed the last finalizer of an
// object being deleted: the store deletes it and answers with the updated
// object as it was before storage, still carrying the current
// resourceVersion (Store.deleteWithoutFinalizers). The watch's DELETED
// event carries the object as it was stored, finalizers and all.
func (w *write) deletedByUpdate(obj *object) (Result, error) {
	stampManagedFields(obj, w.cur, metav1.NewTime(w.st.Now))
	body, err := encode(obj)
	if err != nil {
		return Result{}, err
	}
	last := deepCopy(w.cur)
	last.SetResourceVersion(w.st.RV)
	data, err := encode(last)
	if err != nil {
		return Result{}, err
	}
	return Result{Object: data, Body: body, Code: http.StatusOK, Event: EventDeleted}, nil
}

// statusMetadata gives out, a status write's result, the metadata of obj,
// the object the request made, as a built-in kind's status strategy keeps
// it (k8s.io/kubernetes v1.37.2 pkg/registry/*/strategy.go, the
// PrepareForUpdate of each status strategy): most reset only the spec; a
// Deployment's keeps its labels, a Pod's its owner references, and a few
// reset the metadata whole (ResetObjectMetaForStatus, or the flow
// control kinds' copy of it). The generic store then keeps the system
// fields (uid, creation, generation). A custom resource's status write
// keeps none of the request's metadata (its status strategy copies the
// old object).
func (w *write) statusMetadata(out, obj *object) {
	if statusResetsMetadata[w.gr.String()] {
		return
	}
	meta, ok := obj.Object["metadata"].(map[string]any)
	if !ok {
		return
	}
	cur := w.cur
	next := &object{Object: map[string]any{"metadata": runtime.DeepCopyJSONValue(meta)}}
	switch w.gr.String() {
	case "deployments.apps":
		next.SetLabels(cur.GetLabels())
	case "pods":
		next.SetOwnerReferences(cur.GetOwnerReferences())
	}
	next.SetGeneration(cur.GetGeneration())
	out.Object["metadata"] = next.Object["metadata"]
}

// statusResetsMetadata are the built-in resources whose status strategy
// keeps the old object's metadata.
var statusResetsMetadata = set(
	"servicecidrs.networking.k8s.io", "storageversionmigrations.storagemigration.k8s.io",
	"storageversions.internal.apiserver.k8s.io", "volumeattachments.storage.k8s.io", "csinodes.storage.k8s.io",
	"flowschemas.flowcontrol.apiserver.k8s.io", "prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
	"podcertificaterequests.certificates.k8s.io", "podgroups.scheduling.k8s.io", "compositepodgroups.scheduling.k8s.io",
	"resourceclaims.resource.k8s.io", "devicetaintrules.resource.k8s.io", "resourcepoolstatusrequests.resource.k8s.io",
)
