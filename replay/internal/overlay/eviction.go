package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// evict evicts the Pod as kube-apiserver v1.37.2's eviction subresource
// does (k8s.io/kubernetes pkg/registry/core/pod/storage/eviction.go,
// EvictionREST.Create): the Eviction's name must be the URL's, dryRun
// comes from the query or the Eviction's deleteOptions, and an allowed
// eviction first writes the Pod's DisruptionTarget condition (unless dry
// run; a watch sees that MODIFIED event) and then deletes it, with the
// Pod's resourceVersion as a precondition unless it is terminal or being
// deleted. kwrec does not weigh PodDisruptionBudgets: every eviction is
// allowed, as on a cluster with none (the server does not weigh them for
// a Pending, finished or deleted Pod either).
func (wr *Writer) evict(t *timeline.Timeline, w write.Request) ([]byte, error) {
	var ev policyv1.Eviction
	if err := json.Unmarshal(w.Body, &ev); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Eviction in version \"v1\" cannot be handled as a Eviction: %v", err))
	}
	if ev.Name != "" && ev.Name != w.Name {
		return nil, apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	opts, err := evictionDeleteOptions(&ev, w.DryRun)
	if err != nil {
		return nil, err
	}
	del := w
	del.Verb, del.Subresource, del.ContentType = "delete", "", wire.MediaJSON
	del.DryRun = len(opts.DryRun) > 0
	for range writeRetries {
		o, pod, err := currentAs[corev1.Pod](wr, t, w)
		if err != nil {
			return nil, err
		}
		podOpts := opts
		if enforcesResourceVersion(pod) && (opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil) {
			podOpts.Preconditions = &metav1.Preconditions{UID: preconditionUID(opts), ResourceVersion: &pod.ResourceVersion}
		}
		if !del.DryRun {
			rv, err := wr.markDisruptionTarget(t, o, pod, podOpts.Preconditions)
			if errors.Is(err, timeline.ErrStale) {
				continue
			} else if err != nil {
				return nil, err
			}
			if podOpts.Preconditions != nil && podOpts.Preconditions.ResourceVersion != nil {
				p := *podOpts.Preconditions
				p.ResourceVersion = &rv
				podOpts.Preconditions = &p
			}
		}
		if del.Body, err = json.Marshal(&podOpts); err != nil {
			return nil, err
		}
		if _, _, err := wr.applyWrite(t, del); err != nil {
			return nil, err
		}
		return wire.StatusJSON(success(http.StatusCreated)), nil
	}
	return nil, apierrors.NewConflict(schema.GroupResource{Resource: "pods/eviction"}, w.Name,
		fmt.Errorf("kwrec replay: the pod changed %d times while it was evicted; try again", writeRetries))
}

// evictionDeleteOptions is the server's propagateDryRun: the Eviction's
// deleteOptions, with the query's dryRun when they have none.
func evictionDeleteOptions(ev *policyv1.Eviction, queryDryRun bool) (metav1.DeleteOptions, error) {
	var query []string
	if queryDryRun {
		query = []string{metav1.DryRunAll}
	}
	if ev.DeleteOptions == nil {
		return metav1.DeleteOptions{DryRun: query}, nil
	}
	opts := *ev.DeleteOptions
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = query
	case len(query) > 0 && !reflect.DeepEqual(query, opts.DryRun):
		//lint:ignore ST1005 the server's words
		return opts, apierrors.NewInternalError(fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", query, opts.DryRun))
	}
	return opts, nil
}

func preconditionUID(opts metav1.DeleteOptions) *types.UID {
	if opts.Preconditions == nil {
		return nil
	}
	return opts.Preconditions.UID
}

// enforcesResourceVersion is the server's shouldEnforceResourceVersion:
// not for a Pod that finished or is being deleted.
func enforcesResourceVersion(pod *corev1.Pod) bool {
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed && pod.DeletionTimestamp == nil
}

// markDisruptionTarget writes the DisruptionTarget condition into the
// Pod's status, as addConditionAndDeletePod does through the status store
// (no managedFields entry, no new generation), after checking the
// preconditions against it; it returns the Pod's new resourceVersion.
func (wr *Writer) markDisruptionTarget(t *timeline.Timeline, o timeline.Object, pod *corev1.Pod, pre *metav1.Preconditions) (string, error) {
	// The server names the resource "Pod" in these conflicts.
	gr := schema.GroupResource{Resource: "Pod"}
	if pre != nil {
		if uid := pre.UID; uid != nil && *uid != "" && *uid != pod.UID {
			return "", apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *uid, pod.UID))
		}
		if rv := pre.ResourceVersion; rv != nil && *rv != "" && *rv != pod.ResourceVersion {
			return "", apierrors.NewConflict(gr, pod.Name, fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *rv, pod.ResourceVersion))
		}
	}
	updatePodCondition(&pod.Status, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"}, metav1.NewTime(wr.cfg.Clock.Now().Truncate(time.Second)))
	next, err := json.Marshal(pod)
	if err != nil {
		return "", err
	}
	m, err := wire.MetaJSON(next)
	if err != nil {
		return "", err
	}
	rv, _, err := t.Commit("MODIFIED", m.Key(), m.Labels, o.RV, next)
	if err != nil {
		return "", err
	}
	return strconv.FormatInt(rv, 10), nil
}

// updatePodCondition is k8s.io/kubernetes pkg/api/pod's
// UpdatePodCondition: c replaces the condition of its type, keeping its
// lastTransitionTime when its status is the same, or is added.
func updatePodCondition(s *corev1.PodStatus, c corev1.PodCondition, now metav1.Time) {
	c.LastTransitionTime = now
	for i, old := range s.Conditions {
		if old.Type == c.Type {
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}
