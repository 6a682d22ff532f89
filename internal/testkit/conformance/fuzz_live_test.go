package conformance_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
	"github.com/kwrec/kwrec/replay"
)

// The differential fuzzer: seeded random sequences of requests (creates,
// gets, lists with selectors and a page at a time, updates, the four
// patch types, server-side apply, deletes, dry runs, field validation,
// valid and invalid objects) over ConfigMaps, Secrets, the Widgets of a
// CRD with a structural schema, Deployments and their scale subresource,
// Pods and their eviction, Roles, RoleBindings and ClusterRoles, each
// sent to kube-apiserver and to the overlay of its recording, with the
// answers compared as the table's rows are. A watch of each of the seed's
// collections runs throughout the seed on both sides, and the events they
// saw are compared at its end. Each seed has a namespace of its own (and
// names its ClusterRoles after it), so that one difference does not
// spread to the others' requests; a seed that differs is shrunk (see
// [conformance.Shrink]) to the fewest requests that still differ, on
// fresh namespaces, and printed as rows for the table.
const (
	fuzzSeeds    = 50
	fuzzRequests = 200 // per seed
	// rvToken in a generated body stands for the object's current
	// resourceVersion on the side it is sent to (each side has its own).
	rvToken = "@RV@"
	// contToken in a list's query stands for the continue token of the
	// side's last list of the same collection ("" if it had none).
	contToken = "@CONT@"
)

// fuzzNames are the names generated requests use: valid ones, and some
// each kind refuses (a ConfigMap's name is a DNS subdomain).
var fuzzNames = []string{"a", "b", "c", "d.e", "f-1", "Upper", "x_y", ""}

// fuzzGen makes the requests of one seed.
type fuzzGen struct {
	r  *rand.Rand
	ns string // the seed's namespace
}

func (g *fuzzGen) pick(xs ...string) string { return xs[g.r.IntN(len(xs))] }

// name is mostly a valid name, sometimes one the server refuses.
func (g *fuzzGen) name() string {
	if g.r.IntN(10) == 0 {
		return g.pick(fuzzNames[5:]...)
	}
	return g.pick(fuzzNames[:5]...)
}

func (g *fuzzGen) labels() string {
	switch g.r.IntN(4) {
	case 0:
		return ""
	case 1:
		return `,"labels":{"app":"x"}`
	case 2:
		return `,"labels":{"app":"y","tier":"` + g.pick("gold", "silver") + `"}`
	}
	return `,"labels":{"bad label":"x"}`
}

func (g *fuzzGen) data() string {
	var kv []string
	for i := range g.r.IntN(3) + 1 {
		kv = append(kv, fmt.Sprintf(`"k%d":%q`, i+g.r.IntN(2), g.pick("1", "two", "")))
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// query adds the write options a client may send.
func (g *fuzzGen) query(write bool) string {
	var q []string
	if write && g.r.IntN(8) == 0 {
		q = append(q, "dryRun=All")
	}
	if write && g.r.IntN(6) == 0 {
		q = append(q, "fieldValidation="+g.pick("Strict", "Warn", "Ignore"))
	}
	if len(q) == 0 {
		return ""
	}
	return "?" + strings.Join(q, "&")
}

// next returns the seed's next request: a quarter over ConfigMaps, the
// rest over Secrets, Widgets, Deployments and their scale, Pods and their
// eviction, Roles, RoleBindings, ClusterRoles, and one in 40 lists a
// page at a time (a continued page is slow on the server: read from etcd).
func (g *fuzzGen) next() row {
	switch kind := g.r.IntN(20); {
	case kind < 4:
		return g.configMap()
	case kind < 6:
		return g.secret()
	case kind < 8:
		return g.widget()
	case kind < 11:
		return g.deployment()
	case kind < 13:
		return g.pod()
	case kind < 15:
		return g.role()
	case kind < 17:
		return g.roleBinding()
	case kind < 18:
		return g.clusterRole()
	case kind < 19 || g.r.IntN(2) == 0:
		return g.configMap()
	}
	return g.page()
}

func (g *fuzzGen) configMap() row {
	base := "/api/v1/namespaces/" + g.ns + "/configmaps"
	n := g.name()
	obj := func(extra string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q%s%s},"data":%s%s}`, n, g.labels(), extra, g.data(),
			map[bool]string{true: `,"bogus":1`}[g.r.IntN(8) == 0])
	}
	switch g.r.IntN(11) {
	case 0, 1:
		return row{name: "configmap: create", method: "POST", path: base + g.query(true), body: obj("")}
	case 2:
		return row{name: "configmap: get", method: "GET", path: base + "/" + n}
	case 3:
		q := g.pick("", "?labelSelector=app%3Dx", "?fieldSelector=metadata.name%3D"+n, "?labelSelector=tier+in+%28gold%29")
		return row{name: "configmap: list", method: "GET", path: base + q}
	case 4:
		rv := g.pick("", `,"resourceVersion":"`+rvToken+`"`, `,"resourceVersion":"1"`)
		return row{name: "configmap: update", method: "PUT", path: base + "/" + n + g.query(true), body: obj(rv)}
	case 5:
		return row{name: "configmap: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: fmt.Sprintf(`{"metadata":{"labels":{"app":%s}},"data":{"k0":%s}}`, g.pick(`"x"`, `null`, `"y"`), g.pick(`"9"`, `null`))}
	case 6:
		return row{name: "configmap: strategic merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "smp",
			body: fmt.Sprintf(`{"data":{"k1":%s},"immutable":%s}`, g.pick(`"s"`, `null`), g.pick("false", "false", "true"))}
	case 7:
		op := g.pick("add", "replace", "remove", "test")
		p := fmt.Sprintf(`{"op":%q,"path":"/data/k%d"`, op, g.r.IntN(2))
		if op != "remove" {
			p += `,"value":"` + g.pick("1", "two") + `"`
		}
		return row{name: "configmap: json patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "jsonpatch", body: "[" + p + "}]"}
	case 8:
		mgr := g.pick("m1", "m2")
		q := "?fieldManager=" + mgr + g.pick("", "&force=true")
		return row{name: "configmap: apply", method: "PATCH", path: base + "/" + n + q, ct: "apply",
			body: fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n  k%d: %s\n", n, g.r.IntN(2), g.pick(mgr, "same"))}
	case 9:
		body := g.pick("", `{"preconditions":{"resourceVersion":"1"}}`, `{"preconditions":{"resourceVersion":"`+rvToken+`"}}`, `{"dryRun":["All"]}`)
		return row{name: "configmap: delete", method: "DELETE", path: base + "/" + n, body: body}
	}
	return row{name: "configmap: delete collection", method: "DELETE", path: base + "?labelSelector=app%3Dy" + strings.ReplaceAll(g.query(true), "?", "&")}
}

func (g *fuzzGen) secret() row {
	base := "/api/v1/namespaces/" + g.ns + "/secrets"
	n := g.name()
	typ := g.pick("", `,"type":"Opaque"`, `,"type":"example.com/x"`)
	switch g.r.IntN(6) {
	case 0, 1:
		return row{name: "secret: create", method: "POST", path: base + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"stringData":{"s":%q}%s%s}`, n, g.pick("a", "b"), typ,
				g.pick("", `,"data":{"d":"dg=="}`, `,"immutable":true`))}
	case 2:
		return row{name: "secret: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "secret: update", method: "PUT", path: base + "/" + n + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":%q},"data":{"d":"eA=="}%s}`, n, typ)}
	case 4:
		return row{name: "secret: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: fmt.Sprintf(`{"stringData":{"s":%q}%s}`, g.pick("c", "d"), g.pick("", `,"type":"example.com/y"`, `,"immutable":true`))}
	}
	return row{name: "secret: delete", method: "DELETE", path: base + "/" + n}
}

func (g *fuzzGen) widget() row {
	base := "/apis/example.com/v1/namespaces/" + g.ns + "/widgets"
	n := g.name()
	spec := func() string {
		var f []string
		if g.r.IntN(6) != 0 {
			f = append(f, fmt.Sprintf(`"size":%d`, g.pick2(-1, 0, 1, 5, 99, 100, 150)))
		}
		if g.r.IntN(2) == 0 {
			f = append(f, `"color":"`+g.pick("blue", "red", "green", "purple")+`"`)
		}
		if g.r.IntN(3) == 0 {
			f = append(f, `"tags":[`+strings.Repeat(`"t",`, g.r.IntN(5))+`"u"]`)
		}
		if g.r.IntN(8) == 0 {
			f = append(f, `"bogus":true`)
		}
		return "{" + strings.Join(f, ",") + "}"
	}
	switch g.r.IntN(6) {
	case 0, 1:
		return row{name: "widget: create", method: "POST", path: base + g.query(true), body: widget(n, spec())}
	case 2:
		return row{name: "widget: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "widget: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge", body: `{"spec":` + spec() + `}`}
	case 4:
		return row{name: "widget: status patch", method: "PATCH", path: base + "/" + n + "/status", ct: "merge",
			body: `{"status":{"phase":"` + g.pick("Ready", "Gone") + `"},"spec":{"size":7}}`}
	}
	return row{name: "widget: delete", method: "DELETE", path: base + "/" + n}
}

func (g *fuzzGen) pick2(xs ...int) int { return xs[g.r.IntN(len(xs))] }

// deploymentBody is a Deployment, sometimes one the server refuses: a
// selector its template's labels do not match, negative replicas, a
// container without an image.
func (g *fuzzGen) deploymentBody(n, extra string) string {
	sel := g.pick("x", "y")
	tmpl := sel
	if g.r.IntN(6) == 0 {
		tmpl = g.pick("x", "y")
	}
	replicas := g.pick("", `"replicas":1,`, `"replicas":1,`, `"replicas":0,`, `"replicas":3,`, `"replicas":-1,`)
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q%s%s},"spec":{%s"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},"spec":{"containers":[{"name":"c","image":%q}]}}}}`,
		n, g.labels(), extra, replicas, sel, tmpl, g.pick("busybox", "busybox", "nginx:1", ""))
}

func (g *fuzzGen) deployment() row {
	base := "/apis/apps/v1/namespaces/" + g.ns + "/deployments"
	n := g.name()
	switch g.r.IntN(15) {
	case 0, 1:
		return row{name: "deployment: create", method: "POST", path: base + g.query(true), body: g.deploymentBody(n, "")}
	case 2:
		return row{name: "deployment: get", method: "GET", path: base + "/" + n}
	case 3:
		rv := g.pick("", `,"resourceVersion":"`+rvToken+`"`, `,"resourceVersion":"1"`)
		return row{name: "deployment: update", method: "PUT", path: base + "/" + n + g.query(true), body: g.deploymentBody(n, rv)}
	case 4:
		return row{name: "deployment: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: g.pick(`{"spec":{"replicas":`+g.pick("2", "-1", "0")+`}}`, `{"spec":{"selector":{"matchLabels":{"app":"z"}}}}`,
				`{"spec":{"template":{"metadata":{"labels":{"app":"`+g.pick("x", "y")+`"}}}}}`, `{"metadata":{"annotations":{"note":"`+g.pick("1", "2")+`"}}}`)}
	case 5:
		return row{name: "deployment: strategic merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "smp",
			body: `{"spec":{"template":{"spec":{"containers":[{"name":"` + g.pick("c", "d") + `","image":"` + g.pick("nginx:2", "") + `"}]}}}}`}
	case 6:
		mgr := g.pick("m1", "m2")
		return row{name: "deployment: apply", method: "PATCH", path: base + "/" + n + "?fieldManager=" + mgr + g.pick("", "&force=true"), ct: "apply",
			body: fmt.Sprintf("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n  selector:\n    matchLabels:\n      app: x\n  template:\n    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n      - name: c\n        image: %s\n",
				n, g.pick2(1, 2, -1), g.pick("busybox", mgr))}
	case 7, 8:
		return row{name: "scale: get", method: "GET", path: base + "/" + n + "/scale"}
	case 9:
		rv := g.pick("", `,"resourceVersion":"`+rvToken+`"`, `,"resourceVersion":"1"`)
		return row{name: "scale: update", method: "PUT", path: base + "/" + n + "/scale" + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":%q%s},"spec":{"replicas":%d}}`, g.pick(n, n, "zz"), rv, g.pick2(0, 2, 5, -1))}
	case 10:
		return row{name: "scale: merge patch", method: "PATCH", path: base + "/" + n + "/scale" + g.query(true), ct: "merge",
			body: fmt.Sprintf(`{"spec":{"replicas":%d}}`, g.pick2(0, 2, 4, -3))}
	case 11:
		return row{name: "scale: json patch", method: "PATCH", path: base + "/" + n + "/scale" + g.query(true), ct: "jsonpatch",
			body: fmt.Sprintf(`[{"op":"replace","path":"/spec/replicas","value":%d}]`, g.pick2(1, 6))}
	case 12:
		return row{name: "deployment: list", method: "GET", path: base + g.pick("", "?labelSelector=app%3Dx")}
	case 13:
		if g.r.IntN(2) == 0 {
			return row{name: "scale: apply", method: "PATCH", path: base + "/" + n + "/scale?fieldManager=" + g.pick("m1", "s1") + g.pick("", "&force=true"), ct: "apply",
				body: fmt.Sprintf("apiVersion: %s\nkind: Scale\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n", g.pick("autoscaling/v1", "autoscaling/v1", "apps/v1"), n, g.pick2(1, 3, 0, -1))}
		}
	}
	return row{name: "deployment: delete", method: "DELETE", path: base + "/" + n, body: g.pick("", `{"propagationPolicy":"Orphan"}`)}
}

func (g *fuzzGen) pod() row {
	base := "/api/v1/namespaces/" + g.ns + "/pods"
	n := g.name()
	switch g.r.IntN(9) {
	case 0, 1:
		return row{name: "pod: create", method: "POST", path: base + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q%s},"spec":{"containers":[{"name":%q,"image":%q}]}}`,
				n, g.labels(), g.pick("c", "c", "C"), g.pick("busybox", "busybox", ""))}
	case 2:
		return row{name: "pod: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "pod: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: `{"metadata":{"labels":{"app":` + g.pick(`"x"`, `"y"`, `null`) + `}}}`}
	case 4, 5:
		opts := g.pick("", "", `,"deleteOptions":{"dryRun":["All"]}`, `,"deleteOptions":{"preconditions":{"resourceVersion":"1"}}`, `,"deleteOptions":{"gracePeriodSeconds":0}`)
		return row{name: "eviction: evict", method: "POST", path: base + "/" + n + "/eviction",
			body: fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q}%s}`, g.pick(n, n, n, "zz"), opts)}
	case 6:
		return row{name: "pod: list", method: "GET", path: base + g.pick("", "?labelSelector=app%3Dx", "?fieldSelector=status.phase%3DPending")}
	}
	return row{name: "pod: delete", method: "DELETE", path: base + "/" + n, body: g.pick("", `{"gracePeriodSeconds":0}`)}
}

// rules are a Role's or ClusterRole's rules, sometimes ones the server
// refuses: no verbs, no apiGroups or resources, non-resource URLs (a
// Role's never, a ClusterRole's never with resources).
func (g *fuzzGen) rules() string {
	var rs []string
	for range g.r.IntN(3) {
		var f []string
		if g.r.IntN(6) != 0 {
			f = append(f, `"verbs":[`+g.pick(`"get"`, `"get","list"`, `"*"`)+`]`)
		}
		if g.r.IntN(5) != 0 {
			f = append(f, `"apiGroups":[`+g.pick(`""`, `"apps"`, `"","apps"`)+`]`)
		}
		if g.r.IntN(5) != 0 {
			f = append(f, `"resources":[`+g.pick(`"configmaps"`, `"pods","pods/log"`, `"*"`)+`]`)
		}
		if g.r.IntN(6) == 0 {
			f = append(f, `"resourceNames":["a"]`)
		}
		if g.r.IntN(6) == 0 {
			f = append(f, `"nonResourceURLs":["/healthz"]`)
		}
		rs = append(rs, "{"+strings.Join(f, ",")+"}")
	}
	return "[" + strings.Join(rs, ",") + "]"
}

func (g *fuzzGen) role() row {
	base := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + g.ns + "/roles"
	n := g.name()
	obj := func(extra string) string {
		return fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":%q%s%s},"rules":%s}`, n, g.labels(), extra, g.rules())
	}
	switch g.r.IntN(8) {
	case 0, 1, 2:
		return row{name: "role: create", method: "POST", path: base + g.query(true), body: obj("")}
	case 3:
		return row{name: "role: get", method: "GET", path: base + "/" + n}
	case 4:
		return row{name: "role: update", method: "PUT", path: base + "/" + n + g.query(true), body: obj(g.pick("", `,"resourceVersion":"`+rvToken+`"`))}
	case 5:
		return row{name: "role: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge", body: `{"rules":` + g.rules() + `}`}
	case 6:
		return row{name: "role: list", method: "GET", path: base}
	}
	return row{name: "role: delete", method: "DELETE", path: base + "/" + n}
}

// roleRef is a RoleBinding's roleRef, sometimes one the server refuses.
func (g *fuzzGen) roleRef() string {
	group := `"apiGroup":"rbac.authorization.k8s.io",`
	if g.r.IntN(6) == 0 {
		group = g.pick("", `"apiGroup":"example.com",`)
	}
	kind := "Role"
	if g.r.IntN(3) == 0 {
		kind = g.pick("ClusterRole", "Bogus")
	}
	return fmt.Sprintf(`{%s"kind":%q,"name":%q}`, group, kind, g.pick("a", "a", "b", "", "x/y"))
}

// subjects are a RoleBinding's subjects, sometimes ones the server refuses.
func (g *fuzzGen) subjects() string {
	var ss []string
	for range g.r.IntN(3) {
		ss = append(ss, g.pick(`{"kind":"User","name":"alice"}`, `{"kind":"User","name":"bob","apiGroup":"rbac.authorization.k8s.io"}`,
			`{"kind":"ServiceAccount","name":"default"}`, `{"kind":"ServiceAccount","name":"sa","namespace":"`+g.ns+`"}`,
			`{"kind":"Group","name":"devs"}`, `{"kind":"ServiceAccount","name":"Bad_Name"}`, `{"kind":"Group","name":"g","apiGroup":"wrong"}`,
			`{"kind":"Robot","name":"r"}`, `{"kind":"User","name":""}`, `{"kind":"ServiceAccount","name":"sa","apiGroup":"v1"}`))
	}
	return "[" + strings.Join(ss, ",") + "]"
}

func (g *fuzzGen) roleBinding() row {
	base := "/apis/rbac.authorization.k8s.io/v1/namespaces/" + g.ns + "/rolebindings"
	n := g.name()
	obj := func(extra string) string {
		return fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"RoleBinding","metadata":{"name":%q%s},"roleRef":%s,"subjects":%s}`, n, extra, g.roleRef(), g.subjects())
	}
	switch g.r.IntN(9) {
	case 0, 1, 2:
		return row{name: "rolebinding: create", method: "POST", path: base + g.query(true), body: obj("")}
	case 3:
		return row{name: "rolebinding: get", method: "GET", path: base + "/" + n}
	case 4:
		return row{name: "rolebinding: update", method: "PUT", path: base + "/" + n + g.query(true), body: obj(g.pick("", `,"resourceVersion":"`+rvToken+`"`))}
	case 5:
		return row{name: "rolebinding: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge",
			body: g.pick(`{"subjects":`+g.subjects()+`}`, `{"roleRef":{"name":"`+g.pick("a", "b")+`"}}`)}
	case 6:
		return row{name: "rolebinding: apply", method: "PATCH", path: base + "/" + n + "?fieldManager=" + g.pick("m1", "m2"), ct: "apply",
			body: fmt.Sprintf("apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: %s\nroleRef:\n  apiGroup: rbac.authorization.k8s.io\n  kind: Role\n  name: %s\nsubjects:\n- kind: User\n  name: %s\n",
				n, g.pick("a", "b"), g.pick("alice", "carol"))}
	case 7:
		return row{name: "rolebinding: list", method: "GET", path: base}
	}
	return row{name: "rolebinding: delete", method: "DELETE", path: base + "/" + n}
}

// clusterRole writes ClusterRoles named after the seed's namespace, as
// they are not in it.
func (g *fuzzGen) clusterRole() row {
	base := "/apis/rbac.authorization.k8s.io/v1/clusterroles"
	n := g.ns + "-" + g.pick("a", "b", "c")
	switch g.r.IntN(6) {
	case 0, 1:
		agg := g.pick("", "", "", `,"aggregationRule":{"clusterRoleSelectors":[]}`, `,"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"agg":"x"}}]}`,
			`,"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"bad key!":"x"}}]}`)
		return row{name: "clusterrole: create", method: "POST", path: base + g.query(true),
			body: fmt.Sprintf(`{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":%q},"rules":%s%s}`, n, g.rules(), agg)}
	case 2:
		return row{name: "clusterrole: get", method: "GET", path: base + "/" + n}
	case 3:
		return row{name: "clusterrole: merge patch", method: "PATCH", path: base + "/" + n + g.query(true), ct: "merge", body: `{"rules":` + g.rules() + `}`}
	case 4:
		return row{name: "clusterrole: list", method: "GET", path: base + "?fieldSelector=metadata.name%3D" + n}
	}
	return row{name: "clusterrole: delete", method: "DELETE", path: base + "/" + n}
}

// page lists one of the seed's collections a page at a time: a first page,
// or the page after the last list of the same collection, whose continue
// token (contToken) each side resolves to its own.
func (g *fuzzGen) page() row {
	base := g.pick("/api/v1/namespaces/"+g.ns+"/configmaps", "/api/v1/namespaces/"+g.ns+"/secrets",
		"/apis/apps/v1/namespaces/"+g.ns+"/deployments", "/apis/rbac.authorization.k8s.io/v1/namespaces/"+g.ns+"/roles",
		"/apis/example.com/v1/namespaces/"+g.ns+"/widgets")
	limit := fmt.Sprintf("?limit=%d", g.pick2(1, 2, 3))
	if g.r.IntN(2) == 0 {
		return row{name: "page: first", method: "GET", path: base + limit}
	}
	return row{name: "page: next", method: "GET", path: base + limit + "&continue=" + contToken}
}

// fuzzShape returns the number of seeds, of requests a seed, and the one
// seed to run (-1 for all): fuzzSeeds and fuzzRequests unless
// KWREC_FUZZ_SEEDS or KWREC_FUZZ_REQUESTS say otherwise (a longer run:
// KWREC_FUZZ_SEEDS=500, make fuzz-live); KWREC_FUZZ_SEED=N runs seed N
// alone, to look at its differences.
func fuzzShape(t *testing.T) (seeds, requests, only int) {
	seeds, requests, only = fuzzSeeds, fuzzRequests, -1
	for _, v := range []struct {
		env string
		n   *int
		min int
	}{{"KWREC_FUZZ_SEEDS", &seeds, 1}, {"KWREC_FUZZ_REQUESTS", &requests, 1}, {"KWREC_FUZZ_SEED", &only, 0}} {
		if s := os.Getenv(v.env); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil || n < v.min {
				t.Fatalf("%s=%q: want a number from %d", v.env, s, v.min)
			}
			*v.n = n
		}
	}
	if only >= seeds {
		t.Fatalf("KWREC_FUZZ_SEED=%d: want a seed below KWREC_FUZZ_SEEDS (%d)", only, seeds)
	}
	return seeds, requests, only
}

// fuzzShrinks is how many differing seeds a run shrinks, and
// fuzzShrinkRuns how many re-runs each shrink may take.
const (
	fuzzShrinks    = 2
	fuzzShrinkRuns = 150
)

// TestLiveDifferentialFuzz sends seeds of generated requests to
// kube-apiserver and to the overlay, compares every answer and what a
// watch of each of the seed's collections saw, and shrinks the sequence
// of a seed that differs to the fewest requests that still differ,
// printed as rows for conformance_live_test.go's table.
func TestLiveDifferentialFuzz(t *testing.T) {
	seeds, requests, only := fuzzShape(t)
	w := fuzzWorld(t, seeds)
	st := &fuzzStats{total: map[string]int{}, differ: map[string]int{}}
	fake := startFake(t, seeds)
	st.fakes = fake.calls
	var first []string
	ran, shrunk := 0, 0
	for s := range seeds {
		if only >= 0 && s != only {
			continue
		}
		ran++
		ns := fmt.Sprintf("fuzz-%d", s)
		g := &fuzzGen{r: rand.New(rand.NewPCG(uint64(s), 42)), ns: ns}
		rows := make([]row, requests)
		for i := range rows {
			rows[i] = g.next()
		}
		diffs := w.runSequence(t, ns, rows, st)
		for _, d := range diffs {
			if len(first) < 12 {
				first = append(first, fmt.Sprintf("seed %d %s", s, d.text))
			}
		}
		if len(diffs) > 0 && shrunk < fuzzShrinks {
			shrunk++
			t.Logf("seed %d shrunk to the requests that still differ (%s), as table rows:\n%s", s, diffs[0].name,
				goRows(w.shrinkSeed(t, s, rows, diffs[0]), ns, fmt.Sprintf("fuzz: seed %d", s)))
		}
	}
	st.log(t, ran)
	fake.log(t)
	for _, f := range first {
		t.Error(f)
	}
}

// fuzzWorld starts the control plane with the Widget CRD and a namespace
// a seed, and opens the overlay of its recording.
func fuzzWorld(t *testing.T, seeds int) *world {
	t.Helper()
	w := newWorld(t, controlplanetest.Start(t))
	if a := w.do(t, w.live, w.liveHost, row{method: "POST", path: "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body: widgetCRD}); a.Code != http.StatusCreated && a.Code != http.StatusConflict {
		t.Fatalf("creating the CRD: %d %v", a.Code, a.Body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	for w.do(t, w.live, w.liveHost, row{method: "GET", path: "/apis/example.com/v1/widgets"}).Code != http.StatusOK {
		select {
		case <-ctx.Done():
			t.Fatal("the CRD was not served within a minute")
		case <-time.After(100 * time.Millisecond):
		}
	}
	for s := range seeds {
		if a := w.do(t, w.live, w.liveHost, namespaceRow(fmt.Sprintf("fuzz-%d", s))); a.Code != http.StatusCreated {
			t.Fatalf("namespace fuzz-%d: %d %v", s, a.Code, a.Body)
		}
	}
	w.record(t, fuzzCollections, replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: true})
	return w
}

// fuzzCollections are recorded, across namespaces, before the seeds run.
var fuzzCollections = []string{"/api/v1/namespaces", "/api/v1/configmaps", "/api/v1/secrets", "/api/v1/pods",
	"/apis/apps/v1/deployments", "/apis/rbac.authorization.k8s.io/v1/roles", "/apis/rbac.authorization.k8s.io/v1/rolebindings",
	"/apis/rbac.authorization.k8s.io/v1/clusterroles",
	"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/apis/example.com/v1/widgets"}

func namespaceRow(name string) row {
	return row{name: "namespace", method: "POST", path: "/api/v1/namespaces", body: fmt.Sprintf(`{"metadata":{"name":%q}}`, name)}
}

// resolveRV returns r with rvToken replaced by the object's current
// resourceVersion on the side hc reaches, or by "1" (a stale version)
// when the object does not exist there or the path names none.
func (w *world) resolveRV(t *testing.T, hc *http.Client, host string, r row) row {
	t.Helper()
	if !strings.Contains(r.body, rvToken) {
		return r
	}
	path, _, _ := strings.Cut(r.path, "?")
	if strings.HasSuffix(path, "/") {
		// No object's path (a nameless request): no object's version. A
		// list's would do no better, as the overlay counts versions per
		// collection and the server across all.
		r.body = strings.ReplaceAll(r.body, rvToken, "1")
		return r
	}
	req, err := http.NewRequestWithContext(t.Context(), "GET", host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	json.NewDecoder(resp.Body).Decode(&obj)
	rv := obj.Metadata.ResourceVersion
	if rv == "" {
		rv = "1"
	}
	r.body = strings.ReplaceAll(r.body, rvToken, rv)
	return r
}

// logFake logs how many of the fake client's answers differ from the
// server's, by request and by how.
func logFake(t *testing.T, total map[string]int, differ map[string]map[string]int) {
	var b strings.Builder
	n, bad := 0, 0
	names := make([]string, 0, len(total))
	for k := range total {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		d := differ[k]
		m := d["status"] + d["reason"] + d["identity"] + d["object"]
		fmt.Fprintf(&b, "\n  %-34s %5d requests, %4d differ (status %d, reason %d, no uid or creationTimestamp %d, object %d)", k, total[k], m, d["status"], d["reason"], d["identity"], d["object"])
		n += total[k]
		bad += m
	}
	t.Logf("controller-runtime's fake client on the same requests (of the kinds it holds, no subresources or continued lists): %d requests, %d differ from kube-apiserver%s", n, bad, b.String())
}
