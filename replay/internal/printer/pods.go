package printer

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Pod printer, ported from printPod in
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go (v1.37.2),
// split in its steps. The server's row conditions (Completed for a pod
// that succeeded or failed) are not cells, and not kept.

// nodeUnreachablePodReason is k8s.io/kubernetes/pkg/util/node's
// NodeUnreachablePodReason.
const nodeUnreachablePodReason = "NodeLost"

// podTally is what printPod counts over a pod's containers.
type podTally struct {
	restarts, ready, total int
	lastRestart            metav1.Time
	reason                 string
}

// printPod is printPod: Name, Ready, Status, Restarts, Age, and the wide
// IP, Node, Nominated Node, Readiness Gates.
func printPod(pod *corev1.Pod, now time.Time) []any {
	t := podTally{total: len(pod.Spec.Containers), reason: string(pod.Status.Phase)}
	if pod.Status.Reason != "" {
		t.reason = pod.Status.Reason
	}
	// If the Pod carries {type:PodScheduled, reason:SchedulingGated}, set
	// reason to 'SchedulingGated'.
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonSchedulingGated {
			t.reason = corev1.PodReasonSchedulingGated
		}
	}
	initializing, sidecarRestarts, sidecarLastRestart := t.initContainers(pod)
	if !initializing || isPodInitializedConditionTrue(&pod.Status) {
		t.restarts, t.lastRestart = sidecarRestarts, sidecarLastRestart
		t.containers(pod)
	}
	if pod.DeletionTimestamp != nil && pod.Status.Reason == nodeUnreachablePodReason {
		t.reason = "Unknown"
	} else if pod.DeletionTimestamp != nil && !isPodPhaseTerminal(pod.Status.Phase) {
		t.reason = "Terminating"
	}
	restarts := strconv.Itoa(t.restarts)
	if t.restarts != 0 && !t.lastRestart.IsZero() {
		restarts = fmt.Sprintf("%d (%s ago)", t.restarts, since(t.lastRestart, now))
	}
	return append([]any{pod.Name, fmt.Sprintf("%d/%d", t.ready, t.total), t.reason, restarts,
		since(pod.CreationTimestamp, now)}, podWide(pod)...)
}

// initContainers counts pod's init containers into t as printPod does,
// reporting whether the pod is still initializing, and the restarts of
// its restartable (sidecar) init containers with the latest of their
// terminations.
func (t *podTally) initContainers(pod *corev1.Pod) (initializing bool, sidecarRestarts int, sidecarLastRestart metav1.Time) {
	sidecarLastRestart = metav1.NewTime(time.Time{})
	t.lastRestart = metav1.NewTime(time.Time{})
	initContainers := map[string]*corev1.Container{}
	for i := range pod.Spec.InitContainers {
		initContainers[pod.Spec.InitContainers[i].Name] = &pod.Spec.InitContainers[i]
		if isRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			t.total++
		}
	}
	for i := range pod.Status.InitContainerStatuses {
		container := pod.Status.InitContainerStatuses[i]
		t.restarts += int(container.RestartCount)
		if container.LastTerminationState.Terminated != nil {
			terminatedDate := container.LastTerminationState.Terminated.FinishedAt
			if t.lastRestart.Before(&terminatedDate) {
				t.lastRestart = terminatedDate
			}
		}
		restartable := isRestartableInitContainer(initContainers[container.Name])
		if restartable {
			sidecarRestarts += int(container.RestartCount)
			if container.LastTerminationState.Terminated != nil {
				terminatedDate := container.LastTerminationState.Terminated.FinishedAt
				if sidecarLastRestart.Before(&terminatedDate) {
					sidecarLastRestart = terminatedDate
				}
			}
		}
		switch {
		case container.State.Terminated != nil && container.State.Terminated.ExitCode == 0:
			continue
		case restartable && container.Started != nil && *container.Started:
			if container.Ready {
				t.ready++
			}
			continue
		case container.State.Terminated != nil:
			// initialization is failed
			switch {
			case len(container.State.Terminated.Reason) != 0:
				t.reason = "Init:" + container.State.Terminated.Reason
			case container.State.Terminated.Signal != 0:
				t.reason = fmt.Sprintf("Init:Signal:%d", container.State.Terminated.Signal)
			default:
				t.reason = fmt.Sprintf("Init:ExitCode:%d", container.State.Terminated.ExitCode)
			}
		case container.State.Waiting != nil && len(container.State.Waiting.Reason) > 0 && container.State.Waiting.Reason != "PodInitializing":
			t.reason = "Init:" + container.State.Waiting.Reason
		default:
			t.reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
		}
		return true, sidecarRestarts, sidecarLastRestart
	}
	return false, sidecarRestarts, sidecarLastRestart
}

// containers counts pod's (regular) containers into t as printPod does
// once the pod is initialized.
func (t *podTally) containers(pod *corev1.Pod) {
	hasRunning := false
	errorReason := ""
	for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
		container := pod.Status.ContainerStatuses[i]
		t.restarts += int(container.RestartCount)
		if container.LastTerminationState.Terminated != nil {
			terminatedDate := container.LastTerminationState.Terminated.FinishedAt
			if t.lastRestart.Before(&terminatedDate) {
				t.lastRestart = terminatedDate
			}
		}
		switch {
		case container.State.Waiting != nil && container.State.Waiting.Reason != "":
			t.reason = container.State.Waiting.Reason
		case container.State.Terminated != nil:
			switch {
			case len(container.State.Terminated.Reason) > 0:
				t.reason = container.State.Terminated.Reason
			case container.State.Terminated.Signal != 0:
				t.reason = fmt.Sprintf("Signal:%d", container.State.Terminated.Signal)
			default:
				t.reason = fmt.Sprintf("ExitCode:%d", container.State.Terminated.ExitCode)
			}
			if container.State.Terminated.ExitCode != 0 {
				errorReason = t.reason
			}
		case container.Ready && container.State.Running != nil:
			hasRunning = true
			t.ready++
		}
	}
	// change pod status back to "Running" if there is at least one
	// container still reporting as "Running" status
	if t.reason == "Completed" {
		switch {
		case hasRunning && hasPodReadyCondition(pod.Status.Conditions):
			t.reason = "Running"
		case errorReason != "":
			t.reason = errorReason
		case hasRunning:
			t.reason = "NotReady"
		}
	}
}

// podWide is printPod's wide cells: IP, Node, Nominated Node, Readiness
// Gates.
func podWide(pod *corev1.Pod) []any {
	nodeName := orNone(pod.Spec.NodeName)
	nominatedNodeName := orNone(pod.Status.NominatedNodeName)
	podIP := ""
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	readinessGates := "<none>"
	if len(pod.Spec.ReadinessGates) > 0 {
		trueConditions := 0
		for _, gate := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == gate.ConditionType {
					if c.Status == corev1.ConditionTrue {
						trueConditions++
					}
					break
				}
			}
		}
		readinessGates = fmt.Sprintf("%d/%d", trueConditions, len(pod.Spec.ReadinessGates))
	}
	return []any{orNone(podIP), nodeName, nominatedNodeName, readinessGates}
}

// orNone is s, or "<none>" when s is empty.
func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// hasPodReadyCondition is printers.go's hasPodReadyCondition.
func hasPodReadyCondition(conditions []corev1.PodCondition) bool {
	for _, c := range conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// isPodInitializedConditionTrue is printers.go's
// isPodInitializedConditionTrue: the first Initialized condition's.
func isPodInitializedConditionTrue(status *corev1.PodStatus) bool {
	for _, c := range status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// isRestartableInitContainer is k8s.io/kubernetes/pkg/api/pod's
// IsRestartableInitContainer: a sidecar.
func isRestartableInitContainer(c *corev1.Container) bool {
	return c != nil && c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
}

// isPodPhaseTerminal is k8s.io/kubernetes/pkg/api/v1/pod's
// IsPodPhaseTerminal.
func isPodPhaseTerminal(phase corev1.PodPhase) bool {
	return phase == corev1.PodFailed || phase == corev1.PodSucceeded
}
