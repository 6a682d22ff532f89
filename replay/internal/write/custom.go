package write

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/kwrec/kwrec/replay/internal/discovery"
	openapibuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsinternal "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	structuralschema "k8s.io/apiextensions-apiserver/pkg/apiserver/schema"
	structuraldefaulting "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/defaulting"
	structuralpruning "k8s.io/apiextensions-apiserver/pkg/apiserver/schema/pruning"
	apiservervalidation "k8s.io/apiextensions-apiserver/pkg/apiserver/validation"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured/unstructuredscheme"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"
)

// CustomResource is what kube-apiserver knows of a custom resource from
// one version of its CustomResourceDefinition, and does with it, through
// the server's own code (k8s.io/apiextensions-apiserver): the structural
// schema that unknown fields are pruned by and defaults filled from, and
// the resource's strategy, whose validation checks the schema (types,
// minimum, enum, maxItems, required, ...), the x-kubernetes-validations
// CEL rules and the metadata. Without one a custom resource is kept as
// sent.
type CustomResource struct {
	structural *structuralschema.Structural
	strategy   customStrategy
	// scale is the scale subresource's paths, nil without one.
	scale *apiextensionsinternal.CustomResourceSubresourceScale
	// selectable are the labels a field selector may name:
	// metadata.name, metadata.namespace of a namespaced resource, and
	// the version's selectableFields.
	selectable map[string]bool
	// def is the definition, from which the type converter of
	// server-side apply is built at its first apply.
	def      *apiextensionsv1.CustomResourceDefinition
	applying func() (managedfields.TypeConverter, error)
}

// customStrategy is the part of the server's custom resource strategy a
// write uses.
type customStrategy interface {
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
}

// NewCustomResource reads version of crd, a CustomResourceDefinition's
// JSON, as the API server does when it serves that version. It returns
// nil and no error for a version without a schema.
func NewCustomResource(crd []byte, version string) (*CustomResource, error) {
	var def apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal(crd, &def); err != nil {
		return nil, fmt.Errorf("reading the CustomResourceDefinition: %w", err)
	}
	v1Schema, err := apihelpers.GetSchemaForVersion(&def, version)
	if err != nil || v1Schema == nil || v1Schema.OpenAPIV3Schema == nil {
		return nil, err
	}
	var internal apiextensionsinternal.CustomResourceValidation
	if err := apiextensionsv1.Convert_v1_CustomResourceValidation_To_apiextensions_CustomResourceValidation(v1Schema, &internal, nil); err != nil {
		return nil, fmt.Errorf("%s: converting the schema of %s: %w", def.Name, version, err)
	}
	structural, err := structuralschema.NewStructural(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: the schema of %s is not structural: %w", def.Name, version, err)
	}
	validator, _, err := apiservervalidation.NewSchemaValidator(internal.OpenAPIV3Schema)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", def.Name, err)
	}
	status, statusValidator, scale, err := customSubresources(&def, version, &internal)
	if err != nil {
		return nil, err
	}
	kind := schema.GroupVersionKind{Group: def.Spec.Group, Version: version, Kind: def.Spec.Names.Kind}
	namespaced := def.Spec.Scope == apiextensionsv1.NamespaceScoped
	var selectable []apiextensionsv1.SelectableField
	selects := map[string]bool{"metadata.name": true, "metadata.namespace": namespaced}
	for _, v := range def.Spec.Versions {
		if v.Name == version {
			selectable = v.SelectableFields
		}
	}
	for _, f := range selectable {
		// The label is the JSONPath without its leading dot, as the
		// server's prepareSelectableFields names it.
		selects[strings.TrimPrefix(f.JSONPath, ".")] = true
	}
	strategy := customresource.NewStrategy(unstructuredscheme.NewUnstructuredObjectTyper(), namespaced,
		kind, validator, statusValidator, structural, status, scale, selectable)
	c := &CustomResource{structural: structural, strategy: strategy, scale: scale, selectable: selects, def: &def}
	c.applying = sync.OnceValues(c.typeConverter)
	return c, nil
}

// typeConverter builds the type converter the apiextensions-apiserver's
// custom resource handler gives server-side apply: the OpenAPI schemas of
// every version of the definition, built by the server's builder and
// merged onto the static ones (ObjectMeta and what it references), so
// that a list map merges by its keys, a granular map by key and an atomic
// struct whole (k8s.io/apiextensions-apiserver/pkg/apiserver
// buildOpenAPIModelsForApply). Without schemas it is the deduced one,
// every field atomic, as there.
func (c *CustomResource) typeConverter() (managedfields.TypeConverter, error) {
	d, err := discovery.Builtin()
	if err != nil {
		return nil, err
	}
	static, err := d.MetaSchemas()
	if err != nil {
		return nil, err
	}
	specs := []*spec3.OpenAPI{{Version: "3.0.0", Components: &spec3.Components{Schemas: static}}}
	for _, v := range c.def.Spec.Versions {
		s, err := openapibuilder.BuildOpenAPIV3(c.def, v.Name, openapibuilder.Options{})
		if err != nil {
			return nil, fmt.Errorf("%s: the OpenAPI schema of %s: %w", c.def.Name, v.Name, err)
		}
		specs = append(specs, s)
	}
	merged, err := openapibuilder.MergeSpecsV3(specs...)
	if err != nil {
		return nil, fmt.Errorf("%s: merging its OpenAPI schemas: %w", c.def.Name, err)
	}
	if len(merged.Components.Schemas) == 0 {
		return managedfields.NewDeducedTypeConverter(), nil
	}
	return managedfields.NewTypeConverter(merged.Components.Schemas, c.def.Spec.PreserveUnknownFields)
}

// customSubresources returns the status and scale subresources of version
// of def, and the validator of the status schema, as the server builds
// them.
func customSubresources(def *apiextensionsv1.CustomResourceDefinition, version string, internal *apiextensionsinternal.CustomResourceValidation) (
	*apiextensionsinternal.CustomResourceSubresourceStatus, apiservervalidation.SchemaValidator, *apiextensionsinternal.CustomResourceSubresourceScale, error) {
	subs, err := apihelpers.GetSubresourcesForVersion(def, version)
	if err != nil || subs == nil {
		return nil, nil, nil, err
	}
	var status *apiextensionsinternal.CustomResourceSubresourceStatus
	var statusValidator apiservervalidation.SchemaValidator
	if subs.Status != nil {
		status = &apiextensionsinternal.CustomResourceSubresourceStatus{}
		if s, ok := internal.OpenAPIV3Schema.Properties["status"]; ok {
			if statusValidator, _, err = apiservervalidation.NewSchemaValidator(&s); err != nil {
				return nil, nil, nil, err
			}
		}
	}
	var scale *apiextensionsinternal.CustomResourceSubresourceScale
	if subs.Scale != nil {
		scale = &apiextensionsinternal.CustomResourceSubresourceScale{}
		if err := apiextensionsv1.Convert_v1_CustomResourceSubresourceScale_To_apiextensions_CustomResourceSubresourceScale(subs.Scale, scale, nil); err != nil {
			return nil, nil, nil, err
		}
	}
	return status, statusValidator, scale, nil
}

// unknownFields returns the fields of data, a custom resource's JSON, that
// its schema does not know, as the server's decoder reports them under
// fieldValidation Strict or Warn (`unknown field "spec.bogus"`), sorted.
func (c *CustomResource) unknownFields(data []byte) []error {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(data, &m); err != nil {
		return nil // not a strict error: the non-strict decode reports it
	}
	var errs []error
	for _, p := range structuralpruning.PruneWithOptions(m, c.structural, true, structuralschema.UnknownFieldPathOptions{TrackUnknownFieldPaths: true}) {
		errs = append(errs, fmt.Errorf(`unknown field "%s"`, p))
	}
	return errs
}

// coerce prunes the fields obj's schema does not know and fills its
// defaults, as the server's decoder does to every custom resource it reads
// (from a request or from storage).
func (c *CustomResource) coerce(obj map[string]any) {
	structuralpruning.Prune(obj, c.structural, true)
	structuraldefaulting.PruneNonNullableNullsWithoutDefaults(obj, c.structural)
	structuraldefaulting.Default(obj, c.structural)
}

// validate is the strategy's validation of obj, created (old nil) or
// updated from old.
func (c *CustomResource) validate(obj, old *unstructured.Unstructured) field.ErrorList {
	if old == nil {
		return c.strategy.Validate(context.Background(), obj)
	}
	return c.strategy.ValidateUpdate(context.Background(), obj, old)
}

// SelectsOn reports whether a field selector may name label: the server
// refuses any other with "field label not supported: LABEL" (its
// crConverter.ConvertFieldLabel).
func (c *CustomResource) SelectsOn(label string) bool { return c.selectable[label] }

// Fields returns the fields a selector matches obj, a custom resource's
// JSON, by: its name, namespace and selectable fields, read and
// formatted by the server's strategy (GetAttrs).
func (c *CustomResource) Fields(obj []byte) (fields.Set, error) {
	m := map[string]any{}
	if err := kjson.UnmarshalCaseSensitivePreserveInts(obj, &m); err != nil {
		return nil, err
	}
	_, set, err := c.strategy.GetAttrs(&unstructured.Unstructured{Object: m})
	return set, err
}

// HasScale reports whether the resource has a scale subresource.
func (c *CustomResource) HasScale() bool { return c != nil && c.scale != nil }
