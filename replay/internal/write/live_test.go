package write_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// liveStep is one write of the live script.
type liveStep struct {
	name string
	req  write.Request
}

const liveUA = "kwrec-live/1.0"

func liveCM(verb, name, body, ct string, q url.Values) write.Request {
	if ct == "" {
		ct = "application/json"
	}
	return write.Request{Verb: verb, Version: "v1", Resource: "configmaps", Kind: "ConfigMap", Namespaced: true,
		Namespace: "default", Name: name, ContentType: ct, Body: []byte(body), Query: q, UserAgent: liveUA}
}

func liveDeploy(verb, sub, name, body, ct string) write.Request {
	if ct == "" {
		ct = "application/json"
	}
	return write.Request{Verb: verb, Subresource: sub, Group: "apps", Version: "v1", Resource: "deployments", Kind: "Deployment",
		Namespaced: true, StatusSubresource: true, Namespace: "default", Name: name, ContentType: ct, Body: []byte(body), UserAgent: liveUA}
}

// liveDeployment spells out every default the server sets, since the
// engine does no defaulting.
const liveDeployment = `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":1,
"selector":{"matchLabels":{"app":"d"}},"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%","maxSurge":"25%"}},
"revisionHistoryLimit":10,"progressDeadlineSeconds":600,
"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox","resources":{},
"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"Always"}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}}}}`

func TestLiveWritesMatchTheAPIServer(t *testing.T) {
	cp := controlplanetest.Start(t)
	cfg := rest.CopyConfig(cp.Config)
	cfg.UserAgent = liveUA
	hc, err := rest.HTTPClientFor(cfg)
	cfg.Host = strings.TrimSuffix(cfg.Host, "/")
	if err != nil {
		t.Fatal(err)
	}
	fm := func(m string) url.Values { return url.Values{"fieldManager": {m}} }
	steps := []liveStep{
		{"create a ConfigMap with generateName", liveCM("create", "", `{"metadata":{"generateName":"g-"},"data":{"a":"1"}}`, "", nil)},
		{"create the ConfigMap x", liveCM("create", "", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"},"data":{"a":"1"}}`, "", nil)},
		{"update x unconditionally", liveCM("update", "x", `{"metadata":{"name":"x"},"data":{"a":"2"}}`, "", nil)},
		{"update x with nothing changed", liveCM("update", "x", `{"metadata":{"name":"x"},"data":{"a":"2"}}`, "", nil)},
		{"update x with a stale resourceVersion", liveCM("update", "x", `{"metadata":{"name":"x","resourceVersion":"1"},"data":{"a":"3"}}`, "", nil)},
		{"merge patch x", liveCM("patch", "x", `{"data":{"b":"1"}}`, "application/merge-patch+json", nil)},
		{"strategic merge patch x", liveCM("patch", "x", `{"data":{"b":null,"c":"1"}}`, "application/strategic-merge-patch+json", nil)},
		{"JSON patch x", liveCM("patch", "x", `[{"op":"add","path":"/data/d","value":"1"}]`, "application/json-patch+json", nil)},
		{"JSON patch x at a missing path", liveCM("patch", "x", `[{"op":"replace","path":"/data/zz","value":"1"}]`, "application/json-patch+json", nil)},
		{"apply x as m1", liveCM("patch", "x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m1\n", "application/apply-patch+yaml", fm("m1"))},
		{"apply x as m2 over m1's field", liveCM("patch", "x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m2\n", "application/apply-patch+yaml", fm("m2"))},
		{"apply x as m2 with force", liveCM("patch", "x", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m2\n", "application/apply-patch+yaml", url.Values{"fieldManager": {"m2"}, "force": {"true"}})},
		{"apply a missing ConfigMap", liveCM("patch", "ap", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  k: v\n", "application/apply-patch+yaml", fm("m1"))},
		{"create x again", liveCM("create", "", `{"metadata":{"name":"x"}}`, "", nil)},
		{"create into another namespace", liveCM("create", "", `{"metadata":{"name":"n","namespace":"other"}}`, "", nil)},
		{"create without a name", liveCM("create", "", `{"data":{"a":"1"}}`, "", nil)},
		{"create malformed JSON", liveCM("create", "", `{"metadata":`, "", nil)},
		{"create with a wrong apiVersion", liveCM("create", "", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"v"}}`, "", nil)},
		{"patch with an unknown patch type", liveCM("patch", "x", `{}`, "application/foo", nil)},
		{"patch a missing ConfigMap", liveCM("patch", "nope", `{}`, "application/merge-patch+json", nil)},
		{"update a missing ConfigMap", liveCM("update", "nope", `{"metadata":{"name":"nope"}}`, "", nil)},
		{"create the Deployment d", liveDeploy("create", "", "", liveDeployment, "")},
		{"change d's spec", liveDeploy("patch", "", "d", `{"spec":{"replicas":2}}`, "application/merge-patch+json")},
		{"change d's labels only", liveDeploy("patch", "", "d", `{"metadata":{"labels":{"l":"1"}}}`, "application/merge-patch+json")},
		{"change d's status through the main resource", liveDeploy("patch", "", "d", `{"status":{"replicas":5}}`, "application/merge-patch+json")},
		{"change d's status", liveDeploy("patch", "status", "d", `{"status":{"replicas":1}}`, "application/merge-patch+json")},
		{"create f with a finalizer", liveCM("create", "", `{"metadata":{"name":"f","finalizers":["example.com/f"]}}`, "", nil)},
		{"delete f", liveCM("delete", "f", "", "", nil)},
		{"delete f again", liveCM("delete", "f", "", "", nil)},
		{"remove f's finalizer", liveCM("patch", "f", `{"metadata":{"finalizers":null}}`, "application/merge-patch+json", nil)},
		{"delete x with a stale precondition", liveCM("delete", "x", `{"preconditions":{"resourceVersion":"1"}}`, "", nil)},
		{"delete x", liveCM("delete", "x", "", "", nil)},
		{"delete x again", liveCM("delete", "x", "", "", nil)},
	}
	var e write.Engine
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			cur := liveGet(t, hc, cfg.Host, s.req)
			code, body := liveDo(t, hc, cfg.Host, s.req)
			res, err := e.Apply(s.req, cur, liveStamp(t, s.req, cur, code, body))
			if code >= 300 {
				var se *apierrors.StatusError
				if err == nil {
					t.Fatalf("server answered %d %s; engine succeeded with %d %s", code, body, res.Code, res.Body)
				}
				if !asStatus(err, &se) {
					t.Fatalf("engine error %T is not a *StatusError", err)
				}
				var want struct {
					Code    int32
					Reason  string
					Message string
				}
				_ = json.Unmarshal(body, &want)
				got := struct {
					Code    int32
					Reason  string
					Message string
				}{se.ErrStatus.Code, string(se.ErrStatus.Reason), se.ErrStatus.Message}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("status (-server +engine):\n%s", diff)
				}
				return
			}
			if err != nil {
				t.Fatalf("server answered %d %s; engine failed: %v", code, body, err)
			}
			if res.Code != code {
				t.Errorf("code: server %d, engine %d", code, res.Code)
			}
			if diff := cmp.Diff(liveNormalize(t, body), liveNormalize(t, res.Body)); diff != "" {
				t.Errorf("body (-server +engine):\n%s", diff)
			}
			if cur != nil && s.req.Verb != write.VerbDelete && res.Event != write.EventDeleted {
				unchanged := liveRV(body) == liveRV(cur)
				if unchanged != (res.Event == "") {
					t.Errorf("server unchanged=%v, engine event %q", unchanged, res.Event)
				}
			}
		})
	}
}

func asStatus(err error, se **apierrors.StatusError) bool {
	s, ok := err.(*apierrors.StatusError)
	*se = s
	return ok
}

func livePath(r write.Request, name string) string {
	p := "/api/v1"
	if r.Group != "" {
		p = "/apis/" + r.Group + "/" + r.Version
	}
	p += "/namespaces/" + r.Namespace + "/" + r.Resource
	if name != "" {
		p += "/" + name
	}
	return p
}

func liveGet(t *testing.T, hc *http.Client, host string, r write.Request) []byte {
	t.Helper()
	if r.Name == "" {
		// A create: the current object is the one named in the body.
		var m struct {
			Metadata struct{ Name string }
		}
		_ = json.Unmarshal(r.Body, &m)
		if m.Metadata.Name == "" {
			return nil
		}
		r.Name = m.Metadata.Name
	}
	resp, err := hc.Get(host + livePath(r, r.Name))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode == http.StatusNotFound {
		return nil
	}
	return b
}

func liveDo(t *testing.T, hc *http.Client, host string, r write.Request) (int, []byte) {
	t.Helper()
	method := map[string]string{"create": "POST", "update": "PUT", "patch": "PATCH", "delete": "DELETE"}[r.Verb]
	u := host + livePath(r, r.Name)
	if r.Subresource != "" {
		u += "/" + r.Subresource
	}
	if len(r.Query) > 0 {
		u += "?" + r.Query.Encode()
	}
	req, err := http.NewRequest(method, u, bytes.NewReader(r.Body))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Body) > 0 {
		req.Header.Set("Content-Type", r.ContentType)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// liveStamp takes what the server chose (resourceVersion, uid, generated
// name suffix, time) from its answer.
func liveStamp(t *testing.T, r write.Request, cur []byte, code int, body []byte) write.Stamp {
	var m struct {
		Metadata struct {
			Name, GenerateName, UID, ResourceVersion string
			CreationTimestamp                        time.Time
		}
	}
	_ = json.Unmarshal(body, &m)
	st := write.Stamp{RV: m.Metadata.ResourceVersion, UID: m.Metadata.UID, Now: time.Now().UTC().Truncate(time.Second)}
	if m.Metadata.GenerateName != "" {
		st.Suffix = strings.TrimPrefix(m.Metadata.Name, m.Metadata.GenerateName)
	}
	if r.Verb == write.VerbCreate || cur == nil {
		st.Now = m.Metadata.CreationTimestamp
	}
	return st
}

func liveRV(obj []byte) string {
	var m struct {
		Metadata struct{ ResourceVersion string }
	}
	_ = json.Unmarshal(obj, &m)
	return m.Metadata.ResourceVersion
}

// liveNormalize drops the values only the wall clock decides.
func liveNormalize(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("not JSON: %s", b)
	}
	md, _ := m["metadata"].(map[string]any)
	if md != nil {
		delete(md, "deletionTimestamp")
		if mf, ok := md["managedFields"].([]any); ok {
			for _, e := range mf {
				if em, ok := e.(map[string]any); ok {
					delete(em, "time")
				}
			}
		}
	}
	return m
}
