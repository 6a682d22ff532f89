package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/yaml"

	"github.com/kwrec/kwrec/internal/apipath"
)

// The fuzzer's requests also go to controller-runtime's fake client
// (fake.NewClientBuilder() with the same namespaces), the test double most
// controller authors use, as a controller would make them through
// client.Client. Its answers are compared with the server's, by what the
// fake exposes: whether the call fails and with which status code and
// reason, and the object a create, update, patch, get or list returns. A
// measurement, not a check: the fake is not kwrec's. Once the fake takes
// what the server refuses, later answers about that object differ too, as
// they would in a test built on it. KWREC_FAKE_SAMPLES=1 logs two of each
// kind of difference.

// fakeClient returns a fake client holding the fuzz namespaces.
func fakeClient(seeds int) client.Client {
	b := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme)
	for s := range seeds {
		b = b.WithObjects(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("fuzz-%d", s)}})
	}
	return b.Build()
}

// fakeKinds are the resources the fake client is asked about, by the
// typed object and list it fills in.
var fakeKinds = map[string]struct {
	obj  func() client.Object
	list func() client.ObjectList
}{
	"configmaps":   {func() client.Object { return &corev1.ConfigMap{} }, func() client.ObjectList { return &corev1.ConfigMapList{} }},
	"secrets":      {func() client.Object { return &corev1.Secret{} }, func() client.ObjectList { return &corev1.SecretList{} }},
	"pods":         {func() client.Object { return &corev1.Pod{} }, func() client.ObjectList { return &corev1.PodList{} }},
	"deployments":  {func() client.Object { return &appsv1.Deployment{} }, func() client.ObjectList { return &appsv1.DeploymentList{} }},
	"roles":        {func() client.Object { return &rbacv1.Role{} }, func() client.ObjectList { return &rbacv1.RoleList{} }},
	"rolebindings": {func() client.Object { return &rbacv1.RoleBinding{} }, func() client.ObjectList { return &rbacv1.RoleBindingList{} }},
	"clusterroles": {func() client.Object { return &rbacv1.ClusterRole{} }, func() client.ObjectList { return &rbacv1.ClusterRoleList{} }},
}

// fakeComparable reports whether r is a request the fake client can be
// asked through client.Client: one of fakeKinds (it knows no CRD's
// schema), not to a subresource (scale, eviction) and not a list's
// continuation (the fake does not page).
func fakeComparable(r row) bool {
	u, err := url.Parse(r.path)
	if err != nil || strings.Contains(r.path, contToken) {
		return false
	}
	rp, ok := apipath.Parse(strings.TrimSuffix(u.Path, "/"))
	_, known := fakeKinds[rp.Resource]
	return ok && known
}

// fakeDo makes r through c as client.Client calls, and returns what the
// call answers: the error's status, else the object it filled in.
func fakeDo(ctx context.Context, c client.Client, r row) answer {
	u, err := url.Parse(r.path)
	if err != nil {
		return answer{Body: err.Error()}
	}
	rp, _ := apipath.Parse(strings.TrimSuffix(u.Path, "/"))
	q := u.Query()
	newObj := fakeKinds[rp.Resource].obj
	key := client.ObjectKey{Namespace: rp.Namespace, Name: rp.Name}
	var dry []string
	if q.Get("dryRun") == "All" {
		dry = []string{metav1.DryRunAll}
	}
	fill := func(obj client.Object) error {
		if err := json.Unmarshal([]byte(r.body), obj); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		obj.SetNamespace(rp.Namespace)
		return nil
	}
	var out any
	code := http.StatusOK
	switch {
	case r.method == http.MethodGet && rp.Name != "":
		obj := newObj()
		err, out = c.Get(ctx, key, obj), obj
	case r.method == http.MethodGet:
		list := fakeKinds[rp.Resource].list()
		opts := []client.ListOption{client.InNamespace(rp.Namespace)}
		if l, err := strconv.ParseInt(q.Get("limit"), 10, 64); err == nil {
			opts = append(opts, client.Limit(l))
		}
		if s := q.Get("labelSelector"); s != "" {
			sel, perr := labels.Parse(s)
			if perr != nil {
				return answer{Code: http.StatusBadRequest}
			}
			opts = append(opts, client.MatchingLabelsSelector{Selector: sel})
		}
		if s := q.Get("fieldSelector"); s != "" {
			sel, perr := fields.ParseSelector(s)
			if perr != nil {
				return answer{Code: http.StatusBadRequest}
			}
			opts = append(opts, client.MatchingFieldsSelector{Selector: sel})
		}
		err, out = c.List(ctx, list, opts...), list
	case r.method == http.MethodPost:
		obj := newObj()
		if err = fill(obj); err == nil {
			err, out, code = c.Create(ctx, obj, &client.CreateOptions{DryRun: dry}), obj, http.StatusCreated
		}
	case r.method == http.MethodPut:
		obj := newObj()
		if err = fill(obj); err == nil {
			err, out = c.Update(ctx, obj, &client.UpdateOptions{DryRun: dry}), obj
		}
	case r.method == http.MethodPatch:
		obj := newObj()
		obj.SetName(rp.Name)
		obj.SetNamespace(rp.Namespace)
		pt, data := patchTypes[r.ct], []byte(r.body)
		opts := []client.PatchOption{&client.PatchOptions{DryRun: dry}}
		if pt == types.ApplyPatchType {
			if data, err = yaml.YAMLToJSON(data); err != nil {
				return answer{Code: http.StatusBadRequest}
			}
			opts = append(opts, client.FieldOwner(q.Get("fieldManager")))
			if q.Get("force") == "true" {
				opts = append(opts, client.ForceOwnership)
			}
		}
		err, out = c.Patch(ctx, obj, client.RawPatch(pt, data), opts...), obj
	case r.method == http.MethodDelete && rp.Name != "":
		obj := newObj()
		obj.SetName(rp.Name)
		obj.SetNamespace(rp.Namespace)
		var opts metav1.DeleteOptions
		if r.body != "" {
			_ = json.Unmarshal([]byte(r.body), &opts)
		}
		opts.DryRun = append(opts.DryRun, dry...)
		err = c.Delete(ctx, obj, &client.DeleteOptions{Raw: &opts})
	default:
		sel, _ := labels.Parse(q.Get("labelSelector"))
		err = c.DeleteAllOf(ctx, newObj(), client.InNamespace(rp.Namespace), client.MatchingLabelsSelector{Selector: sel}, &client.DeleteAllOfOptions{DeleteOptions: client.DeleteOptions{DryRun: dry}})
	}
	if err != nil {
		var as apierrors.APIStatus
		if s, ok := err.(apierrors.APIStatus); ok {
			as = s
		}
		if as == nil {
			return answer{Code: http.StatusInternalServerError, Body: err.Error()}
		}
		st := as.Status()
		return answer{Code: int(st.Code), Body: map[string]any{"reason": string(st.Reason)}}
	}
	b, _ := json.Marshal(out)
	var v any
	_ = json.Unmarshal(b, &v)
	return answer{Code: code, Body: normalize(v)}
}

var patchTypes = map[string]types.PatchType{
	"merge": types.MergePatchType, "smp": types.StrategicMergePatchType, "jsonpatch": types.JSONPatchType, "apply": types.ApplyPatchType,
}

// fakeDiffers says how the fake's answer differs from the server's, by
// what the fake exposes: "" for alike, "status" when one fails and the
// other does not or the codes differ, "reason" for the same code with
// another reason, "identity" for an object without the uid and
// creationTimestamp the server set, "object" for any other difference in
// the object returned.
func fakeDiffers(live, fk answer, r row) string {
	live.Body = deepCopy(live.Body) // the server's answer is compared with the overlay's too
	if live.Code != fk.Code {
		return "status"
	}
	lb, _ := live.Body.(map[string]any)
	if live.Code >= 300 {
		fb, _ := fk.Body.(map[string]any)
		if lb["reason"] != fb["reason"] {
			return "reason"
		}
		return ""
	}
	if r.method == http.MethodDelete {
		return "" // a delete returns no object through client.Client
	}
	// What client.Client shows of a list: its items.
	if items, ok := lb["items"]; ok {
		fb, _ := fk.Body.(map[string]any)
		li, _ := items.([]any)
		fi, _ := fb["items"].([]any)
		for _, x := range li {
			withoutManagedFields(x)
		}
		for _, x := range fi {
			withoutManagedFields(x)
		}
		if diffAnswers(answer{Body: li}, answer{Body: fi}) == "" {
			return ""
		}
		for _, x := range li {
			withoutIdentity(x)
		}
		for _, x := range fi {
			withoutIdentity(x)
		}
		if diffAnswers(answer{Body: li}, answer{Body: fi}) == "" {
			return "identity"
		}
		return "object"
	}
	lo, fo := withoutManagedFields(live.Body), withoutManagedFields(fk.Body)
	if diffAnswers(answer{Body: lo}, answer{Body: fo}) == "" {
		return ""
	}
	if diffAnswers(answer{Body: withoutIdentity(lo)}, answer{Body: withoutIdentity(fo)}) == "" {
		return "identity"
	}
	return "object"
}

// withoutManagedFields drops what no typed client shows or few
// controllers read: apiVersion and kind (a typed client's decoder clears
// them) and managedFields (which the fake leaves out by default).
func withoutManagedFields(v any) any {
	if m, ok := v.(map[string]any); ok {
		delete(m, "apiVersion")
		delete(m, "kind")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "managedFields")
		}
	}
	return v
}

// withoutIdentity drops the uid and creationTimestamp the server sets on
// create and the fake client does not.
func withoutIdentity(v any) any {
	if m, ok := v.(map[string]any); ok {
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "uid")
			delete(md, "creationTimestamp")
		}
	}
	return v
}

// deepCopy returns a copy of v, a JSON value.
func deepCopy(v any) any {
	b, _ := json.Marshal(v)
	var c any
	_ = json.Unmarshal(b, &c)
	return c
}
