package write

import (
	rbacv1 "k8s.io/api/rbac/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The RBAC kinds' rules, ported from k8s.io/kubernetes v1.37.2
// pkg/apis/rbac/validation/validation.go (ValidateRole, ValidateClusterRole,
// ValidatePolicyRule, ValidateRoleBinding, ValidateClusterRoleBinding,
// ValidateRoleBindingSubject and their Update forms), called by the
// strategies in pkg/registry/rbac/*/strategy.go, and the defaults of
// pkg/apis/rbac/v1/defaults.go. Names and metadata are validate's, as for
// every kind (ValidateRBACName is the path segment rule nameRule gives RBAC).

// validateRBAC returns the field errors of an RBAC object, old nil on
// create.
func validateRBAC(obj, old any) field.ErrorList {
	var errs field.ErrorList
	switch o := obj.(type) {
	case *rbacv1.Role:
		for i, r := range o.Rules {
			errs = append(errs, validatePolicyRule(r, true, field.NewPath("rules").Index(i))...)
		}
	case *rbacv1.ClusterRole:
		for i, r := range o.Rules {
			errs = append(errs, validatePolicyRule(r, false, field.NewPath("rules").Index(i))...)
		}
		allowInvalidValues := false
		if p, ok := old.(*rbacv1.ClusterRole); ok {
			allowInvalidValues = hasInvalidLabelValueInSelector(p)
		}
		errs = append(errs, validateAggregationRule(o.AggregationRule, allowInvalidValues)...)
	case *rbacv1.RoleBinding:
		errs = append(errs, validateRoleRef(o.RoleRef, "Role", "ClusterRole")...)
		for i, s := range o.Subjects {
			errs = append(errs, validateSubject(s, true, field.NewPath("subjects").Index(i))...)
		}
		if p, ok := old.(*rbacv1.RoleBinding); ok && o.RoleRef != p.RoleRef {
			errs = append(errs, field.Invalid(field.NewPath("roleRef"), internalRoleRef{o.RoleRef.APIGroup, o.RoleRef.Kind, o.RoleRef.Name}, apivalidation.FieldImmutableErrorMsg))
		}
	case *rbacv1.ClusterRoleBinding:
		errs = append(errs, validateRoleRef(o.RoleRef, "ClusterRole")...)
		for i, s := range o.Subjects {
			errs = append(errs, validateSubject(s, false, field.NewPath("subjects").Index(i))...)
		}
		if p, ok := old.(*rbacv1.ClusterRoleBinding); ok && o.RoleRef != p.RoleRef {
			errs = append(errs, field.Invalid(field.NewPath("roleRef"), internalRoleRef{o.RoleRef.APIGroup, o.RoleRef.Kind, o.RoleRef.Name}, apivalidation.FieldImmutableErrorMsg))
		}
	}
	return errs
}

// validatePolicyRule is ValidatePolicyRule: verbs always; non-resource
// URLs only in a ClusterRole and never with resources; apiGroups and
// resources otherwise.
func validatePolicyRule(r rbacv1.PolicyRule, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(r.Verbs) == 0 {
		// The server's declarative validation covers this rule and answers
		// its own error, without the handwritten detail.
		errs = append(errs, field.Required(path.Child("verbs"), ""))
	}
	if len(r.NonResourceURLs) > 0 {
		if namespaced {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "namespaced rules cannot apply to non-resource URLs"))
		}
		if len(r.APIGroups) > 0 || len(r.Resources) > 0 || len(r.ResourceNames) > 0 {
			errs = append(errs, field.Invalid(path.Child("nonResourceURLs"), r.NonResourceURLs, "rules cannot apply to both regular resources and non-resource URLs"))
		}
		return errs
	}
	if len(r.APIGroups) == 0 {
		errs = append(errs, field.Required(path.Child("apiGroups"), "resource rules must supply at least one api group"))
	}
	if len(r.Resources) == 0 {
		errs = append(errs, field.Required(path.Child("resources"), "resource rules must supply at least one resource"))
	}
	return errs
}

// validateAggregationRule is ValidateClusterRole's check of an
// aggregation rule: some selectors, each valid.
func validateAggregationRule(rule *rbacv1.AggregationRule, allowInvalidValues bool) field.ErrorList {
	if rule == nil {
		return nil
	}
	path := field.NewPath("aggregationRule", "clusterRoleSelectors")
	var errs field.ErrorList
	if len(rule.ClusterRoleSelectors) == 0 {
		errs = append(errs, field.Required(path, "at least one clusterRoleSelector required if aggregationRule is non-nil"))
	}
	opts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: allowInvalidValues}
	for i, sel := range rule.ClusterRoleSelectors {
		errs = append(errs, metav1validation.ValidateLabelSelector(&sel, opts, path.Index(i))...)
		if _, err := metav1.LabelSelectorAsSelector(&sel); err != nil {
			// The server quotes the selector it failed to make: nil.
			errs = append(errs, field.Invalid(path.Index(i), nil, "invalid label selector."))
		}
	}
	return errs
}

// hasInvalidLabelValueInSelector is the ClusterRole strategy's test of an
// old object: one whose selectors hold an invalid label value may keep it.
func hasInvalidLabelValueInSelector(role *rbacv1.ClusterRole) bool {
	if role.AggregationRule == nil {
		return false
	}
	opts := metav1validation.LabelSelectorValidationOptions{}
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		if len(metav1validation.ValidateLabelSelector(&sel, opts, nil)) > 0 {
			return true
		}
	}
	return false
}

// validateRoleRef checks a binding's roleRef: RBAC's group, one of kinds,
// a name.
func validateRoleRef(ref rbacv1.RoleRef, kinds ...string) field.ErrorList {
	path := field.NewPath("roleRef")
	var errs field.ErrorList
	if ref.APIGroup != rbacv1.GroupName {
		errs = append(errs, field.NotSupported(path.Child("apiGroup"), ref.APIGroup, []string{rbacv1.GroupName}))
	}
	known := false
	for _, k := range kinds {
		known = known || ref.Kind == k
	}
	if !known {
		errs = append(errs, field.NotSupported(path.Child("kind"), ref.Kind, kinds))
	}
	if ref.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	} else {
		for _, msg := range pathSegmentName(ref.Name, false) {
			errs = append(errs, field.Invalid(path.Child("name"), ref.Name, msg))
		}
	}
	return errs
}

// validateSubject is ValidateRoleBindingSubject.
func validateSubject(s rbacv1.Subject, namespaced bool, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.Name == "" {
		errs = append(errs, field.Required(path.Child("name"), ""))
	}
	switch s.Kind {
	case rbacv1.ServiceAccountKind:
		if s.Name != "" {
			for _, msg := range apivalidation.NameIsDNSSubdomain(s.Name, false) {
				errs = append(errs, field.Invalid(path.Child("name"), s.Name, msg))
			}
		}
		if s.APIGroup != "" {
			errs = append(errs, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{""}))
		}
		if !namespaced && s.Namespace == "" {
			errs = append(errs, field.Required(path.Child("namespace"), ""))
		}
	case rbacv1.UserKind, rbacv1.GroupKind:
		if s.APIGroup != rbacv1.GroupName {
			errs = append(errs, field.NotSupported(path.Child("apiGroup"), s.APIGroup, []string{rbacv1.GroupName}))
		}
	default:
		errs = append(errs, field.NotSupported(path.Child("kind"), s.Kind, []string{rbacv1.ServiceAccountKind, rbacv1.UserKind, rbacv1.GroupKind}))
	}
	return errs
}

// internalRoleRef is a roleRef as the server's field error quotes it:
// its internal type, without JSON tags, so the quoted JSON has the Go
// field names ({"APIGroup":...,"Kind":...,"Name":...}).
type internalRoleRef struct{ APIGroup, Kind, Name string }

// defaultRBAC sets a binding's defaults (SetDefaults_RoleBinding,
// SetDefaults_ClusterRoleBinding, SetDefaults_Subject): RBAC's group for
// its roleRef and for User and Group subjects.
func defaultRBAC(ref *rbacv1.RoleRef, subjects []rbacv1.Subject) {
	if ref.APIGroup == "" {
		ref.APIGroup = rbacv1.GroupName
	}
	for i := range subjects {
		if s := &subjects[i]; s.APIGroup == "" && (s.Kind == rbacv1.UserKind || s.Kind == rbacv1.GroupKind) {
			s.APIGroup = rbacv1.GroupName
		}
	}
}
