package write

import (
	"errors"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
)

// maxGeneratedNameLength is names.maxGeneratedNameLength: 63 - 5 random
// characters.
const maxGeneratedNameLength = 58

// create handles a POST to the collection (the create handler, then
// registry Store.Create).
func (w *write) create() (Result, error) {
	obj, err := w.decodeBody()
	if err != nil {
		return Result{}, err
	}
	wipeSystemFields(obj)
	if err := w.ensureNamespace(obj); err != nil {
		return Result{}, err
	}
	if obj.GetResourceVersion() != "" && !w.req.DryRun {
		// etcd3 store.Create refuses it with a plain error: a 500.
		return Result{}, statusError(errors.New("resourceVersion should not be set on objects to be created"))
	}
	if err := w.roundTrip(obj, createdByManager); err != nil {
		return Result{}, statusError(err)
	}
	if err := w.trackUpdate(obj, w.newEmpty()); err != nil {
		return Result{}, err
	}
	if err := w.beforeCreate(obj); err != nil {
		return Result{}, err
	}
	if w.cur != nil {
		err := apierrors.NewAlreadyExists(w.gr, obj.GetName())
		if w.cur.GetDeletionTimestamp() != nil {
			// Store.Create says why the name is still taken.
			err.ErrStatus.Message = "object is being deleted: " + err.ErrStatus.Message
		}
		return Result{}, err
	}
	return w.created(obj)
}

// beforeCreate is rest.BeforeCreate with the strategy's PrepareForCreate:
// name generation, namespace, status reset, generation, system fields.
func (w *write) beforeCreate(obj *object) error {
	if obj.GetName() == "" && obj.GetGenerateName() != "" {
		base := obj.GetGenerateName()
		if len(base) > maxGeneratedNameLength {
			base = base[:maxGeneratedNameLength]
		}
		obj.SetName(base + w.st.Suffix)
	}
	if err := w.ensureNamespace(obj); err != nil {
		return err
	}
	// A missing name is one of the validation's errors ("name or
	// generateName is required"), reported with the others, as the
	// strategy's Validate does.
	if w.kind.status {
		unstructured.RemoveNestedField(obj.Object, "status")
	}
	if w.kind.generation {
		obj.SetGeneration(1)
	} else {
		obj.SetGeneration(0)
	}
	obj.SetUID(types.UID(w.st.UID))
	obj.SetCreationTimestamp(metav1.NewTime(w.st.Now))
	if err := w.roundTrip(obj, func(o runtime.Object) { setDefaults(o); prepareForCreate(o, w.st.UID) }); err != nil {
		return err
	}
	if err := w.validate(obj, nil); err != nil {
		return err
	}
	w.warnings = append(w.warnings, w.warningsOnCreate(obj)...)
	return nil
}

// warningsOnCreate are the create strategy's warnings (WarningsOnCreate,
// after validation passed) that kwrec models: a Pod's or a workload's
// name that is not a DNS label, which its Pods' hostnames come from
// (k8s.io/kubernetes v1.37.2 pkg/registry/core/pod/strategy.go, and
// apps/deployment, apps/replicaset, batch/job, batch/cronjob and
// core/replicationcontroller's strategy.go).
func (w *write) warningsOnCreate(obj *object) []string {
	if !w.kind.typed {
		return nil
	}
	var what string
	switch w.gr.String() {
	case "pods":
		what = "the Pod's hostname"
	case "deployments.apps", "replicasets.apps", "jobs.batch", "cronjobs.batch", "replicationcontrollers":
		what = "Pod names and hostnames"
	default:
		return nil
	}
	if msgs := validation.IsDNS1123Label(obj.GetName()); len(msgs) > 0 {
		return []string{fmt.Sprintf("metadata.name: this is used in %s, which can result in surprising behavior; a DNS label is recommended: %v", what, msgs)}
	}
	return nil
}

// created finishes a write that creates the object.
func (w *write) created(obj *object) (Result, error) {
	if err := w.normalize(obj); err != nil {
		return Result{}, statusError(err)
	}
	if !w.req.DryRun {
		obj.SetResourceVersion(w.st.RV)
	}
	stampManagedFields(obj, nil, metav1.NewTime(w.st.Now))
	obj, err := w.stored(obj)
	if err != nil {
		return Result{}, err
	}
	data, err := encode(obj)
	if err != nil {
		return Result{}, err
	}
	return Result{Object: data, Body: data, Code: http.StatusCreated, Event: EventAdded}, nil
}

// newEmpty returns the empty object of the request's kind, the "live
// object" of a create: for a built-in kind the zero value of its Go type,
// whose non-optional structs (spec, status) the new object's manager then
// does not own as a whole.
func (w *write) newEmpty() *object {
	u := &object{Object: map[string]any{}}
	u.SetGroupVersionKind(w.gvk)
	_ = w.roundTrip(u, nil)
	return u
}

// trackUpdate records the write in obj's managedFields as an Update by the
// request's manager, keeping live's entries if that fails (the server's
// UpdateNoErrors).
func (w *write) trackUpdate(obj, live *object) error {
	fm, err := w.fieldManager()
	if err != nil {
		return statusError(err)
	}
	out, err := fm.Update(live, obj, w.manager())
	if err != nil {
		obj.SetManagedFields(live.GetManagedFields())
		return nil
	}
	u, ok := out.(*object)
	if !ok {
		return statusError(errors.New("write: field manager returned a typed object"))
	}
	*obj = *u
	return nil
}

// wipeSystemFields is rest.WipeObjectMetaSystemFields.
func wipeSystemFields(obj *object) {
	unstructured.RemoveNestedField(obj.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(obj.Object, "metadata", "uid")
	unstructured.RemoveNestedField(obj.Object, "metadata", "deletionTimestamp")
	unstructured.RemoveNestedField(obj.Object, "metadata", "deletionGracePeriodSeconds")
	unstructured.RemoveNestedField(obj.Object, "metadata", "selfLink")
}

// ensureNamespace is rest.EnsureObjectNamespaceMatchesRequestNamespace.
func (w *write) ensureNamespace(obj *object) error {
	want := ""
	if w.req.Namespaced {
		want = w.req.Namespace
	}
	switch ns := obj.GetNamespace(); {
	case ns == want:
	case ns == "":
		obj.SetNamespace(want)
	case want == "":
		obj.SetNamespace("")
	default:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}
