package watcher_test

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/kwrec/kwrec/watcher"
	"github.com/kwrec/kwrec/watcher/internal/fakeapi"
)

// A scripted apiserver stands in for a cluster (or a replay): two
// ConfigMaps, then a watch that modifies one.
func startServer() *fakeapi.Server {
	return fakeapi.Start(
		fakeapi.Reply{Body: fakeapi.List("10", "", fakeapi.ConfigMap("a", "8"), fakeapi.ConfigMap("b", "9"))},
		fakeapi.Reply{Watch: true, Hold: true, Events: []string{fakeapi.Modified(fakeapi.ConfigMap("a", "11"))}},
	)
}

func ExampleWatcher_Events() {
	srv := startServer()
	defer srv.Close()
	clientset, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		panic(err)
	}

	w := watcher.New[*corev1.ConfigMap](watcher.FromTyped(clientset.CoreV1().ConfigMaps("default")), watcher.Config{})
	n := 0
	for ev := range w.Events(context.Background()) {
		fmt.Println(ev)
		if n++; n == 5 {
			break // the sequence never ends by itself
		}
	}
	// Output:
	// Init
	// InitApply default/a
	// InitApply default/b
	// InitDone
	// Apply default/a
}

// client-go's own list-watch, as informers build it, plugs in as it is.
func ExampleNew_listWatch() {
	srv := startServer()
	defer srv.Close()
	clientset, err := kubernetes.NewForConfig(srv.Config())
	if err != nil {
		panic(err)
	}

	lw := cache.NewListWatchFromClient(clientset.CoreV1().RESTClient(), "configmaps", "default", fields.Everything())
	w := watcher.New[*corev1.ConfigMap](lw, watcher.Config{})
	n := 0
	for ev := range w.Events(context.Background()) {
		fmt.Println(ev)
		if n++; n == 5 {
			break
		}
	}
	// Output:
	// Init
	// InitApply default/a
	// InitApply default/b
	// InitDone
	// Apply default/a
}

func ExampleStore() {
	srv := startServer()
	defer srv.Close()
	dyn, err := dynamic.NewForConfig(srv.Config())
	if err != nil {
		panic(err)
	}
	configMaps := dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace("default")

	w := watcher.New[*unstructured.Unstructured](watcher.FromDynamic(configMaps), watcher.Config{})
	var store watcher.Store[*unstructured.Unstructured]
	for ev := range w.Events(context.Background()) {
		store.Apply(ev)
		if ev.Type == watcher.Apply {
			break
		}
	}
	for _, cm := range store.List() {
		fmt.Println(watcher.Key(cm), cm.GetResourceVersion())
	}
	// Output:
	// default/a 11
	// default/b 9
}
