package write

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// fieldManagerMaxLength is k8s.io/apimachinery validation.FieldManagerMaxLength.
const fieldManagerMaxLength = 128

// fieldManager builds the managedfields machinery the API server installs
// for the resource: client-go's OpenAPI models for built-in kinds, a
// deduced (all-atomic) schema for custom resources, and the reset fields of
// a resource with a status subresource (the main resource does not own
// .status; the status subresource owns only .status).
func (w *write) fieldManager() (*managedfields.FieldManager, error) {
	conv := unstructuredConvertor{}
	creater := unstructuredCreater{w}
	reset := w.resetFields()
	if w.kind.typed {
		return managedfields.NewDefaultFieldManager(w.engine.typeConverter(true), conv, serverDefaulter{w}, creater, w.gvk, w.gvk.GroupVersion(), w.req.Subresource, reset)
	}
	tc := w.engine.typeConverter(false)
	if w.req.Custom != nil {
		var err error
		if tc, err = w.req.Custom.applying(); err != nil {
			return nil, err
		}
	}
	return managedfields.NewDefaultCRDFieldManager(tc, conv, serverDefaulter{w}, creater, w.gvk, w.gvk.GroupVersion(), w.req.Subresource, reset)
}

func (w *write) resetFields() map[fieldpath.APIVersion]fieldpath.Filter {
	if !w.kind.status {
		return nil
	}
	var s *fieldpath.Set
	if w.req.Subresource == "status" {
		s = fieldpath.NewSet(w.statusResetFields()...)
	} else {
		s = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	}
	return map[fieldpath.APIVersion]fieldpath.Filter{
		fieldpath.APIVersion(w.gvk.GroupVersion().String()): fieldpath.NewExcludeSetFilter(s),
	}
}

// manager returns the request's field manager (see [Request.Manager]).
func (w *write) manager() string { return w.req.Manager() }

// Manager returns the name of the request's field manager: the
// fieldManager query parameter, else the user agent's prefix as the server
// derives it.
func (r Request) Manager() string {
	if m := r.Query.Get("fieldManager"); m != "" {
		return m
	}
	var b strings.Builder
	for _, c := range strings.Split(r.UserAgent, "/")[0] {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > fieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// stampManagedFields sets the time of every managedFields entry of obj that
// differs from old's entry for the same manager to now: the field manager
// stamps the wall clock, the engine the Stamp.
func stampManagedFields(obj, old *object, now metav1.Time) {
	type key struct{ manager, op, sub, apiVersion string }
	prev := map[key]metav1.ManagedFieldsEntry{}
	if old != nil {
		for _, e := range old.GetManagedFields() {
			prev[key{e.Manager, string(e.Operation), e.Subresource, e.APIVersion}] = e
		}
	}
	mf := obj.GetManagedFields()
	if len(mf) == 0 {
		return
	}
	for i, e := range mf {
		if e.Subresource == SubresourceScale {
			// The server's scale handler writes its entry without a time.
			mf[i].Time = nil
			continue
		}
		p, ok := prev[key{e.Manager, string(e.Operation), e.Subresource, e.APIVersion}]
		if ok && p.Time.Equal(e.Time) && fieldsEqual(p.FieldsV1, e.FieldsV1) {
			continue
		}
		t := now
		mf[i].Time = &t
	}
	sortManagedFields(mf)
	obj.SetManagedFields(mf)
}

// sortManagedFields puts mf in the server's order: applies first, then by
// time (none first), manager, apiVersion and subresource.
func sortManagedFields(mf []metav1.ManagedFieldsEntry) {
	slices.SortStableFunc(mf, func(p, q metav1.ManagedFieldsEntry) int {
		sec := func(e metav1.ManagedFieldsEntry) int64 {
			if e.Time == nil {
				return 0
			}
			return e.Time.Unix()
		}
		return cmp.Or(cmp.Compare(p.Operation, q.Operation), cmp.Compare(sec(p), sec(q)), cmp.Compare(p.Manager, q.Manager),
			cmp.Compare(p.APIVersion, q.APIVersion), cmp.Compare(p.Subresource, q.Subresource))
	})
}

func fieldsEqual(a, b *metav1.FieldsV1) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.GetRawString() == b.GetRawString()
}

// unstructuredConvertor is the object convertor of a single-version
// resource of unstructured objects: converting to the object's own version
// only sets apiVersion.
type unstructuredConvertor struct{}

var _ runtime.ObjectConvertor = unstructuredConvertor{}

func (unstructuredConvertor) Convert(in, out, context any) error {
	return errors.New("write: conversion between objects is not supported")
}

func (unstructuredConvertor) ConvertToVersion(in runtime.Object, gv runtime.GroupVersioner) (runtime.Object, error) {
	u, ok := in.(*unstructured.Unstructured)
	if !ok {
		return nil, errors.New("write: only unstructured objects convert")
	}
	gvk := u.GroupVersionKind()
	target, ok := gv.KindForGroupVersionKinds([]schema.GroupVersionKind{gvk})
	if !ok {
		return nil, errors.New("write: no version to convert " + gvk.String() + " to")
	}
	out := u.DeepCopy()
	out.SetGroupVersionKind(target)
	return out, nil
}

func (unstructuredConvertor) ConvertFieldLabel(gvk schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}

// unstructuredCreater creates the empty object of the write's kind as the
// server's scheme does (for a built-in kind its Go type's zero value), so
// that the fields it holds are nobody's before the first apply.
type unstructuredCreater struct{ w *write }

var _ runtime.ObjectCreater = unstructuredCreater{}

func (c unstructuredCreater) New(schema.GroupVersionKind) (runtime.Object, error) {
	return c.w.newEmpty(), nil
}

// serverDefaulter sets the server's defaults (see [setDefaults]) on the
// objects the field manager makes, as the server's scheme does.
type serverDefaulter struct{ w *write }

var _ runtime.ObjectDefaulter = serverDefaulter{}

func (d serverDefaulter) Default(obj runtime.Object) {
	if u, ok := obj.(*object); ok {
		_ = d.w.normalize(u)
	}
}

// isApply reports whether the write is a server-side apply.
func (w *write) isApply() bool {
	return w.req.Verb == VerbPatch && types.PatchType(w.req.ContentType) == types.ApplyYAMLPatchType
}

// equalContent reports whether a and b are equal but for their
// managedFields.
func equalContent(a, b *object) bool {
	a, b = a.DeepCopy(), b.DeepCopy()
	a.SetManagedFields(nil)
	b.SetManagedFields(nil)
	return equality.Semantic.DeepEqual(a.Object, b.Object)
}

// keepApplyTime gives manager's Apply entry in obj the time it has in old,
// none when old has no such entry.
func keepApplyTime(obj, old *object, manager string) {
	var prev *metav1.Time
	for _, e := range old.GetManagedFields() {
		if e.Manager == manager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			prev = e.Time
		}
	}
	mf := obj.GetManagedFields()
	for i := range mf {
		if mf[i].Manager == manager && mf[i].Operation == metav1.ManagedFieldsOperationApply && mf[i].Subresource == "" {
			mf[i].Time = prev
		}
	}
	sortManagedFields(mf)
	obj.SetManagedFields(mf)
}

// statusResetFields are the fields a status write does not own, as its
// strategy's GetResetFields says (k8s.io/kubernetes v1.37.2
// pkg/registry/*/strategy.go): the spec, and the metadata a built-in
// kind's status strategy resets (see [write.statusMetadata]); a custom
// resource's status owns no metadata.
func (w *write) statusResetFields() []fieldpath.Path {
	spec, meta := fieldpath.MakePathOrDie("spec"), fieldpath.MakePathOrDie("metadata")
	switch gr := w.gr.String(); {
	case !w.kind.typed || statusResetsMetadata[gr]:
		return []fieldpath.Path{spec, meta}
	case gr == "deployments.apps":
		return []fieldpath.Path{spec, fieldpath.MakePathOrDie("metadata", "labels")}
	case gr == "pods":
		return []fieldpath.Path{spec, fieldpath.MakePathOrDie("metadata", "deletionTimestamp"), fieldpath.MakePathOrDie("metadata", "ownerReferences")}
	}
	return []fieldpath.Path{spec}
}
