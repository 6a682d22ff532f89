package printer

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/rest"
	kjson "sigs.k8s.io/json"
)

// The printers of nodes, storage, events, RBAC, autoscaling, policy and
// leases, ported from
// k8s.io/kubernetes/pkg/printers/internalversion/printers.go (v1.37.2),
// wide, as the server's table convertor prints.

// printNode is printNode.
func printNode(obj *corev1.Node, now time.Time) []any {
	var status []string
	// The server looks at the last condition of each type, of the types
	// it knows: NodeReady.
	var ready *corev1.NodeCondition
	for i := range obj.Status.Conditions {
		if obj.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &obj.Status.Conditions[i]
		}
	}
	switch {
	case ready == nil:
		status = append(status, "Unknown")
	case ready.Status == corev1.ConditionTrue:
		status = append(status, string(ready.Type))
	default:
		status = append(status, "Not"+string(ready.Type))
	}
	if obj.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roles := strings.Join(findNodeRoles(obj), ",")
	if len(roles) == 0 {
		roles = "<none>"
	}
	info := obj.Status.NodeInfo
	osImage, kernelVersion, crVersion := cmpOr(info.OSImage, "<unknown>"), cmpOr(info.KernelVersion, "<unknown>"),
		cmpOr(info.ContainerRuntimeVersion, "<unknown>")
	if info.Architecture != "" {
		kernelVersion += " (" + info.Architecture + ")"
	}
	return []any{obj.Name, strings.Join(status, ","), roles, since(obj.CreationTimestamp, now), info.KubeletVersion,
		nodeAddress(obj, corev1.NodeInternalIP), nodeAddress(obj, corev1.NodeExternalIP), osImage, kernelVersion, crVersion}
}

// nodeAddress is getNodeInternalIP or getNodeExternalIP: the node's first
// address of type t.
func nodeAddress(node *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range node.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

// findNodeRoles is findNodeRoles: the node-role.kubernetes.io/ label
// suffixes and the kubernetes.io/role label value, sorted.
func findNodeRoles(node *corev1.Node) []string {
	const labelNodeRolePrefix, nodeLabelRole = "node-role.kubernetes.io/", "kubernetes.io/role"
	var roles []string
	for k, v := range node.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); len(role) > 0 {
				roles = append(roles, role)
			}
		case k == nodeLabelRole && v != "":
			roles = append(roles, v)
		}
	}
	slices.Sort(roles)
	return slices.Compact(roles)
}

// betaStorageClassAnnotation is k8s.io/kubernetes/pkg/apis/core's
// BetaStorageClassAnnotation, which wins over the spec's class.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

// printPersistentVolume is printPersistentVolume.
func printPersistentVolume(obj *corev1.PersistentVolume, now time.Time) []any {
	claimRef := ""
	if obj.Spec.ClaimRef != nil {
		claimRef = obj.Spec.ClaimRef.Namespace + "/" + obj.Spec.ClaimRef.Name
	}
	capacity := obj.Spec.Capacity[corev1.ResourceStorage]
	phase := string(obj.Status.Phase)
	if obj.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	volumeMode := "<unset>"
	if obj.Spec.VolumeMode != nil {
		volumeMode = string(*obj.Spec.VolumeMode)
	}
	volumeAttributesClass := "<unset>"
	if obj.Spec.VolumeAttributesClassName != nil {
		volumeAttributesClass = *obj.Spec.VolumeAttributesClassName
	}
	class, ok := obj.Annotations[betaStorageClassAnnotation]
	if !ok {
		class = obj.Spec.StorageClassName
	}
	return []any{obj.Name, capacity.String(), accessModes(obj.Spec.AccessModes), string(obj.Spec.PersistentVolumeReclaimPolicy),
		phase, claimRef, class, volumeAttributesClass, obj.Status.Reason, since(obj.CreationTimestamp, now), volumeMode}
}

// printPersistentVolumeClaim is printPersistentVolumeClaim.
func printPersistentVolumeClaim(obj *corev1.PersistentVolumeClaim, now time.Time) []any {
	phase := string(obj.Status.Phase)
	if obj.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	volumeAttributesClass := "<unset>"
	if obj.Spec.VolumeAttributesClassName != nil {
		volumeAttributesClass = *obj.Spec.VolumeAttributesClassName
	}
	capacity, modes := "", ""
	if obj.Spec.VolumeName != "" {
		modes = accessModes(obj.Status.AccessModes)
		storage := obj.Status.Capacity[corev1.ResourceStorage]
		capacity = storage.String()
	}
	volumeMode := "<unset>"
	if obj.Spec.VolumeMode != nil {
		volumeMode = string(*obj.Spec.VolumeMode)
	}
	class, ok := obj.Annotations[betaStorageClassAnnotation]
	if !ok && obj.Spec.StorageClassName != nil {
		class = *obj.Spec.StorageClassName
	}
	return []any{obj.Name, phase, obj.Spec.VolumeName, capacity, modes, class, volumeAttributesClass,
		since(obj.CreationTimestamp, now), volumeMode}
}

// accessModes is k8s.io/kubernetes/pkg/apis/core/helper's
// GetAccessModesAsString: the modes' abbreviations in a fixed order.
func accessModes(modes []corev1.PersistentVolumeAccessMode) string {
	var s []string
	for _, m := range []struct {
		mode corev1.PersistentVolumeAccessMode
		abbr string
	}{{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"}} {
		if slices.Contains(modes, m.mode) {
			s = append(s, m.abbr)
		}
	}
	return strings.Join(s, ",")
}

// printEvent is printEvent, wide: Last Seen, Type, Reason, Object,
// Subobject, Source, Message, First Seen, Count, Name.
func printEvent(obj *corev1.Event, now time.Time) []any {
	firstTimestamp := since(obj.FirstTimestamp, now)
	if obj.FirstTimestamp.IsZero() {
		firstTimestamp = sinceMicro(obj.EventTime, now)
	}
	lastTimestamp := since(obj.LastTimestamp, now)
	if obj.LastTimestamp.IsZero() {
		lastTimestamp = firstTimestamp
	}
	count := obj.Count
	if obj.Series != nil {
		lastTimestamp = sinceMicro(obj.Series.LastObservedTime, now)
		count = obj.Series.Count
	} else if count == 0 {
		// Singleton events don't have a count set in the new API.
		count = 1
	}
	target := strings.ToLower(obj.InvolvedObject.Kind)
	if len(obj.InvolvedObject.Name) > 0 {
		target += "/" + obj.InvolvedObject.Name
	}
	source := cmpOr(obj.Source.Component, obj.ReportingController)
	if instance := cmpOr(obj.Source.Host, obj.ReportingInstance); instance != "" {
		source += ", " + instance
	}
	return []any{lastTimestamp, obj.Type, obj.Reason, target, obj.InvolvedObject.FieldPath, source,
		strings.TrimSpace(obj.Message), firstTimestamp, int64(count), obj.Name}
}

// printEventsV1 is printEvent of an events.k8s.io/v1 Event, which the
// server converts to the internal (core) Event it prints as
// k8s.io/kubernetes/pkg/apis/events/v1's Convert_v1_Event_To_core_Event
// does: regarding, note and the deprecated fields renamed.
func printEventsV1(obj *eventsv1.Event, now time.Time) []any {
	e := &corev1.Event{
		ObjectMeta:          obj.ObjectMeta,
		InvolvedObject:      obj.Regarding,
		Reason:              obj.Reason,
		Message:             obj.Note,
		Source:              obj.DeprecatedSource,
		FirstTimestamp:      obj.DeprecatedFirstTimestamp,
		LastTimestamp:       obj.DeprecatedLastTimestamp,
		Count:               obj.DeprecatedCount,
		Type:                obj.Type,
		EventTime:           obj.EventTime,
		Action:              obj.Action,
		Related:             obj.Related,
		ReportingController: obj.ReportingController,
		ReportingInstance:   obj.ReportingInstance,
	}
	if obj.Series != nil {
		e.Series = &corev1.EventSeries{Count: obj.Series.Count, LastObservedTime: obj.Series.LastObservedTime}
	}
	return printEvent(e, now)
}

// printRoleBinding is printRoleBinding.
func printRoleBinding(obj *rbacv1.RoleBinding, now time.Time) []any {
	return bindingCells(obj.ObjectMeta, obj.RoleRef, obj.Subjects, now)
}

// printClusterRoleBinding is printClusterRoleBinding.
func printClusterRoleBinding(obj *rbacv1.ClusterRoleBinding, now time.Time) []any {
	return bindingCells(obj.ObjectMeta, obj.RoleRef, obj.Subjects, now)
}

// bindingCells are the cells printRoleBinding and printClusterRoleBinding
// both print: Name, Role, Age, and the subjects by kind
// (k8s.io/kubernetes/pkg/apis/rbac's SubjectsStrings).
func bindingCells(m metav1.ObjectMeta, ref rbacv1.RoleRef, subjects []rbacv1.Subject, now time.Time) []any {
	users, groups, sas := []string{}, []string{}, []string{}
	for _, s := range subjects {
		switch s.Kind {
		case rbacv1.ServiceAccountKind:
			sas = append(sas, s.Namespace+"/"+s.Name)
		case rbacv1.UserKind:
			users = append(users, s.Name)
		case rbacv1.GroupKind:
			groups = append(groups, s.Name)
		}
	}
	return []any{m.Name, ref.Kind + "/" + ref.Name, since(m.CreationTimestamp, now),
		strings.Join(users, ", "), strings.Join(groups, ", "), strings.Join(sas, ", ")}
}

// defaultConvertor is the server's table convertor of Roles and
// ClusterRoles (k8s.io/apiserver's default one: Name and Created At, a
// time and no age); the resource it names is only in its errors.
var defaultConvertor = rest.NewDefaultTableConvertor(schema.GroupResource{})

// printDefault prints an object's row with the default convertor.
func printDefault(obj []byte, _ time.Time) ([]any, error) {
	m := new(metav1.PartialObjectMetadata)
	if err := kjson.UnmarshalCaseSensitivePreserveInts(obj, m); err != nil {
		return nil, err
	}
	t, err := defaultConvertor.ConvertToTable(context.Background(), m, nil)
	if err != nil {
		return nil, err
	}
	return t.Rows[0].Cells, nil
}

// printHorizontalPodAutoscaler is printHorizontalPodAutoscaler, over
// autoscaling/v2, whose metrics are the internal type's.
func printHorizontalPodAutoscaler(obj *autoscalingv2.HorizontalPodAutoscaler, now time.Time) []any {
	minPods := "<unset>"
	if obj.Spec.MinReplicas != nil {
		minPods = fmt.Sprintf("%d", *obj.Spec.MinReplicas)
	}
	return []any{obj.Name, obj.Spec.ScaleTargetRef.Kind + "/" + obj.Spec.ScaleTargetRef.Name,
		formatHPAMetrics(obj.Spec.Metrics, obj.Status.CurrentMetrics), minPods, int64(obj.Spec.MaxReplicas),
		int64(obj.Status.CurrentReplicas), since(obj.CreationTimestamp, now)}
}

// printPodDisruptionBudget is printPodDisruptionBudget.
func printPodDisruptionBudget(obj *policyv1.PodDisruptionBudget, now time.Time) []any {
	minAvailable, maxUnavailable := "N/A", "N/A"
	if obj.Spec.MinAvailable != nil {
		minAvailable = obj.Spec.MinAvailable.String()
	}
	if obj.Spec.MaxUnavailable != nil {
		maxUnavailable = obj.Spec.MaxUnavailable.String()
	}
	return []any{obj.Name, minAvailable, maxUnavailable, int64(obj.Status.DisruptionsAllowed), since(obj.CreationTimestamp, now)}
}

// printLease is printLease.
func printLease(obj *coordinationv1.Lease, now time.Time) []any {
	var holderIdentity string
	if obj.Spec.HolderIdentity != nil {
		holderIdentity = *obj.Spec.HolderIdentity
	}
	return []any{obj.Name, holderIdentity, since(obj.CreationTimestamp, now)}
}
