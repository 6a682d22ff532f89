package watcher

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
)

// ListerWatcher is the part of a Kubernetes client a [Watcher] uses. List
// returns a list object (such as *corev1.ConfigMapList or
// *unstructured.UnstructuredList) whose Items are the watcher's T. Build one
// with [FromTyped] or [FromDynamic]; anything else that lists and watches,
// a replay included, works too.
type ListerWatcher interface {
	List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// TypedClient is the List and Watch half of a client-go typed resource
// client, such as the kubernetes.Interface's CoreV1().ConfigMaps(ns).
type TypedClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromTyped adapts a typed client; the list type is inferred:
//
//	lw := watcher.FromTyped(clientset.CoreV1().ConfigMaps("default"))
func FromTyped[L runtime.Object](c TypedClient[L]) ListerWatcher { return typed[L]{c} }

type typed[L runtime.Object] struct{ c TypedClient[L] }

func (t typed[L]) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l, err := t.c.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (t typed[L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return t.c.Watch(ctx, opts)
}

// FromDynamic adapts a dynamic client's resource, for a
// Watcher[*unstructured.Unstructured]:
//
//	lw := watcher.FromDynamic(dyn.Resource(gvr).Namespace("default"))
func FromDynamic(c dynamic.ResourceInterface) ListerWatcher { return dynamicLW{c} }

type dynamicLW struct{ c dynamic.ResourceInterface }

func (d dynamicLW) List(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
	l, err := d.c.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	return l, nil
}

func (d dynamicLW) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	return d.c.Watch(ctx, opts)
}

var (
	_ ListerWatcher = typed[runtime.Object]{}
	_ ListerWatcher = dynamicLW{}
)
