package push

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// serverSet are the metadata fields the API server sets on every object:
// a write that carries them is refused (uid, resourceVersion on a
// create) or has them ignored.
var serverSet = []string{"uid", "resourceVersion", "creationTimestamp", "managedFields", "generation",
	"deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"}

// Strip removes from u the fields the target sets itself: metadata's
// [serverSet] fields, and a Service's cluster IPs (the target allocates
// them from its own range; a recorded one may be outside it or taken).
// A headless Service keeps its clusterIP "None": its user set it, and
// without it the target would allocate an address the recorded Service
// never had (and refuse the Service once its range is used up).
// A Secret's data is left as recorded: redacted, unless the recording
// was made with --no-redact (see the package doc).
func Strip(u *unstructured.Unstructured) {
	for _, f := range serverSet {
		unstructured.RemoveNestedField(u.Object, "metadata", f)
	}
	if u.GetAPIVersion() == "v1" && u.GetKind() == "Service" {
		if ip, _, _ := unstructured.NestedString(u.Object, "spec", "clusterIP"); ip != corev1.ClusterIPNone {
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIP")
			unstructured.RemoveNestedField(u.Object, "spec", "clusterIPs")
		}
	}
}

// statusByControllers are the kinds whose status the target's own
// controllers (kube-controller-manager, the scheduler, the kubelet)
// write: with --roots a push leaves it to them.
var statusByControllers = []string{"Deployment", "ReplicaSet", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod",
	"ReplicationController", "HorizontalPodAutoscaler", "PersistentVolumeClaim", "PersistentVolume",
	"Service", "Namespace", "Node", "PodDisruptionBudget"}

// ServerOwnsStatus reports whether the target's API server itself writes
// the status of kind: a CustomResourceDefinition's (names accepted,
// established) and an APIService's (available). A push never writes it.
func ServerOwnsStatus(group, kind string) bool {
	return group == "apiextensions.k8s.io" && kind == "CustomResourceDefinition" ||
		group == "apiregistration.k8s.io" && kind == "APIService"
}

// ControllersOwnStatus reports whether the target's controllers write the
// status of kind (of a built-in group): [statusByControllers]. With
// --roots a push strips such a status; a custom resource's status is
// pushed, as no built-in controller writes it.
func ControllersOwnStatus(group, kind string) bool {
	builtin := group == "" || !strings.Contains(group, ".") || strings.HasSuffix(group, ".k8s.io")
	return builtin && slices.Contains(statusByControllers, kind)
}

// systemNamespaces are the namespaces every cluster has.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

// ClusterMade reports whether the target makes an object like this one
// itself, so that a push leaves it out: the system Namespaces (default,
// kube-system, kube-public, kube-node-lease) and everything in the
// kube-* ones; names starting system: (RBAC's bootstrap roles and
// bindings, system-node-critical PriorityClasses); the default Service
// kubernetes with its Endpoints and EndpointSlice; every Namespace's
// kube-root-ca.crt ConfigMap and default ServiceAccount; the
// API server's bootstrap FlowSchemas and PriorityLevelConfigurations
// (annotated apf.kubernetes.io/autoupdate-spec), its automanaged
// APIServices, RBAC's bootstrap objects (labelled
// kubernetes.io/bootstrapping=rbac-defaults: the admin, edit, view and
// cluster-admin ClusterRoles), every IPAddress (the server allocates
// one for each Service) and the kubernetes ServiceCIDR. u is an object
// of group.
func ClusterMade(group string, u *unstructured.Unstructured) bool {
	kind, ns, name := u.GetKind(), u.GetNamespace(), u.GetName()
	switch {
	case group == "" && kind == "Namespace" && slices.Contains(systemNamespaces, name):
		return true
	case ns != "" && ns != "default" && slices.Contains(systemNamespaces, ns):
		return true
	case strings.HasPrefix(name, "system:") || (kind == "PriorityClass" && strings.HasPrefix(name, "system-")):
		return true
	case ns == "default" && name == "kubernetes" && (kind == "Service" || kind == "Endpoints" || kind == "EndpointSlice"):
		return true
	case kind == "ConfigMap" && name == "kube-root-ca.crt", kind == "ServiceAccount" && name == "default":
		return true
	case group == "flowcontrol.apiserver.k8s.io" && u.GetAnnotations()["apf.kubernetes.io/autoupdate-spec"] != "":
		return true
	case kind == "APIService" && u.GetLabels()["kube-aggregator.kubernetes.io/automanaged"] != "":
		return true
	case u.GetLabels()["kubernetes.io/bootstrapping"] == "rbac-defaults":
		return true
	case group == "networking.k8s.io" && (kind == "IPAddress" || kind == "ServiceCIDR" && name == "kubernetes"):
		return true
	}
	return false
}
