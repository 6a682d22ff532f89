package write

import (
	"maps"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/validate/content"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// validate is the part of the server's validation of a created (old nil)
// or updated object that kwrec models, with the server's field errors,
// and returns its 422 Invalid:
//   - every object's metadata (apimachinery's ValidateObjectMeta: name and
//     generateName by the resource's rule, labels, annotations, owner
//     references, finalizers);
//   - ConfigMap and Secret keys;
//   - the Pod spec's containers (present, named as DNS labels, unique,
//     with an image) in Pods and in workload templates;
//   - workloads' replicas, selector (present, not empty, matching the
//     template's labels, immutable on update);
//   - RBAC's Roles, ClusterRoles and their bindings (validateRBAC).
//
// The rest of the server's validation (probes, volumes, resources,
// Services, Pod update restrictions, ...) is not modelled: such an
// invalid object is stored.
func (w *write) validate(obj, old *object) error {
	if w.isCRD() {
		if errs := w.validateCRD(obj, old); len(errs) > 0 {
			return apierrors.NewInvalid(w.gvk.GroupKind(), obj.GetName(), errs)
		}
		return nil
	}
	if !w.kind.typed && w.req.Custom != nil {
		if errs := w.req.Custom.validate(obj, old); len(errs) > 0 {
			return apierrors.NewInvalid(w.gvk.GroupKind(), obj.GetName(), errs)
		}
		return nil
	}
	meta := &metav1.ObjectMeta{}
	if m, ok := obj.Object["metadata"].(map[string]any); ok {
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(m, meta); err != nil {
			return nil // the decode reported what is malformed
		}
	}
	errs := apivalidation.ValidateObjectMeta(meta, w.req.Namespaced, nameRule(w.gr.Group, w.gr.Resource, w.kind.typed), field.NewPath("metadata"))
	if w.kind.typed {
		if typed, err := serverTypes().New(w.gvk); err == nil && runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, typed) == nil {
			var prev runtime.Object
			if old != nil {
				if p, err := serverTypes().New(w.gvk); err == nil && runtime.DefaultUnstructuredConverter.FromUnstructured(old.Object, p) == nil {
					prev = p
				}
			}
			errs = append(errs, validateTyped(typed, prev)...)
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return apierrors.NewInvalid(w.gvk.GroupKind(), obj.GetName(), errs)
}

// nameRule is the name validation of a resource (its strategy's in
// k8s.io/kubernetes, v1.37.2): a DNS-1123 subdomain for the built-in kinds
// listed in subdomainNamed and every custom resource, a DNS-1035 label for
// Services, a namespace's own rule; any other built-in kind gets only the
// rule every name meets, a path segment (no "/" or "%", not "." or ".."),
// as RBAC's kinds do on the server: kwrec refuses no name the server
// takes (clusterRole-10 is a valid ClusterRole name).
func nameRule(group, resource string, builtin bool) apivalidation.ValidateNameFunc {
	switch {
	case group == "" && resource == "namespaces":
		return apivalidation.ValidateNamespaceName
	case group == "" && resource == "services":
		return apivalidation.NameIsDNS1035Label
	case !builtin || subdomainNamed[group+"/"+resource]:
		return apivalidation.NameIsDNSSubdomain
	}
	return pathSegmentName
}

// subdomainNamed are the built-in resources (group/resource) whose
// strategies validate names as DNS-1123 subdomains.
var subdomainNamed = map[string]bool{
	"/configmaps": true, "/secrets": true, "/pods": true, "/replicationcontrollers": true,
	"/serviceaccounts": true, "/persistentvolumeclaims": true, "/persistentvolumes": true,
	"/podtemplates": true, "/limitranges": true, "/resourcequotas": true, "/nodes": true,
	"apps/deployments": true, "apps/replicasets": true, "apps/statefulsets": true,
	"apps/daemonsets": true, "apps/controllerrevisions": true,
	"batch/jobs": true, "batch/cronjobs": true,
}

// pathSegmentName is apimachinery's path segment rule as a name
// validation (what k8s.io/apimachinery/pkg/api/validation/path's
// deprecated ValidatePathSegmentName returns).
func pathSegmentName(name string, prefix bool) []string {
	if prefix {
		return content.IsPathSegmentPrefix(name)
	}
	return content.IsPathSegmentName(name)
}

func validateTyped(obj, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		if p, ok := old.(*corev1.ConfigMap); ok {
			errs = append(errs, immutableWhenSet(p.Immutable, o.Immutable,
				immutablePart{"data", reflect.DeepEqual(o.Data, p.Data)}, immutablePart{"binaryData", reflect.DeepEqual(o.BinaryData, p.BinaryData)})...)
		}
		errs = append(errs, validateKeys(field.NewPath("data"), slices.Collect(maps.Keys(o.Data)))...)
		errs = append(errs, validateKeys(field.NewPath("binaryData"), slices.Collect(maps.Keys(o.BinaryData)))...)
	case *corev1.Secret:
		if p, ok := old.(*corev1.Secret); ok {
			errs = append(errs, apivalidation.ValidateImmutableField(o.Type, p.Type, field.NewPath("type"))...)
			errs = append(errs, immutableWhenSet(p.Immutable, o.Immutable, immutablePart{"data", reflect.DeepEqual(o.Data, p.Data)})...)
		}
		errs = append(errs, validateKeys(field.NewPath("data"), slices.Collect(maps.Keys(o.Data)))...)
	case *corev1.Pod:
		errs = append(errs, validatePodSpec(&o.Spec, field.NewPath("spec"))...)
	case *appsv1.Deployment:
		errs = append(errs, validateWorkload(o.Spec.Replicas, o.Spec.Selector, &o.Spec.Template, "deployment")...)
		if p, ok := old.(*appsv1.Deployment); ok {
			errs = append(errs, immutableSelector(o.Spec.Selector, p.Spec.Selector)...)
		}
	case *appsv1.ReplicaSet:
		errs = append(errs, validateWorkload(o.Spec.Replicas, o.Spec.Selector, &o.Spec.Template, "replicaset")...)
		if p, ok := old.(*appsv1.ReplicaSet); ok {
			errs = append(errs, immutableSelector(o.Spec.Selector, p.Spec.Selector)...)
		}
	case *appsv1.StatefulSet:
		errs = append(errs, validateWorkload(o.Spec.Replicas, o.Spec.Selector, &o.Spec.Template, "statefulset")...)
	case *appsv1.DaemonSet:
		errs = append(errs, validateWorkload(nil, o.Spec.Selector, &o.Spec.Template, "daemonset")...)
		if p, ok := old.(*appsv1.DaemonSet); ok {
			errs = append(errs, immutableSelector(o.Spec.Selector, p.Spec.Selector)...)
		}
	case *rbacv1.Role, *rbacv1.ClusterRole, *rbacv1.RoleBinding, *rbacv1.ClusterRoleBinding:
		errs = append(errs, validateRBAC(obj, old)...)
	}
	return errs
}

// validateKeys checks ConfigMap and Secret keys.
func validateKeys(path *field.Path, keys []string) field.ErrorList {
	var errs field.ErrorList
	slices.Sort(keys)
	for _, k := range keys {
		for _, msg := range validation.IsConfigMapKey(k) {
			errs = append(errs, field.Invalid(path.Key(k), k, msg))
		}
	}
	return errs
}

// validateWorkload is the server's check of a workload's replicas,
// selector and template, in its order.
func validateWorkload(replicas *int32, sel *metav1.LabelSelector, tmpl *corev1.PodTemplateSpec, what string) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if replicas != nil {
		errs = append(errs, apivalidation.ValidateNonnegativeField(int64(*replicas), spec.Child("replicas"))...)
	}
	if sel == nil {
		errs = append(errs, field.Required(spec.Child("selector"), ""))
	} else {
		errs = append(errs, metav1validation.ValidateLabelSelector(sel, metav1validation.LabelSelectorValidationOptions{}, spec.Child("selector"))...)
		if len(sel.MatchLabels)+len(sel.MatchExpressions) == 0 {
			errs = append(errs, field.Invalid(spec.Child("selector"), sel, "empty selector is invalid for "+what))
		}
	}
	selector, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return append(errs, field.Invalid(spec.Child("selector"), sel, "invalid label selector"))
	}
	if !selector.Empty() && !selector.Matches(labels.Set(tmpl.Labels)) || sel == nil {
		errs = append(errs, field.Invalid(spec.Child("template", "metadata", "labels"), tmpl.Labels, "`selector` does not match template `labels`"))
	}
	return append(errs, validatePodSpec(&tmpl.Spec, spec.Child("template", "spec"))...)
}

func immutableSelector(sel, old *metav1.LabelSelector) field.ErrorList {
	if apiequality.Semantic.DeepEqual(sel, old) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("spec", "selector"), sel, "field is immutable")}
}

// validatePodSpec checks a Pod spec's containers: some, each named as a
// DNS label, names unique, each with an image.
func validatePodSpec(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(s.Containers) == 0 {
		return append(errs, field.Required(path.Child("containers"), ""))
	}
	seen := map[string]bool{}
	for i, c := range s.Containers {
		p := path.Child("containers").Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case seen[c.Name]:
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		seen[c.Name] = true
		if c.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
	}
	return errs
}

// immutablePart is a field of a ConfigMap or Secret that `immutable: true`
// freezes, and whether an update left it equal.
type immutablePart struct {
	name  string
	equal bool
}

// immutableWhenSet is the server's rule for an object whose old version
// set `immutable: true` (ValidateConfigMapUpdate, ValidateSecretUpdate):
// it stays set, and the parts it freezes stay equal.
func immutableWhenSet(was, is *bool, parts ...immutablePart) field.ErrorList {
	if was == nil || !*was {
		return nil
	}
	const msg = "field is immutable when `immutable` is set"
	var errs field.ErrorList
	if is == nil || !*is {
		errs = append(errs, field.Forbidden(field.NewPath("immutable"), msg))
	}
	for _, p := range parts {
		if !p.equal {
			errs = append(errs, field.Forbidden(field.NewPath(p.name), msg))
		}
	}
	return errs
}
