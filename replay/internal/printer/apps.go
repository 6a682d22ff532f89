package printer

import (
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/duration"
)

// The printers of workloads, ported from
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go (v1.37.2).
// The server prints its internal types, whose replica counts are int32
// where v1's are *int32 (defaulted to 1 when created): a nil count
// prints 0, as its conversion to the internal type makes it.

// printDeployment is printDeployment.
func printDeployment(obj *appsv1.Deployment, now time.Time) []any {
	selectorString := ""
	if selector, err := metav1.LabelSelectorAsSelector(obj.Spec.Selector); err != nil {
		selectorString = "<invalid>"
	} else {
		selectorString = selector.String()
	}
	names, images := layoutContainerCells(obj.Spec.Template.Spec.Containers)
	return []any{obj.Name, fmt.Sprintf("%d/%d", int64(obj.Status.ReadyReplicas), int64(deref(obj.Spec.Replicas))),
		int64(obj.Status.UpdatedReplicas), int64(obj.Status.AvailableReplicas), since(obj.CreationTimestamp, now),
		names, images, selectorString}
}

// printReplicaSet is printReplicaSet.
func printReplicaSet(obj *appsv1.ReplicaSet, now time.Time) []any {
	names, images := layoutContainerCells(obj.Spec.Template.Spec.Containers)
	return []any{obj.Name, int64(deref(obj.Spec.Replicas)), int64(obj.Status.Replicas), int64(obj.Status.ReadyReplicas),
		since(obj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(obj.Spec.Selector)}
}

// printStatefulSet is printStatefulSet.
func printStatefulSet(obj *appsv1.StatefulSet, now time.Time) []any {
	names, images := layoutContainerCells(obj.Spec.Template.Spec.Containers)
	return []any{obj.Name, fmt.Sprintf("%d/%d", int64(obj.Status.ReadyReplicas), int64(deref(obj.Spec.Replicas))),
		since(obj.CreationTimestamp, now), names, images}
}

// printDaemonSet is printDaemonSet.
func printDaemonSet(obj *appsv1.DaemonSet, now time.Time) []any {
	names, images := layoutContainerCells(obj.Spec.Template.Spec.Containers)
	s := obj.Status
	return []any{obj.Name, int64(s.DesiredNumberScheduled), int64(s.CurrentNumberScheduled), int64(s.NumberReady),
		int64(s.UpdatedNumberScheduled), int64(s.NumberAvailable), labels.FormatLabels(obj.Spec.Template.Spec.NodeSelector),
		since(obj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(obj.Spec.Selector)}
}

// printJob is printJob; a running job's duration is as of now.
func printJob(obj *batchv1.Job, now time.Time) []any {
	var completions string
	if obj.Spec.Completions != nil {
		completions = fmt.Sprintf("%d/%d", obj.Status.Succeeded, *obj.Spec.Completions)
	} else if parallelism := deref(obj.Spec.Parallelism); parallelism > 1 {
		completions = fmt.Sprintf("%d/1 of %d", obj.Status.Succeeded, parallelism)
	} else {
		completions = fmt.Sprintf("%d/1", obj.Status.Succeeded)
	}
	var jobDuration string
	switch {
	case obj.Status.StartTime == nil:
	case obj.Status.CompletionTime == nil:
		jobDuration = duration.HumanDuration(now.Sub(obj.Status.StartTime.Time))
	default:
		jobDuration = duration.HumanDuration(obj.Status.CompletionTime.Sub(obj.Status.StartTime.Time))
	}
	names, images := layoutContainerCells(obj.Spec.Template.Spec.Containers)
	return []any{obj.Name, jobStatus(obj), completions, jobDuration, since(obj.CreationTimestamp, now),
		names, images, metav1.FormatLabelSelector(obj.Spec.Selector)}
}

// jobStatus is printJob's Status cell.
func jobStatus(obj *batchv1.Job) string {
	c := obj.Status.Conditions
	switch {
	case hasJobCondition(c, batchv1.JobComplete):
		return "Complete"
	case hasJobCondition(c, batchv1.JobFailed):
		return "Failed"
	case obj.DeletionTimestamp != nil:
		return "Terminating"
	case hasJobCondition(c, batchv1.JobSuspended):
		return "Suspended"
	case hasJobCondition(c, batchv1.JobFailureTarget):
		return "FailureTarget"
	case hasJobCondition(c, batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

// hasJobCondition is hasJobCondition: the first condition of the type
// decides.
func hasJobCondition(conditions []batchv1.JobCondition, conditionType batchv1.JobConditionType) bool {
	for _, c := range conditions {
		if c.Type == conditionType {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// printCronJob is printCronJob.
func printCronJob(obj *batchv1.CronJob, now time.Time) []any {
	lastScheduleTime := "<none>"
	if obj.Status.LastScheduleTime != nil {
		lastScheduleTime = since(*obj.Status.LastScheduleTime, now)
	}
	timeZone := "<none>"
	if obj.Spec.TimeZone != nil {
		timeZone = *obj.Spec.TimeZone
	}
	names, images := layoutContainerCells(obj.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []any{obj.Name, obj.Spec.Schedule, timeZone, printBoolPtr(obj.Spec.Suspend), int64(len(obj.Status.Active)),
		lastScheduleTime, since(obj.CreationTimestamp, now), names, images, metav1.FormatLabelSelector(obj.Spec.JobTemplate.Spec.Selector)}
}

// layoutContainerCells is layoutContainerCells: the containers' names
// and images, comma-separated.
func layoutContainerCells(containers []corev1.Container) (names, images string) {
	n, i := make([]string, len(containers)), make([]string, len(containers))
	for k, c := range containers {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

// printBoolPtr is printBoolPtr.
func printBoolPtr(value *bool) string {
	switch {
	case value == nil:
		return "<unset>"
	case *value:
		return "True"
	}
	return "False"
}

// deref is *p, or 0 for nil.
func deref(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}
