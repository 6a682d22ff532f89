package overlay

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// simulated reports whether Overlay mode answers verb on subresource sub
// of rp's resource, a custom resource's when c is not nil: scale (update,
// patch) of the built-in kinds that have it and of a custom resource
// whose definition declares it, CSR approval (update), and the POSTs of a
// Pod's eviction and binding and a ServiceAccount's token.
func simulated(rp apipath.Path, c *write.CustomResource, sub, verb string) bool {
	gr := schema.GroupResource{Group: rp.Group, Resource: rp.Resource}
	switch {
	case write.HasSubresource(gr, sub) || sub == write.SubresourceScale && c.HasScale():
		return verb == "update" || verb == "patch"
	case rp.Group == "" && rp.Resource == "pods":
		return (sub == "eviction" || sub == "binding") && verb == "create"
	case rp.Group == "" && rp.Resource == "serviceaccounts":
		return sub == "token" && verb == "create"
	}
	return false
}

// envelopedJSON returns an enveloped protobuf body of a built-in kind (a
// Scale, Eviction, Binding or TokenRequest) as JSON.
func envelopedJSON(body []byte) ([]byte, error) {
	apiVersion, kind, ms, me, ok := wire.Unenvelope(body)
	if !ok {
		return nil, fmt.Errorf("the request body is not enveloped protobuf")
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return nil, err
	}
	obj, err := clientgoscheme.Scheme.New(gv.WithKind(kind))
	if err != nil {
		return nil, fmt.Errorf("no kind %q is registered for version %q in scheme \"pkg/runtime/scheme.go:111\"", kind, apiVersion)
	}
	pm, ok := obj.(interface{ Unmarshal([]byte) error })
	if !ok {
		return nil, fmt.Errorf("%s has no protobuf form", kind)
	}
	if err := pm.Unmarshal(body[ms:me]); err != nil {
		return nil, fmt.Errorf("decoding the protobuf request body as %s: %v", kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gv.WithKind(kind))
	return json.Marshal(obj)
}

// success is the Status a Pod's eviction and binding answer with.
func success(code int) *metav1.Status {
	return &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: int32(code)}
}

// postSubresource answers the POST subresources (a Pod's eviction and
// binding, a ServiceAccount's token); ok is false for any other write.
func (wr *Writer) postSubresource(t *timeline.Timeline, w write.Request, proto bool) (a Answer, ok bool) {
	if w.Verb != "create" || w.Subresource == "" || w.Subresource == "status" {
		return Answer{}, false
	}
	var err error
	var answer []byte
	switch w.Subresource {
	case "eviction":
		answer, err = wr.evict(t, w)
	case "binding":
		answer, err = wr.bind(t, w)
	case "token":
		answer, err = wr.token(t, w)
	default:
		return Answer{}, false
	}
	if err != nil {
		return errorAnswer(err, proto), true
	}
	return object(t, http.StatusCreated, answer, false, false), true
}

// current returns the current JSON of object w.Namespace/w.Name of t, or
// the server's 404.
func (wr *Writer) current(t *timeline.Timeline, w write.Request) (timeline.Object, []byte, error) {
	o, ok := t.Current(w.Namespace + "/" + w.Name)
	if !ok {
		return o, nil, apierrors.NewNotFound(schema.GroupResource{Group: w.Group, Resource: w.Resource}, w.Name)
	}
	b, err := wr.world.JSON(t, &o)
	return o, b, err
}

// currentAs is current, decoded as a T.
func currentAs[T any](wr *Writer, t *timeline.Timeline, w write.Request) (timeline.Object, *T, error) {
	o, cur, err := wr.current(t, w)
	if err != nil {
		return o, nil, err
	}
	v := new(T)
	if err := json.Unmarshal(cur, v); err != nil {
		return o, nil, err
	}
	return o, v, nil
}

// bind sets the Pod's node, as the scheduler's binding does: spec.nodeName,
// the binding's annotations, and the PodScheduled condition.
func (wr *Writer) bind(t *timeline.Timeline, w write.Request) ([]byte, error) {
	var b corev1.Binding
	if err := json.Unmarshal(w.Body, &b); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Binding in version \"v1\" cannot be handled as a Binding: %v", err))
	}
	gr := schema.GroupResource{Resource: "pods/binding"}
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		return nil, apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, b.Name, nil)
	}
	for range writeRetries {
		o, pod, err := currentAs[corev1.Pod](wr, t, w)
		if err != nil {
			return nil, err
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(gr, w.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", w.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(gr, w.Name, fmt.Errorf("pod %s is already assigned to node %q", w.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodScheduled(pod, metav1.NewTime(wr.cfg.Clock.Now().Truncate(time.Second)))
		next, err := json.Marshal(pod)
		if err != nil {
			return nil, err
		}
		m, err := wire.MetaJSON(next)
		if err != nil {
			return nil, err
		}
		if _, _, err := t.Commit("MODIFIED", m.Key(), m.Labels, o.RV, next); err == nil {
			return wire.StatusJSON(success(http.StatusCreated)), nil
		} else if !errors.Is(err, timeline.ErrStale) {
			return nil, err
		}
	}
	return nil, apierrors.NewConflict(gr, w.Name, fmt.Errorf("kwrec replay: the pod changed %d times while it was bound; try again", writeRetries))
}

func setPodScheduled(pod *corev1.Pod, now metav1.Time) {
	for i, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			if c.Status != corev1.ConditionTrue {
				pod.Status.Conditions[i].Status, pod.Status.Conditions[i].LastTransitionTime = corev1.ConditionTrue, now
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
}

// fakeTokenPrefix starts every token kwrec hands out: clearly not a JWT,
// so that no verifier accepts it.
const fakeTokenPrefix = "kwrec-fake-token."

// token answers a TokenRequest for an existing ServiceAccount with a
// clearly fake token (not a JWT: nothing validates it).
func (wr *Writer) token(t *timeline.Timeline, w write.Request) ([]byte, error) {
	var tr authenticationv1.TokenRequest
	if err := json.Unmarshal(w.Body, &tr); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("TokenRequest in version \"v1\" cannot be handled as a TokenRequest: %v", err))
	}
	_, sa, err := currentAs[corev1.ServiceAccount](wr, t, w)
	if err != nil {
		return nil, err
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = new(int64)
		*tr.Spec.ExpirationSeconds = 3600
	}
	// The fields the request set (expirationSeconds after defaulting) are
	// its manager's, as the create handler records them.
	fields := map[string]any{"f:expirationSeconds": map[string]any{}}
	if len(tr.Spec.Audiences) > 0 {
		fields["f:audiences"] = map[string]any{}
	}
	if tr.Spec.BoundObjectRef != nil {
		fields["f:boundObjectRef"] = map[string]any{".": map[string]any{}}
	}
	if len(tr.Spec.Audiences) == 0 {
		// The server's own audience is its issuer, which a recording does
		// not hold: kwrec answers with the usual in-cluster one.
		tr.Spec.Audiences = []string{"https://kubernetes.default.svc.cluster.local"}
	}
	fv, err := json.Marshal(map[string]any{"f:spec": fields})
	if err != nil {
		return nil, err
	}
	now := metav1.NewTime(wr.cfg.Clock.Now().UTC().Truncate(time.Second))
	tr.TypeMeta = metav1.TypeMeta{Kind: "TokenRequest", APIVersion: "authentication.k8s.io/v1"}
	tr.ObjectMeta = metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, UID: sa.UID, CreationTimestamp: now,
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: w.Manager(), Operation: metav1.ManagedFieldsOperationUpdate,
			APIVersion: "authentication.k8s.io/v1", Time: &now, FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(string(fv)), Subresource: "token"}}}
	tr.Status = authenticationv1.TokenRequestStatus{
		Token:               fakeTokenPrefix + sa.Namespace + "." + sa.Name,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)),
	}
	return json.Marshal(&tr)
}

// deleteCollection deletes every object of w's collection its label and
// field selectors match, each as a delete with the request's options, and
// answers with the list of what it deleted, as the server does.
func (wr *Writer) deleteCollection(req *http.Request, t *timeline.Timeline, w write.Request, proto bool) Answer {
	q := req.URL.Query()
	sel, err := t.Selector(url.Values{"labelSelector": q["labelSelector"], "fieldSelector": q["fieldSelector"]}, w.Namespace, wr.world.Fields(t))
	if err != nil {
		return errorAnswer(err, proto)
	}
	l, err := t.List(url.Values{}, sel)
	if err != nil {
		return errorAnswer(err, proto)
	}
	var items [][]byte
	unstructured := w.Custom != nil || !wr.cfg.Codec.CanProtobuf(t) // a custom resource's list keeps each item's kind
	for _, o := range l.Items {
		del := w
		del.Verb, del.Namespace, del.Name = "delete", o.Namespace(), o.Name()
		listed, err := wr.world.JSON(t, &o)
		if err != nil {
			return errorAnswer(err, proto)
		}
		res, _, err := wr.applyWrite(t, del)
		if apierrors.IsNotFound(err) {
			continue // deleted meanwhile
		}
		if err != nil {
			return errorAnswer(err, proto)
		}
		// The answer lists the objects as they were listed, before their
		// deletes (Store.DeleteCollection).
		item := listed
		if !unstructured {
			item = wire.WithoutTypeMeta(listed)
		}
		items = append(items, item)
		wr.note(req, nil, res.Code, listed)
	}
	b := wire.ListJSON(t.ListKind, t.APIVersion, l.RV, "", nil, unstructured, items)
	return object(t, http.StatusOK, b, false, false)
}

// Scale answers a GET of the scale subresource of a Deployment,
// ReplicaSet, StatefulSet or ReplicationController, or of a custom
// resource whose definition has one, from its current version in world;
// ok is false for any other request.
func Scale(world *World, req *http.Request) (a Answer, ok bool) {
	path := strings.TrimSuffix(req.URL.Path, "/")
	parent, ok := strings.CutSuffix(path, "/"+write.SubresourceScale)
	if !ok {
		return Answer{}, false
	}
	rp, ok := apipath.Parse(parent)
	if !ok {
		return Answer{}, false
	}
	c, err := world.Custom(rp)
	if err != nil {
		return errorAnswer(err, false), true
	}
	gr := schema.GroupResource{Group: rp.Group, Resource: rp.Resource}
	switch {
	case c != nil && !c.HasScale():
		// A custom resource without the subresource: the server's
		// handler finds no such object.
		return errorAnswer(apierrors.NewNotFound(gr, rp.Name), false), true
	case !write.HasSubresource(gr, write.SubresourceScale) && !c.HasScale():
		return Answer{}, false
	}
	if rp.Name == "" {
		// ".../deployments//scale": the handler wants a name.
		return fail(http.StatusBadRequest, metav1.StatusReasonBadRequest, "name must be provided"), true
	}
	t, _ := world.ForRead(rp)
	if t == nil {
		return Answer{}, false
	}
	o, ok := t.Current(rp.Namespace + "/" + rp.Name)
	if !ok {
		return errorAnswer(apierrors.NewNotFound(schema.GroupResource{Group: rp.Group, Resource: rp.Resource}, rp.Name), false), true
	}
	cur, err := world.JSON(t, &o)
	if err != nil {
		return errorAnswer(err, false), true
	}
	b, err := write.ScaleOf(cur, c)
	if err != nil {
		return errorAnswer(err, false), true
	}
	return object(t, http.StatusOK, b, false, false), true
}

// Status answers a GET of the status subresource of an object whose
// resource has one (discovery lists RESOURCE/status): the whole object as
// it is now, as the server's status REST answers a get; ok is false for
// any other request.
func Status(world *World, req *http.Request) (a Answer, ok bool) {
	parent, ok := strings.CutSuffix(strings.TrimSuffix(req.URL.Path, "/"), "/status")
	if !ok {
		return Answer{}, false
	}
	rp, ok := apipath.Parse(parent)
	if !ok || rp.Name == "" {
		return Answer{}, false
	}
	docs, err := world.cfg.Docs()
	if err != nil {
		return Answer{}, false
	}
	if info, found := docs.Lookup(rp.Group, rp.Version, rp.Resource); !found || !info.Status {
		return Answer{}, false
	}
	t, ns := world.ForRead(rp)
	if t == nil {
		return Answer{}, false
	}
	if ns != "" {
		rp.Namespace = ns
	}
	o, ok := t.Current(rp.Namespace + "/" + rp.Name)
	if !ok {
		return errorAnswer(apierrors.NewNotFound(schema.GroupResource{Group: rp.Group, Resource: rp.Resource}, rp.Name), false), true
	}
	b, err := world.JSON(t, &o)
	if err != nil {
		return errorAnswer(err, false), true
	}
	return object(t, http.StatusOK, b, false, false), true
}
