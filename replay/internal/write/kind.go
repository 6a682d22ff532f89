package write

import (
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsv1beta1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// serverTypes returns the Go types of the kinds kube-apiserver serves
// itself: client-go's, and CustomResourceDefinitions (the
// apiextensions-apiserver's, which client-go's scheme leaves out). It is
// built at the first call and never changed.
var serverTypes = sync.OnceValue(func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(apiextensionsv1.AddToScheme(s))
	utilruntime.Must(apiextensionsv1beta1.AddToScheme(s))
	return s
})

// kindFacts are the per-type behaviours of the API server's registry
// strategies (k8s.io/kubernetes/pkg/registry/*/strategy.go) that a write
// depends on.
type kindFacts struct {
	// typed: client-go's scheme knows the Go type, so bodies are decoded
	// through it (unknown fields dropped) and strategic merge patch works.
	typed bool
	// generation: the strategy sets metadata.generation on create and bumps
	// it on changes outside metadata and status.
	generation bool
	// annotationsBumpGeneration: annotation changes bump generation too
	// (Deployments copy annotations to their ReplicaSets).
	annotationsBumpGeneration bool
	// createOnUpdate: AllowCreateOnUpdate, a PUT of a missing object creates it.
	createOnUpdate bool
	// conditionalUpdate: AllowUnconditionalUpdate is false, a PUT must carry
	// a resourceVersion.
	conditionalUpdate bool
	// returnDeletedObject: a delete answers with the object rather than a
	// Success Status.
	returnDeletedObject bool
	// status: the resource has a status subresource.
	status bool
}

// Tables from k8s.io/kubernetes v1.37 pkg/registry: strategies that set
// Generation = 1 in PrepareForCreate, that return true from
// AllowCreateOnUpdate, false from AllowUnconditionalUpdate, and stores with
// ReturnDeletedObject.
var (
	// admissionResources are admissionregistration's: their strategies
	// both set Generation and refuse unconditional updates.
	admissionResources = []string{
		"mutatingadmissionpolicies.admissionregistration.k8s.io",
		"mutatingadmissionpolicybindings.admissionregistration.k8s.io",
		"mutatingwebhookconfigurations.admissionregistration.k8s.io",
		"validatingadmissionpolicies.admissionregistration.k8s.io",
		"validatingadmissionpolicybindings.admissionregistration.k8s.io",
		"validatingwebhookconfigurations.admissionregistration.k8s.io",
	}
	generationResources = set(slices.Concat(admissionResources, []string{
		"daemonsets.apps", "deployments.apps", "replicasets.apps", "statefulsets.apps",
		"horizontalpodautoscalers.autoscaling",
		"cronjobs.batch", "jobs.batch",
		"pods", "podtemplates", "replicationcontrollers",
		"endpointslices.discovery.k8s.io",
		"flowschemas.flowcontrol.apiserver.k8s.io",
		"prioritylevelconfigurations.flowcontrol.apiserver.k8s.io",
		"ingresses.networking.k8s.io", "ingressclasses.networking.k8s.io",
		"networkpolicies.networking.k8s.io",
		"poddisruptionbudgets.policy",
		"deviceclasses.resource.k8s.io", "devicetaintrules.resource.k8s.io",
		"resourceslices.resource.k8s.io",
		"priorityclasses.scheduling.k8s.io",
		"customresourcedefinitions.apiextensions.k8s.io",
	})...)
	createOnUpdateResources = set(
		"runtimeclasses.node.k8s.io",
		"rolebindings.rbac.authorization.k8s.io", "clusterrolebindings.rbac.authorization.k8s.io",
		"roles.rbac.authorization.k8s.io", "clusterroles.rbac.authorization.k8s.io",
		"leases.coordination.k8s.io", "leasecandidates.coordination.k8s.io",
		"limitranges", "events", "services", "endpoints",
	)
	conditionalUpdateResources = set(slices.Concat(admissionResources, []string{
		"customresourcedefinitions.apiextensions.k8s.io",
		"podcertificaterequests.certificates.k8s.io", "clustertrustbundles.certificates.k8s.io",
		"runtimeclasses.node.k8s.io",
		"storageversionmigrations.storagemigration.k8s.io",
		"poddisruptionbudgets.policy",
		"storageversions.internal.apiserver.k8s.io",
		"csidrivers.storage.k8s.io", "csistoragecapacities.storage.k8s.io",
		"volumeattachments.storage.k8s.io", "csinodes.storage.k8s.io",
		"leases.coordination.k8s.io", "leasecandidates.coordination.k8s.io",
	})...)
	returnDeletedResources = set(
		"resourceclaimtemplates.resource.k8s.io", "resourceslices.resource.k8s.io",
		"resourceclaims.resource.k8s.io", "deviceclasses.resource.k8s.io",
		"csidrivers.storage.k8s.io", "storageclasses.storage.k8s.io",
		"volumeattachments.storage.k8s.io", "csinodes.storage.k8s.io",
		"volumeattributesclasses.storage.k8s.io",
		"resourcequotas", "persistentvolumes", "serviceaccounts",
		"persistentvolumeclaims", "namespaces", "pods", "services", "podtemplates",
	)
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// factsFor returns the facts of a resource. Types client-go's scheme does
// not know are treated as custom resources: generation always, no
// create-on-update, unconditional updates allowed, a Status on delete.
func factsFor(gvk schema.GroupVersionKind, gr schema.GroupResource, status bool) kindFacts {
	if !serverTypes().Recognizes(gvk) {
		return kindFacts{generation: true, status: status}
	}
	name := gr.String()
	return kindFacts{
		typed:                     true,
		generation:                generationResources[name],
		annotationsBumpGeneration: name == "deployments.apps",
		createOnUpdate:            createOnUpdateResources[name],
		conditionalUpdate:         conditionalUpdateResources[name],
		returnDeletedObject:       returnDeletedResources[name],
		status:                    status,
	}
}
