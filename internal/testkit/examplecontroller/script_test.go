package examplecontroller_test

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// namespace is where the script runs, live and recorded: the replay
// serves the recorded namespace, so the controller's cache is limited to
// it in both.
const namespace = "kwrec-mirror"

// The script, run once to record testdata/mirror.kwrec.zst and again live
// by TestLiveMirrorEndsLikeTheReplay, so that both worlds see the same
// changes. Before the recording starts: alpha, labelled mirror=true (one
// object: a controller's initial reconciles come in the informer's map
// order, so more would make its writes nondeterministic). During it, gap
// apart: create beta (unlabelled), epsilon and gamma (mirror=true) and
// delta (mirror=false), update alpha's data twice, relabel delta
// mirror=true, relabel gamma mirror=false, delete epsilon.

// setUp creates the namespace and the ConfigMaps that exist before the
// script.
func setUp(ctx context.Context, cs kubernetes.Interface, ns string) error {
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	for _, cm := range []*corev1.ConfigMap{newCM("alpha", "true", "a", "1")} {
		cm.Namespace = ns
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	return nil
}

// play makes the script's changes, gap apart. Updates read the object
// first and retry on conflict: live, the controller writes the same
// objects meanwhile.
func play(ctx context.Context, cs kubernetes.Interface, ns string, gap time.Duration) error {
	cms := cs.CoreV1().ConfigMaps(ns)
	create := func(cm *corev1.ConfigMap) func() error {
		cm.Namespace = ns
		return func() error { _, err := cms.Create(ctx, cm, metav1.CreateOptions{}); return err }
	}
	update := func(name string, change func(*corev1.ConfigMap)) func() error {
		return func() error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cm, err := cms.Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				change(cm)
				_, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
				return err
			})
		}
	}
	relabel := func(v string) func(*corev1.ConfigMap) {
		return func(cm *corev1.ConfigMap) { cm.Labels["mirror"] = v }
	}
	steps := []func() error{
		create(newCM("beta", "", "b", "1")),
		create(newCM("epsilon", "true", "e", "1")),
		create(newCM("gamma", "true", "g", "1")),
		create(newCM("delta", "false", "d", "1")),
		update("alpha", func(cm *corev1.ConfigMap) { cm.Data["a"] = "2" }),
		update("alpha", func(cm *corev1.ConfigMap) { cm.Data["a"] = "3" }),
		update("delta", relabel("true")),
		update("gamma", relabel("false")),
		func() error { return cms.Delete(ctx, "epsilon", metav1.DeleteOptions{}) },
	}
	for i, step := range steps {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(gap):
		}
		if err := step(); err != nil {
			return fmt.Errorf("script step %d: %w", i+1, err)
		}
	}
	return nil
}

// newCM returns ConfigMap name with label mirror=mirror (none when
// empty) and one data key.
func newCM(name, mirror, key, value string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{}},
		Data: map[string]string{key: value}}
	if mirror != "" {
		cm.Labels["mirror"] = mirror
	}
	return cm
}
