package write

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// delete handles a DELETE (registry Store.Delete). An object is deleted
// at once unless it has finalizers, when it is marked with a
// deletionTimestamp instead; Pods are deleted gracefully ([write.graceful]).
func (w *write) delete() (Result, error) {
	opts, err := w.deleteOptions()
	if err != nil {
		return Result{}, err
	}
	if w.cur == nil {
		return Result{}, apierrors.NewNotFound(w.gr, w.req.Name)
	}
	cur := w.cur
	if p := opts.Preconditions; p != nil {
		// rest.BeforeDelete names the resource by its Kind here.
		gr := schema.GroupResource{Group: w.gvk.Group, Resource: w.gvk.Kind}
		if p.UID != nil && *p.UID != cur.GetUID() {
			return Result{}, apierrors.NewConflict(gr, cur.GetName(), fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, cur.GetUID()))
		}
		if p.ResourceVersion != nil && *p.ResourceVersion != cur.GetResourceVersion() {
			return Result{}, apierrors.NewConflict(gr, cur.GetName(), fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, cur.GetResourceVersion()))
		}
	}
	obj := deepCopy(cur)
	period, graceful, pending := w.graceful(obj, opts)
	if pending {
		return w.unchanged(cur, cur)
	}
	finalizers := gcFinalizers(obj.GetFinalizers(), opts)
	obj.SetFinalizers(finalizers)
	switch {
	case len(finalizers) == 0 && graceful && period > 0:
		// Marked; the kubelet removes the Pod once it has stopped it.
		obj.SetResourceVersion(w.st.RV)
		data, err := encode(obj)
		if err != nil {
			return Result{}, err
		}
		return Result{Object: data, Body: data, Code: http.StatusOK, Event: EventModified}, nil
	case len(finalizers) == 0 && graceful:
		marked, err := encode(obj)
		if err != nil {
			return Result{}, err
		}
		res, err := w.deleted(obj)
		res.Marked = marked
		return res, err
	case len(finalizers) == 0:
		return w.deleted(obj)
	}
	markAsDeleting(obj, metav1.NewTime(w.st.Now))
	if equalIgnoringTimes(obj, cur) {
		return w.unchanged(cur, cur)
	}
	obj.SetResourceVersion(w.st.RV)
	data, err := encode(obj)
	if err != nil {
		return Result{}, err
	}
	return Result{Object: data, Body: data, Code: http.StatusOK, Event: EventModified}, nil
}

// graceful is rest.BeforeDelete with the Pod strategy's
// CheckGracefulDelete, the only graceful one among built-in resources. A
// Pod not yet being deleted gets a deletionTimestamp period seconds from
// now and deletionGracePeriodSeconds period: the options' grace period,
// else its terminationGracePeriodSeconds, but 0 when no node runs it or
// it has terminated. A Pod being deleted may only have its period
// shortened; pending says it is left as it is (the answer is the Pod, no
// event). obj is marked in place.
func (w *write) graceful(obj *object, opts metav1.DeleteOptions) (period int64, graceful, pending bool) {
	if w.gvk.Group != "" || w.gvk.Kind != "Pod" {
		return 0, false, false
	}
	if g := opts.GracePeriodSeconds; g != nil && *g < 0 {
		opts.GracePeriodSeconds = ptr[int64](1)
	}
	now := w.st.Now.Truncate(time.Second)
	if ts := obj.GetDeletionTimestamp(); ts != nil {
		cur := obj.GetDeletionGracePeriodSeconds()
		switch {
		case cur == nil || *cur == 0:
			return 0, false, false // delete at once
		case opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *cur:
			return 0, false, true
		}
		period = *opts.GracePeriodSeconds
		at := metav1.NewTime(ts.Add(-time.Duration(*cur) * time.Second).Add(time.Duration(period) * time.Second))
		obj.SetDeletionTimestamp(&at)
		obj.SetDeletionGracePeriodSeconds(&period)
		return period, true, false
	}
	switch {
	case opts.GracePeriodSeconds != nil:
		period = *opts.GracePeriodSeconds
	default:
		period, _, _ = unstructured.NestedInt64(obj.Object, "spec", "terminationGracePeriodSeconds")
	}
	node, _, _ := unstructured.NestedString(obj.Object, "spec", "nodeName")
	phase, _, _ := unstructured.NestedString(obj.Object, "status", "phase")
	if node == "" || phase == string(corev1.PodFailed) || phase == string(corev1.PodSucceeded) {
		period = 0
	}
	at := metav1.NewTime(now.Add(time.Duration(period) * time.Second))
	obj.SetDeletionTimestamp(&at)
	obj.SetDeletionGracePeriodSeconds(&period)
	if g := obj.GetGeneration(); g > 0 {
		obj.SetGeneration(g + 1)
	}
	return period, true, false
}

// deleteOptions decodes the optional DeleteOptions body and the
// propagationPolicy query parameter.
func (w *write) deleteOptions() (metav1.DeleteOptions, error) {
	var opts metav1.DeleteOptions
	if len(w.req.Body) > 0 {
		if err := kjson.UnmarshalCaseSensitivePreserveInts(w.req.Body, &opts); err != nil {
			return opts, apierrors.NewBadRequest(err.Error())
		}
	}
	if p := w.req.Query.Get("propagationPolicy"); p != "" {
		pp := metav1.DeletionPropagation(p)
		opts.PropagationPolicy = &pp
	}
	if pp := opts.PropagationPolicy; pp != nil {
		switch *pp {
		case metav1.DeletePropagationBackground, metav1.DeletePropagationForeground, metav1.DeletePropagationOrphan:
		default:
			return opts, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", field.ErrorList{
				field.NotSupported(field.NewPath("propagationPolicy"), *pp, []string{string(metav1.DeletePropagationForeground), string(metav1.DeletePropagationBackground), string(metav1.DeletePropagationOrphan)}),
			})
		}
	}
	return opts, nil
}

// gcFinalizers is deletionFinalizersForGarbageCollection with the default
// policy (background): the orphan and foregroundDeletion finalizers follow
// the options, or else what the object already has.
func gcFinalizers(have []string, opts metav1.DeleteOptions) []string {
	orphan, foreground := false, false
	for _, f := range have {
		if f == metav1.FinalizerOrphanDependents || f == metav1.FinalizerDeleteDependents {
			// The first of the two decides, as in the store.
			orphan, foreground = f == metav1.FinalizerOrphanDependents, f == metav1.FinalizerDeleteDependents
			break
		}
	}
	//lint:ignore SA1019 deprecated for clients, still honoured by the API server, first.
	od := opts.OrphanDependents
	switch {
	case od != nil:
		orphan, foreground = *od, false
	case opts.PropagationPolicy != nil:
		orphan = *opts.PropagationPolicy == metav1.DeletePropagationOrphan
		foreground = *opts.PropagationPolicy == metav1.DeletePropagationForeground
	}
	var out []string
	for _, f := range have {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	if sameSet(out, have) {
		return have
	}
	return out
}

func sameSet(a, b []string) bool {
	m := map[string]bool{}
	for _, s := range a {
		m[s] = true
	}
	n := map[string]bool{}
	for _, s := range b {
		if !m[s] {
			return false
		}
		n[s] = true
	}
	return len(m) == len(n)
}

// markAsDeleting is the store's markAsDeleting: generation bumps on the
// first mark, the deletionTimestamp is now (or earlier), the grace period 0.
func markAsDeleting(obj *object, now metav1.Time) {
	if obj.GetDeletionTimestamp() == nil && obj.GetGeneration() > 0 {
		obj.SetGeneration(obj.GetGeneration() + 1)
	}
	if ts := obj.GetDeletionTimestamp(); ts == nil || ts.After(now.Time) {
		obj.SetDeletionTimestamp(&now)
	}
	var zero int64
	obj.SetDeletionGracePeriodSeconds(&zero)
}

// deleted answers a delete that removes the object: the object for stores
// with ReturnDeletedObject, else a Success Status naming it.
func (w *write) deleted(obj *object) (Result, error) {
	obj.SetResourceVersion(w.st.RV)
	data, err := encode(obj)
	if err != nil {
		return Result{}, err
	}
	body := data
	if !w.kind.returnDeletedObject {
		st := metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusSuccess,
			Details: &metav1.StatusDetails{
				Name:  obj.GetName(),
				Group: w.gr.Group,
				Kind:  w.gr.Resource,
				UID:   obj.GetUID(),
			},
		}
		if body, err = json.Marshal(st); err != nil {
			return Result{}, statusError(err)
		}
	}
	return Result{Object: data, Body: body, Code: http.StatusOK, Event: EventDeleted}, nil
}
