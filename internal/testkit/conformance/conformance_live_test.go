package conformance_test

import (
	"encoding/json"
	"fmt"
	"testing"
)

// The recorded world: made on the server before the recording, so the
// overlay starts where the server is.
const (
	ns   = "/api/v1/namespaces/conf"
	ns2  = "/api/v1/namespaces/conf2"
	apps = "/apis/apps/v1/namespaces/conf"
	rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/conf"
)

func seedRows(t *testing.T) []row {
	csr := func(name string) string {
		req, _ := json.Marshal(csrPEM(t, name))
		return fmt.Sprintf(`{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":%q},"spec":{"request":%s,"signerName":"example.com/signer","usages":["digital signature"]}}`, name, req)
	}
	return []row{
		{name: "namespace conf", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"conf"}}`},
		{name: "namespace conf2", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"conf2"}}`},
		{name: "cm a", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"name":"a","labels":{"app":"x"}},"data":{"k":"1"}}`},
		{name: "cm b", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"name":"b","labels":{"app":"y"}},"data":{"k":"2"}}`},
		{name: "cm c", method: "POST", path: ns2 + "/configmaps", body: `{"metadata":{"name":"c","labels":{"app":"x"}},"data":{"k":"3"}}`},
		{name: "deployment web", method: "POST", path: apps + "/deployments", body: deployment("web", 1)},
		{name: "rc rc", method: "POST", path: ns + "/replicationcontrollers", body: `{"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"app":"rc"},"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "pod solo", method: "POST", path: ns + "/pods", body: pod("solo")},
		{name: "pod solo2", method: "POST", path: ns + "/pods", body: pod("solo2")},
		{name: "pod solo3", method: "POST", path: ns + "/pods", body: pod("solo3")},
		{name: "pod solo4", method: "POST", path: ns + "/pods", body: pod("solo4")},
		{name: "pod onnode", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"onnode"},"spec":{"nodeName":"node-1","hostNetwork":true,"containers":[{"name":"c","image":"busybox"}]}}`},
		{name: "secret tls", method: "POST", path: ns + "/secrets", body: `{"metadata":{"name":"tls"},"type":"example.com/custom"}`},
		{name: "secret opaque", method: "POST", path: ns + "/secrets", body: `{"metadata":{"name":"plain"},"data":{"k":"dg=="}}`},
		{name: "serviceaccount sa", method: "POST", path: ns + "/serviceaccounts", body: `{"metadata":{"name":"sa"}}`},
		{name: "csr csr1", method: "POST", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", body: csr("csr1")},
		{name: "csr csr2", method: "POST", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", body: csr("csr2")},
	}
}

// recordedCollections are listed across all namespaces into the cassette.
// StatefulSets are not: writes to a resource the recording never saw.
var recordedCollections = []string{
	"/api/v1/namespaces", "/api/v1/configmaps", "/apis/apps/v1/deployments", "/api/v1/replicationcontrollers",
	"/api/v1/pods", "/api/v1/serviceaccounts", "/api/v1/secrets", "/apis/certificates.k8s.io/v1/certificatesigningrequests",
}

func deployment(name string, replicas int) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"labels":{"app":%q}},"spec":{"replicas":%d,"selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, name, name, replicas, name, name)
}

func statefulset(name string) string {
	return fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":%q,"labels":{"app":"ss"}},"spec":{"replicas":1,"serviceName":"s","selector":{"matchLabels":{"app":%q}},"template":{"metadata":{"labels":{"app":%q}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, name, name, name)
}

func pod(name string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, name)
}

func TestLiveOverlayAnswersAsTheAPIServer(t *testing.T) {
	w := startWorld(t, seedRows(t), recordedCollections)
	cm := func(name, extra string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q%s},"data":{"a":"1"}}`, name, extra)
	}
	w.run(t, []row{
		// Reads of the recorded world.
		{name: "read: get a ConfigMap", method: "GET", path: ns + "/configmaps/a"},
		{name: "read: get a ConfigMap as protobuf", method: "GET", path: ns + "/configmaps/a", accept: "pb"},
		{name: "read: get a missing ConfigMap", method: "GET", path: ns + "/configmaps/zz"},
		{name: "read: list a namespace's ConfigMaps", method: "GET", path: ns + "/configmaps"},
		{name: "read: list ConfigMaps by label across namespaces", method: "GET", path: "/api/v1/configmaps?labelSelector=app%3Dx"},
		{name: "read: list ConfigMaps by field", method: "GET", path: ns + "/configmaps?fieldSelector=metadata.name%3Db"},
		{name: "read: list ConfigMaps as protobuf", method: "GET", path: ns + "/configmaps", accept: "pb"},
		{name: "read: get the Deployment", method: "GET", path: apps + "/deployments/web"},

		// Creates, updates, patches and deletes of a ConfigMap, in JSON.
		{name: "write: create x", method: "POST", path: ns + "/configmaps", body: cm("x", "")},
		{name: "write: create x again", method: "POST", path: ns + "/configmaps", body: cm("x", "")},
		{name: "write: create with generateName", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"generateName":"g-"}}`},
		{name: "write: create without a name", method: "POST", path: ns + "/configmaps", body: `{"data":{"a":"1"}}`},
		{name: "write: create malformed JSON", method: "POST", path: ns + "/configmaps", body: `{"metadata":`},
		{name: "write: create with a wrong apiVersion", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"v"}}`},
		{name: "write: create with a resourceVersion", method: "POST", path: ns + "/configmaps", body: cm("rv", `,"resourceVersion":"5"`)},
		{name: "write: create into a namespace the body contradicts", method: "POST", path: ns + "/configmaps", body: cm("n", `,"namespace":"conf2"`)},
		{name: "write: update x", method: "PUT", path: ns + "/configmaps/x", body: `{"metadata":{"name":"x"},"data":{"a":"2"}}`},
		{name: "write: update x unchanged", method: "PUT", path: ns + "/configmaps/x", body: `{"metadata":{"name":"x"},"data":{"a":"2"}}`},
		{name: "write: update x with a stale resourceVersion", method: "PUT", path: ns + "/configmaps/x", body: `{"metadata":{"name":"x","resourceVersion":"1"},"data":{"a":"3"}}`},
		{name: "write: update with a name the path contradicts", method: "PUT", path: ns + "/configmaps/x", body: `{"metadata":{"name":"y"},"data":{"a":"3"}}`},
		{name: "write: update a missing ConfigMap", method: "PUT", path: ns + "/configmaps/nope", body: `{"metadata":{"name":"nope"}}`},
		{name: "write: merge patch x", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":{"b":"1"}}`, ct: "merge"},
		{name: "write: strategic merge patch x", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":{"b":null,"c":"1"}}`, ct: "smp"},
		{name: "write: JSON patch x", method: "PATCH", path: ns + "/configmaps/x", body: `[{"op":"add","path":"/data/d","value":"1"}]`, ct: "jsonpatch"},
		{name: "write: JSON patch x at a missing path", method: "PATCH", path: ns + "/configmaps/x", body: `[{"op":"replace","path":"/data/zz","value":"1"}]`, ct: "jsonpatch"},
		{name: "write: JSON patch x with a failing test", method: "PATCH", path: ns + "/configmaps/x", body: `[{"op":"test","path":"/data/a","value":"9"}]`, ct: "jsonpatch"},
		{name: "write: merge patch x with a string where a map goes", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":"x"}`, ct: "merge"},
		{name: "write: strategic merge patch x with a string where a map goes", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":"x"}`, ct: "smp"},
		{name: "write: merge patch x with a number where a string goes", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":{"a":1}}`, ct: "merge"},
		{name: "write: strategic merge patch x with a number where a string goes", method: "PATCH", path: ns + "/configmaps/x", body: `{"data":{"a":1}}`, ct: "smp"},
		{name: "write: patch with an unknown patch type", method: "PATCH", path: ns + "/configmaps/x", body: `{}`, ct: "apply"},
		{name: "write: patch a missing ConfigMap", method: "PATCH", path: ns + "/configmaps/nope", body: `{}`, ct: "merge"},
		{name: "write: apply x as m1", method: "PATCH", path: ns + "/configmaps/x?fieldManager=m1", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m1\n", ct: "apply"},
		{name: "write: apply x as m2 over m1's field", method: "PATCH", path: ns + "/configmaps/x?fieldManager=m2", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m2\n", ct: "apply"},
		{name: "write: apply x as m2 with force", method: "PATCH", path: ns + "/configmaps/x?fieldManager=m2&force=true", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\ndata:\n  a: m2\n", ct: "apply"},
		{name: "write: apply a missing ConfigMap", method: "PATCH", path: ns + "/configmaps/ap?fieldManager=m1", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\ndata:\n  k: v\n", ct: "apply"},
		{name: "write: apply without a field manager", method: "PATCH", path: ns + "/configmaps/ap", body: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ap\n", ct: "apply"},
		{name: "write: create f with a finalizer", method: "POST", path: ns + "/configmaps", body: cm("f", `,"finalizers":["example.com/f"]`)},
		{name: "write: delete f", method: "DELETE", path: ns + "/configmaps/f"},
		{name: "write: delete f again", method: "DELETE", path: ns + "/configmaps/f"},
		{name: "write: update f while it is deleted", method: "PATCH", path: ns + "/configmaps/f", body: `{"data":{"z":"1"}}`, ct: "merge"},
		{name: "write: remove f's finalizer", method: "PATCH", path: ns + "/configmaps/f", body: `{"metadata":{"finalizers":null}}`, ct: "merge"},
		{name: "write: get f after its finalizer went", method: "GET", path: ns + "/configmaps/f"},
		{name: "write: delete x with a stale precondition", method: "DELETE", path: ns + "/configmaps/x", body: `{"preconditions":{"resourceVersion":"1"}}`},
		{name: "write: delete x with a wrong UID precondition", method: "DELETE", path: ns + "/configmaps/x", body: `{"preconditions":{"uid":"00000000-0000-0000-0000-000000000000"}}`},
		{name: "write: delete x", method: "DELETE", path: ns + "/configmaps/x"},
		{name: "write: delete x again", method: "DELETE", path: ns + "/configmaps/x"},
		{name: "write: delete a recorded ConfigMap", method: "DELETE", path: ns + "/configmaps/b"},
		{name: "write: list after the writes", method: "GET", path: ns + "/configmaps"},

		// The same through protobuf, as a typed client sends it.
		{name: "protobuf: create p", method: "POST", path: ns + "/configmaps", body: cm("p", ""), ct: "pb", accept: "pb"},
		{name: "protobuf: create p again", method: "POST", path: ns + "/configmaps", body: cm("p", ""), ct: "pb", accept: "pb"},
		{name: "protobuf: update p", method: "PUT", path: ns + "/configmaps/p", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p"},"data":{"a":"2"}}`, ct: "pb", accept: "pb"},
		{name: "protobuf: get p", method: "GET", path: ns + "/configmaps/p", accept: "pb"},
		{name: "protobuf: merge patch p", method: "PATCH", path: ns + "/configmaps/p", body: `{"data":{"b":"1"}}`, ct: "merge", accept: "pb"},
		{name: "protobuf: delete p with DeleteOptions", method: "DELETE", path: ns + "/configmaps/p", body: `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0,"propagationPolicy":"Foreground"}`, ct: "pb", accept: "pb"},
		{name: "protobuf: delete p again", method: "DELETE", path: ns + "/configmaps/p", body: `{"apiVersion":"v1","kind":"DeleteOptions"}`, ct: "pb", accept: "pb"},
		{name: "protobuf: create a Deployment", method: "POST", path: apps + "/deployments", body: deployment("pbd", 2), ct: "pb", accept: "pb"},
		{name: "protobuf: delete a Deployment with apps DeleteOptions", method: "DELETE", path: apps + "/deployments/pbd", body: `{"apiVersion":"apps/v1","kind":"DeleteOptions","propagationPolicy":"Background"}`, ct: "pb", accept: "pb"},
		{name: "protobuf: delete with a body of the wrong kind", method: "DELETE", path: ns + "/configmaps/a", body: cm("a", ""), ct: "pb", accept: "pb"},
		{name: "protobuf: JSON DeleteOptions", method: "DELETE", path: ns + "/configmaps/g", body: `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}`},

		// Workloads: the server's defaults, in JSON and protobuf.
		{name: "workload: create a Deployment", method: "POST", path: apps + "/deployments", body: deployment("d1", 1)},
		{name: "workload: create a Deployment with its own strategy", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d2"},"spec":{"strategy":{"type":"Recreate"},"selector":{"matchLabels":{"app":"d2"}},"template":{"metadata":{"labels":{"app":"d2"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}],"readinessProbe":{"httpGet":{"port":80}},"env":[{"name":"N","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}]}],"volumes":[{"name":"v"},{"name":"cm","configMap":{"name":"a"}}]}}}}`},
		{name: "workload: update a Deployment's image", method: "PUT", path: apps + "/deployments/d1", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d1","labels":{"app":"d1"}},"spec":{"selector":{"matchLabels":{"app":"d1"}},"template":{"metadata":{"labels":{"app":"d1"}},"spec":{"containers":[{"name":"c","image":"busybox:1.36"}]}}}}`},
		{name: "workload: patch a Deployment's replicas", method: "PATCH", path: apps + "/deployments/d1", body: `{"spec":{"replicas":3}}`, ct: "merge"},
		{name: "workload: strategic merge patch a Deployment's containers", method: "PATCH", path: apps + "/deployments/d1", body: `{"spec":{"template":{"spec":{"containers":[{"name":"side","image":"busybox"}]}}}}`, ct: "smp"},
		{name: "workload: apply a Deployment", method: "PATCH", path: apps + "/deployments/d3?fieldManager=ssa", body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d3\nspec:\n  selector:\n    matchLabels: {app: d3}\n  template:\n    metadata:\n      labels: {app: d3}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n", ct: "apply"},
		{name: "workload: apply a Deployment again with more replicas", method: "PATCH", path: apps + "/deployments/d3?fieldManager=ssa", body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: d3\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: d3}\n  template:\n    metadata:\n      labels: {app: d3}\n    spec:\n      containers:\n      - name: c\n        image: busybox\n", ct: "apply"},
		{name: "workload: create a ReplicaSet", method: "POST", path: apps + "/replicasets", body: `{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs1"},"spec":{"selector":{"matchLabels":{"app":"rs1"}},"template":{"metadata":{"labels":{"app":"rs1"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "workload: create a DaemonSet", method: "POST", path: apps + "/daemonsets", body: `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds1"},"spec":{"selector":{"matchLabels":{"app":"ds1"}},"template":{"metadata":{"labels":{"app":"ds1"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "workload: create a StatefulSet", method: "POST", path: apps + "/statefulsets", body: statefulset("ss1")},
		{name: "workload: create a Pod", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p1"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"100m"}}}]}}`},
		{name: "workload: create a Pod as protobuf", method: "POST", path: ns + "/pods", body: pod("p2"), ct: "pb", accept: "pb"},
		{name: "workload: create a ReplicationController", method: "POST", path: ns + "/replicationcontrollers", body: `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc2"},"spec":{"template":{"metadata":{"labels":{"app":"rc2"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "workload: create a Job", method: "POST", path: "/apis/batch/v1/namespaces/conf/jobs", body: `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j1"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "workload: create a CronJob", method: "POST", path: "/apis/batch/v1/namespaces/conf/cronjobs", body: `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj1"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`},

		// Views across namespaces, of a resource recorded (Deployments) and
		// of one never recorded (StatefulSets, DaemonSets).
		{name: "namespaces: create a StatefulSet in another namespace", method: "POST", path: "/apis/apps/v1/namespaces/conf2/statefulsets", body: statefulset("ss2"), ct: "pb", accept: "pb"},
		{name: "namespaces: list StatefulSets across namespaces", method: "GET", path: "/apis/apps/v1/statefulsets"},
		{name: "namespaces: list StatefulSets across namespaces as protobuf", method: "GET", path: "/apis/apps/v1/statefulsets", accept: "pb"},
		{name: "namespaces: list StatefulSets across namespaces as metadata", method: "GET", path: "/apis/apps/v1/statefulsets", accept: "list"},
		{name: "namespaces: list StatefulSets across namespaces by label", method: "GET", path: "/apis/apps/v1/statefulsets?labelSelector=app%3Dss"},
		{name: "namespaces: list StatefulSets across namespaces a page at a time", method: "GET", path: "/apis/apps/v1/statefulsets?limit=1"},
		{name: "namespaces: list StatefulSets in one namespace", method: "GET", path: "/apis/apps/v1/namespaces/conf2/statefulsets"},
		{name: "namespaces: list StatefulSets in a namespace with none", method: "GET", path: "/apis/apps/v1/namespaces/default/statefulsets"},
		{name: "namespaces: get a StatefulSet", method: "GET", path: "/apis/apps/v1/namespaces/conf2/statefulsets/ss2"},
		{name: "namespaces: watch StatefulSets across namespaces", method: "GET", path: "/apis/apps/v1/statefulsets?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{name: "namespaces: watch StatefulSets in one namespace", method: "GET", path: "/apis/apps/v1/namespaces/conf/statefulsets?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{name: "namespaces: list DaemonSets across namespaces", method: "GET", path: "/apis/apps/v1/daemonsets"},
		{name: "namespaces: list Deployments across namespaces", method: "GET", path: "/apis/apps/v1/deployments"},
		{name: "namespaces: list Deployments across namespaces by label", method: "GET", path: "/apis/apps/v1/deployments?labelSelector=app%3Dd1"},
		{name: "namespaces: list Deployments across namespaces as metadata", method: "GET", path: "/apis/apps/v1/deployments", accept: "list"},
		{name: "namespaces: watch Deployments across namespaces", method: "GET", path: "/apis/apps/v1/deployments?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{name: "namespaces: list Jobs across namespaces", method: "GET", path: "/apis/batch/v1/jobs"},

		// Metadata-only views.
		{name: "metadata: get a ConfigMap", method: "GET", path: ns + "/configmaps/a", accept: "meta"},
		{name: "metadata: get a ConfigMap as protobuf", method: "GET", path: ns + "/configmaps/a", accept: "metapb"},
		{name: "metadata: get a written Deployment", method: "GET", path: apps + "/deployments/d1", accept: "meta"},
		{name: "metadata: list ConfigMaps", method: "GET", path: ns + "/configmaps", accept: "list"},
		{name: "metadata: watch ConfigMaps", method: "GET", path: ns + "/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", accept: "meta"},
		{name: "metadata: watch Deployments", method: "GET", path: apps + "/deployments?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", accept: "meta"},
		{name: "metadata: patch a ConfigMap's annotations", method: "PATCH", path: ns + "/configmaps/a", body: `{"metadata":{"annotations":{"note":"1"}}}`, ct: "merge", accept: "meta"},

		// Subresources.
		{name: "scale: get a Deployment's scale", method: "GET", path: apps + "/deployments/web/scale"},
		{name: "scale: update a Deployment's scale", method: "PUT", path: apps + "/deployments/web/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"conf"},"spec":{"replicas":3}}`},
		{name: "scale: the Deployment after its scale changed", method: "GET", path: apps + "/deployments/web"},
		{name: "scale: update a scale with a stale resourceVersion", method: "PUT", path: apps + "/deployments/web/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":4}}`},
		{name: "scale: merge patch a Deployment's scale", method: "PATCH", path: apps + "/deployments/web/scale", body: `{"spec":{"replicas":5}}`, ct: "merge"},
		{name: "scale: JSON patch a Deployment's scale", method: "PATCH", path: apps + "/deployments/web/scale", body: `[{"op":"replace","path":"/spec/replicas","value":6}]`, ct: "jsonpatch"},
		{name: "scale: strategic merge patch a Deployment's scale", method: "PATCH", path: apps + "/deployments/web/scale", body: `{"spec":{"replicas":2}}`, ct: "smp"},
		{name: "scale: patch a scale to what it is", method: "PATCH", path: apps + "/deployments/web/scale", body: `{"spec":{"replicas":2}}`, ct: "merge"},
		{name: "scale: update a scale as protobuf", method: "PUT", path: apps + "/deployments/web/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"conf"},"spec":{"replicas":1}}`, ct: "pb", accept: "pb"},
		{name: "scale: get a ReplicationController's scale", method: "GET", path: ns + "/replicationcontrollers/rc/scale"},
		{name: "scale: patch a ReplicationController's scale", method: "PATCH", path: ns + "/replicationcontrollers/rc/scale", body: `{"spec":{"replicas":2}}`, ct: "merge"},
		{name: "scale: get a StatefulSet's scale", method: "GET", path: apps + "/statefulsets/ss1/scale"},
		{name: "scale: patch a StatefulSet's scale", method: "PATCH", path: apps + "/statefulsets/ss1/scale", body: `{"spec":{"replicas":3}}`, ct: "merge"},
		{name: "scale: patch a ReplicaSet's scale", method: "PATCH", path: apps + "/replicasets/rs1/scale", body: `{"spec":{"replicas":0}}`, ct: "merge"},
		// A status write keeps the metadata it sends, but what each
		// kind's status strategy resets (a Deployment's labels).
		{name: "status: a Deployment's status patch with metadata", method: "PATCH", path: apps + "/deployments/web/status",
			body: `{"metadata":{"annotations":{"note":"by-status"},"labels":{"l":"by-status"}},"status":{"observedGeneration":7}}`, ct: "merge"},
		{name: "status: a Deployment's status patch as the metadata-only client sends it", method: "PATCH", path: apps + "/deployments/web/status",
			body: `{"metadata":{"annotations":{"some-new-annotation":"some-new-value"}}}`, ct: "merge", accept: "meta"},
		{name: "status: the Deployment after", method: "GET", path: apps + "/deployments/web"},
		{name: "scale: get a missing Deployment's scale", method: "GET", path: apps + "/deployments/nope/scale"},
		{name: "scale: patch a missing Deployment's scale", method: "PATCH", path: apps + "/deployments/nope/scale", body: `{"spec":{"replicas":1}}`, ct: "merge"},
		{name: "eviction: evict a Pod", method: "POST", path: ns + "/pods/solo/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"solo","namespace":"conf"}}`},
		{name: "eviction: the evicted Pod is gone", method: "GET", path: ns + "/pods/solo"},
		{name: "eviction: evict a missing Pod", method: "POST", path: ns + "/pods/solo/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"solo","namespace":"conf"}}`},
		{name: "eviction: evict a Pod as protobuf with options", method: "POST", path: ns + "/pods/p2/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p2","namespace":"conf"},"deleteOptions":{"gracePeriodSeconds":0}}`, ct: "pb", accept: "pb"},
		{name: "binding: bind a Pod to a node", method: "POST", path: ns + "/pods/solo2/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"solo2"},"target":{"kind":"Node","name":"node-1"}}`},
		{name: "binding: the bound Pod", method: "GET", path: ns + "/pods/solo2"},
		{name: "binding: bind a bound Pod again", method: "POST", path: ns + "/pods/solo2/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"solo2"},"target":{"kind":"Node","name":"node-2"}}`},
		{name: "binding: bind a missing Pod", method: "POST", path: ns + "/pods/nope/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"nope"},"target":{"kind":"Node","name":"node-1"}}`},
		{name: "token: request a ServiceAccount token", method: "POST", path: ns + "/serviceaccounts/sa/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["api"],"expirationSeconds":3600}}`},
		{name: "token: request a token of the default lifetime", method: "POST", path: ns + "/serviceaccounts/sa/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["api"]}}`, ct: "pb"},
		{name: "token: request a missing ServiceAccount's token", method: "POST", path: ns + "/serviceaccounts/nope/token", body: `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`},
		{name: "approval: approve a CSR", method: "PUT", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr1/approval", body: `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"csr1"},"status":{"conditions":[{"type":"Approved","status":"True","reason":"KwrecTest","message":"approved by the test","lastUpdateTime":"2026-01-01T00:00:00Z"}]}}`},
		{name: "approval: the approved CSR", method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr1"},

		{name: "scale: get a Deployment's scale as protobuf", method: "GET", path: apps + "/deployments/web/scale", accept: "pb"},
		{name: "binding: bind a Pod as protobuf", method: "POST", path: ns + "/pods/p1/binding", body: `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p1"},"target":{"kind":"Node","name":"node-1"}}`, ct: "pb", accept: "pb"},
		{name: "binding: the Pod bound through protobuf", method: "GET", path: ns + "/pods/p1", accept: "pb"},

		// Field selectors beyond metadata (kubectl drain lists a node's
		// Pods so), on recorded and written objects.
		{name: "fields: list Pods on a node", method: "GET", path: "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-1"},
		{name: "fields: list Pods on a node and pending", method: "GET", path: ns + "/pods?fieldSelector=spec.nodeName%3Dnode-1,status.phase%3DPending"},
		{name: "fields: list Pods not scheduled", method: "GET", path: ns + "/pods?fieldSelector=spec.nodeName%3D", accept: "pb"},
		{name: "fields: list Pods off a node", method: "GET", path: ns + "/pods?fieldSelector=spec.nodeName!%3Dnode-1"},
		{name: "fields: list Pods on the host network", method: "GET", path: ns + "/pods?fieldSelector=spec.hostNetwork%3Dfalse"},
		{name: "fields: list Pods by an unsupported field", method: "GET", path: ns + "/pods?fieldSelector=spec.foo%3Dx"},
		{name: "fields: list ConfigMaps by an unsupported field", method: "GET", path: ns + "/configmaps?fieldSelector=data.k%3D1"},
		{name: "fields: list Secrets by type", method: "GET", path: "/api/v1/secrets?fieldSelector=type%3Dexample.com%2Fcustom"},
		{name: "fields: list namespaces by phase", method: "GET", path: "/api/v1/namespaces?fieldSelector=status.phase%3DActive"},
		{name: "fields: list CSRs by signer", method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests?fieldSelector=spec.signerName%3Dexample.com%2Fsigner", accept: "pb"},
		{name: "fields: watch Pods on a node", method: "GET", path: ns + "/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&fieldSelector=spec.nodeName%3Dnode-1"},
		{name: "fields: delete Pods on a node", method: "DELETE", path: ns + "/pods?fieldSelector=spec.nodeName%3Dnode-2"},

		// Graceful deletion of Pods: a bound Pod is marked and stays (no
		// kubelet stops it), a grace period may only shorten, 0 deletes.
		{name: "write: delete a bound Pod gracefully", method: "DELETE", path: ns + "/pods/onnode"},
		{name: "write: delete a Pod being deleted", method: "DELETE", path: ns + "/pods/onnode", body: `{"gracePeriodSeconds":60}`},
		{name: "write: shorten a Pod's grace period", method: "DELETE", path: ns + "/pods/onnode", body: `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":5}`, ct: "pb", accept: "pb"},
		{name: "write: the Pod being deleted", method: "GET", path: ns + "/pods/onnode"},
		{name: "write: delete a Pod at once", method: "DELETE", path: ns + "/pods/onnode", body: `{"gracePeriodSeconds":0}`},
		{name: "write: the Pod deleted at once is gone", method: "GET", path: ns + "/pods/onnode"},
		{name: "write: delete an unscheduled Pod", method: "DELETE", path: ns + "/pods/solo4?propagationPolicy=Background"},

		// More reads of what was recorded and written.
		{name: "read: list Pods across namespaces", method: "GET", path: "/api/v1/pods"},
		{name: "read: list Pods as protobuf metadata", method: "GET", path: ns + "/pods", accept: "listpb"},
		{name: "read: get a CSR", method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests/csr2"},
		{name: "read: list CSRs", method: "GET", path: "/apis/certificates.k8s.io/v1/certificatesigningrequests", accept: "pb"},
		{name: "read: get a ServiceAccount", method: "GET", path: ns + "/serviceaccounts/sa"},
		{name: "read: get a namespace", method: "GET", path: "/api/v1/namespaces/conf"},
		{name: "read: list ReplicationControllers across namespaces", method: "GET", path: "/api/v1/replicationcontrollers"},
		{name: "read: watch Pods in a namespace", method: "GET", path: ns + "/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"},
		{name: "write: patch a Pod's labels", method: "PATCH", path: ns + "/pods/p1", body: `{"metadata":{"labels":{"tier":"a"}}}`, ct: "smp"},
		{name: "write: patch a Pod's status", method: "PATCH", path: ns + "/pods/p1/status", body: `{"status":{"phase":"Running"}}`, ct: "merge"},

		// Collection deletes.
		{name: "deletecollection: ConfigMaps by label", method: "DELETE", path: ns + "/configmaps?labelSelector=app%3Dx"},
		{name: "deletecollection: what is left", method: "GET", path: ns + "/configmaps"},
		{name: "deletecollection: Pods by field", method: "DELETE", path: ns + "/pods?fieldSelector=metadata.name%3Dsolo3"},
		{name: "deletecollection: nothing matches", method: "DELETE", path: ns + "/configmaps?labelSelector=app%3Dnone"},
		{name: "deletecollection: every StatefulSet in a namespace", method: "DELETE", path: "/apis/apps/v1/namespaces/conf2/statefulsets"},
		{name: "deletecollection: StatefulSets across namespaces", method: "GET", path: "/apis/apps/v1/statefulsets"},
		{name: "deletecollection: with protobuf DeleteOptions", method: "DELETE", path: "/apis/apps/v1/namespaces/conf/daemonsets", body: `{"apiVersion":"apps/v1","kind":"DeleteOptions","propagationPolicy":"Background"}`, ct: "pb", accept: "pb"},
		{name: "deletecollection: dry run", method: "DELETE", path: ns + "/configmaps?dryRun=All"},
		{name: "deletecollection: the dry run left them", method: "GET", path: ns + "/configmaps"},

		// fieldValidation: Warning headers under Warn (the default), 400
		// or 422 under Strict, nothing under Ignore.
		{name: "fields: create with an unknown field", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u1"},"spec":{"x":1},"data":{"a":"1"}}`},
		{name: "fields: create with a duplicate field", method: "POST", path: ns + "/configmaps", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u2"},"data":{"a":"1","a":"2"}}`},
		{name: "fields: create with an unknown field under Strict", method: "POST", path: ns + "/configmaps?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u3","bogus":true},"data":{"a":"1"}}`},
		{name: "fields: create with an unknown field under Ignore", method: "POST", path: ns + "/configmaps?fieldValidation=Ignore", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u4"},"spec":{"x":1}}`},
		{name: "fields: create a Deployment with an unknown nested field", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"u5"},"spec":{"selector":{"matchLabels":{"app":"u5"}},"template":{"metadata":{"labels":{"app":"u5"}},"spec":{"containers":[{"name":"c","image":"busybox","imagePolicy":"x"}]}}}}`},
		{name: "fields: update with an unknown field", method: "PUT", path: ns + "/configmaps/u1", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u1"},"extra":1,"data":{"a":"2"}}`},
		{name: "fields: update with an unknown field under Strict", method: "PUT", path: ns + "/configmaps/u1?fieldValidation=Strict", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u1"},"extra":1,"data":{"a":"3"}}`},
		{name: "fields: merge patch with an unknown field", method: "PATCH", path: ns + "/configmaps/u1", body: `{"extra":1,"data":{"b":"1"}}`, ct: "merge"},
		{name: "fields: merge patch with an unknown field under Strict", method: "PATCH", path: ns + "/configmaps/u1?fieldValidation=Strict", body: `{"extra":1}`, ct: "merge"},
		{name: "fields: merge patch with a duplicate field", method: "PATCH", path: ns + "/configmaps/u1", body: `{"data":{"c":"1","c":"2"}}`, ct: "merge"},
		{name: "fields: JSON patch adding an unknown field", method: "PATCH", path: ns + "/configmaps/u1", body: `[{"op":"add","path":"/extra","value":1}]`, ct: "jsonpatch"},
		{name: "fields: strategic merge patch with an unknown field", method: "PATCH", path: ns + "/configmaps/u1", body: `{"extra":1,"data":{"d":"1"}}`, ct: "smp"},
		{name: "fields: strategic merge patch with an unknown field under Strict", method: "PATCH", path: ns + "/configmaps/u1?fieldValidation=Strict", body: `{"extra":1}`, ct: "smp"},
		{name: "fields: dry-run create with an unknown field", method: "POST", path: ns + "/configmaps?dryRun=All", body: `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"u6"},"spec":{"x":1}}`},

		// Validation of built-in kinds: 422 Invalid with the server's
		// field errors.
		{name: "invalid: a ConfigMap name", method: "POST", path: ns + "/configmaps", body: cm("Bad_Name", "")},
		{name: "invalid: a ConfigMap generateName", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"generateName":"Bad_"}}`},
		{name: "defaults: a Secret's stringData merged into its data", method: "POST", path: ns + "/secrets", body: `{"metadata":{"name":"sd"},"data":{"a":"YQ==","b":"Yg=="},"stringData":{"b":"B","c":"C"}}`},
		{name: "defaults: an update's stringData merged", method: "PATCH", path: ns + "/secrets/sd", body: `{"stringData":{"a":"A2"}}`, ct: "merge"},
		{name: "defaults: an autoscaling/v2 HPA without metrics", method: "POST", path: "/apis/autoscaling/v2/namespaces/conf/horizontalpodautoscalers",
			body: `{"apiVersion":"autoscaling/v2","kind":"HorizontalPodAutoscaler","metadata":{"name":"h"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":3}}`},
		{name: "immutable: a Secret created without a type is Opaque", method: "POST", path: ns + "/secrets", body: `{"metadata":{"name":"notype"},"data":{"k":"dg=="}}`},
		{name: "immutable: a Secret's type cannot change", method: "PATCH", path: ns + "/secrets/plain", body: `{"type":"example.com/other"}`, ct: "merge"},
		{name: "immutable: a frozen ConfigMap", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"name":"frozen"},"data":{"k":"v"},"immutable":true}`},
		{name: "immutable: a frozen ConfigMap's data cannot change", method: "PATCH", path: ns + "/configmaps/frozen", body: `{"data":{"k":"w"}}`, ct: "merge"},
		{name: "immutable: a frozen ConfigMap cannot thaw", method: "PATCH", path: ns + "/configmaps/frozen", body: `{"immutable":false}`, ct: "merge"},
		{name: "immutable: a frozen ConfigMap's labels can change", method: "PATCH", path: ns + "/configmaps/frozen", body: `{"metadata":{"labels":{"x":"y"}}}`, ct: "merge"},
		{name: "immutable: a frozen Secret", method: "POST", path: ns + "/secrets", body: `{"metadata":{"name":"frozen"},"data":{"k":"dg=="},"immutable":true}`},
		{name: "immutable: a frozen Secret's data cannot change", method: "PATCH", path: ns + "/secrets/frozen", body: `{"data":{"k":"dw=="}}`, ct: "merge"},
		{name: "names: a ClusterRole named as RBAC allows (a path segment, capitals)", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"clusterRole-10"}}`},
		{name: "names: a Role named with a colon", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/namespaces/conf/roles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"Role","metadata":{"name":"system:Reader"}}`},
		{name: "names: a ClusterRole name with a percent sign", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
			body: `{"apiVersion":"rbac.authorization.k8s.io/v1","kind":"ClusterRole","metadata":{"name":"a%b"}}`},
		{name: "invalid: a label value", method: "POST", path: ns + "/configmaps", body: cm("badlabel", `,"labels":{"app":"a b"}`)},
		{name: "invalid: a label key", method: "POST", path: ns + "/configmaps", body: cm("badkey", `,"labels":{"-x":"1"}`)},
		{name: "invalid: an annotation key", method: "POST", path: ns + "/configmaps", body: cm("badann", `,"annotations":{"a b":"1"}`)},
		{name: "invalid: a ConfigMap data key", method: "POST", path: ns + "/configmaps", body: `{"metadata":{"name":"baddata"},"data":{"a b":"1"}}`},
		{name: "invalid: a Deployment without containers", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nocontainers"},"spec":{"selector":{"matchLabels":{"app":"n"}},"template":{"metadata":{"labels":{"app":"n"}},"spec":{"containers":[]}}}}`},
		{name: "invalid: a Deployment whose selector does not match", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nomatch"},"spec":{"selector":{"matchLabels":{"app":"x"}},"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "invalid: a Deployment without a selector", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nosel"},"spec":{"template":{"metadata":{"labels":{"app":"y"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "invalid: negative replicas", method: "POST", path: apps + "/deployments", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"neg"},"spec":{"replicas":-1,"selector":{"matchLabels":{"app":"n"}},"template":{"metadata":{"labels":{"app":"n"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`},
		{name: "invalid: a Pod without an image", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"noimage"},"spec":{"containers":[{"name":"c"}]}}`},
		{name: "invalid: a Pod container name", method: "POST", path: ns + "/pods", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"badc"},"spec":{"containers":[{"name":"C_1","image":"busybox"}]}}`},
		{name: "invalid: a namespace name", method: "POST", path: "/api/v1/namespaces", body: `{"metadata":{"name":"bad.ns"}}`},
		{name: "invalid: a change to a Deployment's selector", method: "PATCH", path: apps + "/deployments/d1", body: `{"spec":{"selector":{"matchLabels":{"app":"d1","x":"y"}},"template":{"metadata":{"labels":{"x":"y"}}}}}`, ct: "merge"},
		{name: "invalid: a dry-run create", method: "POST", path: apps + "/deployments?dryRun=All", body: `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"nocontainers"},"spec":{"selector":{"matchLabels":{"app":"n"}},"template":{"metadata":{"labels":{"app":"n"}},"spec":{"containers":[]}}}}`},
		{name: "invalid: a label set by a patch", method: "PATCH", path: ns + "/configmaps/u1", body: `{"metadata":{"labels":{"app":"a b"}}}`, ct: "merge"},

		// Dry runs.
		{name: "dryrun: create", method: "POST", path: ns + "/configmaps?dryRun=All", body: cm("dry", "")},
		{name: "dryrun: get what a dry run created", method: "GET", path: ns + "/configmaps/dry"},
		{name: "dryrun: create with a resourceVersion", method: "POST", path: ns + "/configmaps?dryRun=All", body: cm("dry", `,"resourceVersion":"5"`)},
		{name: "dryrun: update", method: "PUT", path: ns + "/configmaps/a?dryRun=All", body: `{"metadata":{"name":"a"},"data":{"k":"dry"}}`},
		{name: "dryrun: patch", method: "PATCH", path: ns + "/configmaps/a?dryRun=All", body: `{"data":{"k":"dry"}}`, ct: "merge"},
		{name: "dryrun: delete", method: "DELETE", path: ns + "/configmaps/a?dryRun=All"},
		{name: "dryrun: a is untouched", method: "GET", path: ns + "/configmaps/a"},
		{name: "dryrun: delete a missing ConfigMap", method: "DELETE", path: ns + "/configmaps/nope?dryRun=All"},
		{name: "dryrun: delete with dryRun in the DeleteOptions body, as client-go sends it", method: "DELETE", path: ns + "/configmaps/a",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`},
		{name: "dryrun: a is untouched by the body's dry run", method: "GET", path: ns + "/configmaps/a"},
		{name: "dryrun: deletecollection with dryRun in the body", method: "DELETE", path: ns + "/configmaps",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`},
		{name: "dryrun: the body's dry run left them", method: "GET", path: ns + "/configmaps"},
		{name: "dryrun: an unknown dryRun value in the DeleteOptions body", method: "DELETE", path: ns + "/configmaps/a",
			body: `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["Some"]}`},
		{name: "dryrun: an unknown dryRun value", method: "POST", path: ns + "/configmaps?dryRun=Some", body: cm("dry", "")},

		// RBAC's validation, defaults and immutable roleRef (found by the
		// differential fuzzer, #42).
		{name: "rbac: a Role whose rule has no verbs", method: "POST", path: rbac + "/roles", body: `{"metadata":{"name":"r1"},"rules":[{"apiGroups":[""],"resources":["pods"]}]}`},
		{name: "rbac: a Role with a non-resource URL", method: "POST", path: rbac + "/roles", body: `{"metadata":{"name":"r2"},"rules":[{"verbs":["get"],"nonResourceURLs":["/healthz"],"resources":["pods"]}]}`},
		{name: "rbac: a Role whose rule has no apiGroups or resources", method: "POST", path: rbac + "/roles", body: `{"metadata":{"name":"r3"},"rules":[{"verbs":["get"]}]}`},
		{name: "rbac: a Role with an empty list of rules", method: "POST", path: rbac + "/roles", body: `{"metadata":{"name":"r4"},"rules":[]}`},
		{name: "rbac: a Role", method: "POST", path: rbac + "/roles", body: `{"metadata":{"name":"r5"},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]}]}`},
		{name: "rbac: a Role updated with an empty rule", method: "PUT", path: rbac + "/roles/r5", body: `{"metadata":{"name":"r5"},"rules":[{}]}`},
		{name: "rbac: a dry-run PUT creating a Role with a resourceVersion", method: "PUT", path: rbac + "/roles/r6?dryRun=All", body: `{"metadata":{"name":"r6","resourceVersion":"1"},"rules":[]}`},
		{name: "rbac: a ClusterRole with resources and non-resource URLs and no aggregation selector", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
			body: `{"metadata":{"name":"conf-cr1"},"rules":[{"verbs":["get"],"resources":["pods"],"nonResourceURLs":["/healthz"]}],"aggregationRule":{"clusterRoleSelectors":[]}}`},
		{name: "rbac: a ClusterRole with an invalid aggregation selector", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterroles",
			body: `{"metadata":{"name":"conf-cr2"},"rules":[{"verbs":["get"],"nonResourceURLs":["/healthz"]}],"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"bad key!":"x"}}]}}`},
		{name: "rbac: a RoleBinding with the defaults", method: "POST", path: rbac + "/rolebindings",
			body: `{"metadata":{"name":"rb"},"roleRef":{"kind":"Role","name":"r5"},"subjects":[{"kind":"User","name":"alice"},{"kind":"Group","name":"devs"},{"kind":"ServiceAccount","name":"sa"}]}`},
		{name: "rbac: a RoleBinding with a bad roleRef and bad subjects", method: "POST", path: rbac + "/rolebindings",
			body: `{"metadata":{"name":"rb2"},"roleRef":{"apiGroup":"example.com","kind":"Bogus","name":""},"subjects":[{"kind":"Robot","name":"r"},{"kind":"ServiceAccount","name":"Bad_Name","apiGroup":"v1"},{"kind":"Group","name":"g","apiGroup":"wrong"},{"kind":"User","name":""}]}`},
		{name: "rbac: a RoleBinding's roleRef cannot change", method: "PATCH", path: rbac + "/rolebindings/rb", ct: "merge", body: `{"roleRef":{"name":"other"}}`},
		{name: "rbac: a ClusterRoleBinding to a Role, its ServiceAccount without a namespace", method: "POST", path: "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
			body: `{"metadata":{"name":"conf-crb"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"r5"},"subjects":[{"kind":"ServiceAccount","name":"sa"}]}`},

		// The warnings of a name Pods' hostnames come from, and the scale
		// and eviction subresources' checks (found by the fuzzer, #42).
		{name: "warnings: a Pod whose name is not a DNS label", method: "POST", path: ns + "/pods", body: pod("dotted.pod")},
		{name: "warnings: a Deployment whose name is not a DNS label", method: "POST", path: apps + "/deployments", body: deployment("dotted.web", 1)},
		{name: "scale: update a missing Deployment's scale under another name", method: "PUT", path: apps + "/deployments/nope/scale",
			body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"zz"},"spec":{"replicas":2}}`},
		{name: "scale: patch a Deployment's scale to negative replicas", method: "PATCH", path: apps + "/deployments/web/scale", ct: "merge", body: `{"spec":{"replicas":-3}}`},
		{name: "scale: get a scale without a name", method: "GET", path: apps + "/deployments//scale"},
		{name: "scale: patch a scale without a name", method: "PATCH", path: apps + "/deployments//scale", ct: "merge", body: `{"spec":{"replicas":1}}`},
		{name: "eviction: evict a Pod without a name", method: "POST", path: ns + "/pods//eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":""}}`},
		{name: "eviction: a Pod with a finalizer", method: "POST", path: ns + "/pods", body: `{"metadata":{"name":"kept","finalizers":["example.com/keep"]},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`},
		{name: "eviction: evict a Pod with a stale precondition", method: "POST", path: ns + "/pods/kept/eviction",
			body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"kept"},"deleteOptions":{"preconditions":{"resourceVersion":"1"}}}`},
		{name: "eviction: dry-run evict a Pod through its delete options", method: "POST", path: ns + "/pods/kept/eviction",
			body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"kept"},"deleteOptions":{"dryRun":["All"]}}`},
		{name: "eviction: the Pod a dry run evicted", method: "GET", path: ns + "/pods/kept"},
		{name: "eviction: evict the Pod with a finalizer", method: "POST", path: ns + "/pods/kept/eviction", body: `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"kept"}}`},
		{name: "eviction: the evicted Pod carries its DisruptionTarget condition", method: "GET", path: ns + "/pods/kept"},
		{name: "scale: a Deployment applied with 2 replicas", method: "PATCH", path: apps + "/deployments/sc0?fieldManager=m1", ct: "apply",
			body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sc0\nspec:\n  replicas: 2\n  selector:\n    matchLabels:\n      app: sc0\n  template:\n    metadata:\n      labels:\n        app: sc0\n    spec:\n      containers:\n      - name: c\n        image: busybox\n"},
		{name: "scale: scale the applied Deployment to 0", method: "PUT", path: apps + "/deployments/sc0/scale", body: `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"sc0"},"spec":{"replicas":0}}`},
		{name: "scale: nobody owns the replicas of a Deployment scaled to 0", method: "GET", path: apps + "/deployments/sc0"},
		{name: "scale: scale it to 3", method: "PATCH", path: apps + "/deployments/sc0/scale", ct: "merge", body: `{"spec":{"replicas":3}}`},
		{name: "scale: the scaler owns the replicas of a Deployment scaled to 3", method: "GET", path: apps + "/deployments/sc0"},
		{name: "scale: apply the Deployment's scale as s1", method: "PATCH", path: apps + "/deployments/sc0/scale?fieldManager=s1", ct: "apply",
			body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: sc0\nspec:\n  replicas: 4\n"},
		{name: "scale: apply its scale as s2, a conflict with s1", method: "PATCH", path: apps + "/deployments/sc0/scale?fieldManager=s2", ct: "apply",
			body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: sc0\nspec:\n  replicas: 5\n"},
		{name: "scale: apply its scale as s2 with force", method: "PATCH", path: apps + "/deployments/sc0/scale?fieldManager=s2&force=true", ct: "apply",
			body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: sc0\nspec:\n  replicas: 5\n"},
		{name: "scale: apply a scale of the wrong kind", method: "PATCH", path: apps + "/deployments/sc0/scale?fieldManager=s2", ct: "apply",
			body: "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: sc0\nspec:\n  replicas: 6\n"},
		{name: "scale: apply a negative scale", method: "PATCH", path: apps + "/deployments/sc0/scale?fieldManager=s2", ct: "apply",
			body: "apiVersion: autoscaling/v1\nkind: Scale\nmetadata:\n  name: sc0\nspec:\n  replicas: -1\n"},
		{name: "scale: the Deployment whose scale was applied", method: "GET", path: apps + "/deployments/sc0"},
		{name: "scale: a Deployment created here", method: "POST", path: apps + "/deployments", body: deployment("same", 1)},
		{name: "scale: patch its scale to what it is", method: "PATCH", path: apps + "/deployments/same/scale", ct: "jsonpatch", body: `[{"op":"replace","path":"/spec/replicas","value":1}]`},
		{name: "scale: the Deployment whose scale was patched to what it is", method: "GET", path: apps + "/deployments/same"},
		{name: "write: a Deployment deleted with its dependents orphaned", method: "POST", path: apps + "/deployments", body: deployment("orphaner", 1)},
		{name: "write: delete it orphaning its dependents (it waits for a collector)", method: "DELETE", path: apps + "/deployments/orphaner", body: `{"propagationPolicy":"Orphan"}`},
		{name: "write: create it again while it is being deleted", method: "POST", path: apps + "/deployments", body: deployment("orphaner", 1)},
	})
}
