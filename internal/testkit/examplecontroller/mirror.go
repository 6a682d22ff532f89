package examplecontroller

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"sync"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
)

// The names the controller writes.
const (
	Label        = "mirror"              // value "true" on a source
	MirrorOf     = "kwrec.dev/mirror-of" // label of a mirror: its source's name
	Mirrored     = "kwrec.dev/mirrored"  // annotation of a source: Hash of its data
	Writes       = "kwrec.dev/writes"    // annotation of the Lease: reconciles that wrote
	Lease        = "kwrec-mirror"        // the Lease's name
	FieldOwner   = "kwrec-mirror"        // the field manager of the apply
	MirrorSuffix = "-mirror"             // a mirror is named source name + MirrorSuffix
)

// Reconciler mirrors the ConfigMaps of one source (see the package doc).
type Reconciler struct {
	client.Client
	// Leases reads the Lease from the server: through the cache a read
	// right after the Lease's create could miss it.
	Leases client.Reader

	mu sync.Mutex
	// owed counts, per namespace, the reconciles that wrote and are not
	// counted in the Lease yet: its update failed (a 409, a 500), and the
	// retried reconcile, finding nothing left to write, still owes it.
	owed map[string]int
}

// Setup registers the controller with mgr, reconciling one ConfigMap at a
// time so that its writes come in a deterministic order.
func Setup(mgr ctrl.Manager) error {
	notMirror := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetLabels()[MirrorOf] == "" })
	return ctrl.NewControllerManagedBy(mgr).Named("mirror").
		For(&corev1.ConfigMap{}, builder.WithPredicates(notMirror)).
		WithOptions(controller.Options{MaxConcurrentReconciles: 1}).
		Complete(&Reconciler{Client: mgr.GetClient(), Leases: mgr.GetAPIReader()})
}

// Reconcile brings the mirror of req's ConfigMap, the source's annotation
// and the Lease up to date. Errors (a 409 included) go back to the
// workqueue, which retries.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wrote, err := r.reconcile(ctx, req)
	if wrote {
		r.mu.Lock()
		if r.owed == nil {
			r.owed = map[string]int{}
		}
		r.owed[req.Namespace]++
		r.mu.Unlock()
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, r.renew(ctx, req.Namespace)
}

// reconcile brings the mirror and the source's annotation up to date; it
// reports whether it changed something.
func (r *Reconciler) reconcile(ctx context.Context, req ctrl.Request) (bool, error) {
	var src corev1.ConfigMap
	if err := r.Get(ctx, req.NamespacedName, &src); client.IgnoreNotFound(err) != nil {
		return false, err
	} else if err != nil || src.Labels[Label] != "true" {
		return r.unmirror(ctx, &src, req)
	}
	hash := Hash(src.Data)
	m := corev1ac.ConfigMap(req.Name+MirrorSuffix, req.Namespace).WithLabels(map[string]string{MirrorOf: req.Name}).WithData(src.Data)
	if err := r.Apply(ctx, m, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return false, err
	}
	if src.Annotations[Mirrored] == hash {
		return false, nil
	}
	if src.Annotations == nil {
		src.Annotations = map[string]string{}
	}
	src.Annotations[Mirrored] = hash
	if err := r.Update(ctx, &src); err != nil {
		return false, err
	}
	return true, nil
}

// unmirror deletes the mirror of a source that is gone or no longer
// labelled, and its annotation; it reports whether it wrote.
func (r *Reconciler) unmirror(ctx context.Context, src *corev1.ConfigMap, req ctrl.Request) (bool, error) {
	var m corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: req.Namespace, Name: req.Name + MirrorSuffix}, &m)
	wrote := err == nil && m.Labels[MirrorOf] == req.Name
	if wrote {
		err = client.IgnoreNotFound(r.Delete(ctx, &m, client.Preconditions{UID: &m.UID}))
	}
	if err = client.IgnoreNotFound(err); err != nil || src.Annotations[Mirrored] == "" {
		return wrote && err == nil, err
	}
	delete(src.Annotations, Mirrored)
	if err := r.Update(ctx, src); err != nil {
		return wrote, err
	}
	return true, nil
}

// renew counts the reconciles owed in ns in the Lease, creating it first;
// with none owed it does nothing.
func (r *Reconciler) renew(ctx context.Context, ns string) error {
	r.mu.Lock()
	owed := r.owed[ns]
	r.mu.Unlock()
	if owed == 0 {
		return nil
	}
	var l coordinationv1.Lease
	err := r.Leases.Get(ctx, client.ObjectKey{Namespace: ns, Name: Lease}, &l)
	if apierrors.IsNotFound(err) {
		l = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: Lease, Annotations: map[string]string{Writes: strconv.Itoa(owed)}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(FieldOwner)}}
		err = r.Create(ctx, &l)
	} else if err == nil {
		n, _ := strconv.Atoi(l.Annotations[Writes])
		metav1.SetMetaDataAnnotation(&l.ObjectMeta, Writes, strconv.Itoa(n+owed))
		err = r.Update(ctx, &l)
	}
	if err != nil {
		return err
	}
	r.mu.Lock()
	r.owed[ns] -= owed
	r.mu.Unlock()
	return nil
}

// Hash is the value of the Mirrored annotation for data: the first 16 hex
// digits of the SHA-256 of its JSON (keys sorted).
func Hash(data map[string]string) string {
	b, _ := json.Marshal(data) // a map of strings always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}
