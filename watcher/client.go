package watcher

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
)

// TypedClient is the List and Watch half of a client-go typed resource
// client, such as the kubernetes.Interface's CoreV1().ConfigMaps(ns).
type TypedClient[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// FromTyped returns a [cache.ListWatch] over a typed client, for a
// Watcher of the client's object type; the list type is inferred:
//
//	lw := watcher.FromTyped(clientset.CoreV1().ConfigMaps("default"))
//
// The result is an ordinary client-go ListWatch: a reflector or informer
// takes it too.
func FromTyped[L runtime.Object](c TypedClient[L]) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, err // not a typed nil in a non-nil interface
			}
			return l, nil
		},
		WatchFuncWithContext: c.Watch,
	}
}

// FromDynamic returns a [cache.ListWatch] over a dynamic client's
// resource, for a Watcher[*unstructured.Unstructured]:
//
//	lw := watcher.FromDynamic(dyn.Resource(gvr).Namespace("default"))
func FromDynamic(c dynamic.ResourceInterface) *cache.ListWatch {
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			l, err := c.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return l, nil
		},
		WatchFuncWithContext: c.Watch,
	}
}
