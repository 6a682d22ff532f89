package printer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// printersNamespace is where TestLiveBuiltinPrintsAsTheServer creates
// its namespaced objects.
const printersNamespace = "printers"

// liveWrite is a write the live test makes: a method, a path (relative
// to the API root, namespaced paths in printersNamespace unless they say
// otherwise) and a JSON body.
type liveWrite struct {
	method, path, body string
}

func create(path, body string) liveWrite { return liveWrite{http.MethodPost, path, body} }

// status patches an object's status subresource.
func status(path, body string) liveWrite {
	return liveWrite{http.MethodPatch, path + "/status", body}
}

const ns = "/api/v1/namespaces/" + printersNamespace

// liveObjects are the objects the live test prints, beyond those the
// control plane and its controllers make: each kind in the shapes its
// printer tells apart. Statuses no controller writes here (no kubelet,
// scheduler, metrics or load balancer) are patched in.
var liveObjects = []liveWrite{
	create("/api/v1/namespaces", `{"metadata":{"name":"printers"}}`),
	create(ns+"/configmaps", `{"metadata":{"name":"cm-data"},"data":{"a":"1","b":"2"},"binaryData":{"c":"AA=="}}`),
	create(ns+"/configmaps", `{"metadata":{"name":"cm-empty"}}`),
	create(ns+"/secrets", `{"metadata":{"name":"s-opaque"},"data":{"a":"MQ=="},"stringData":{"b":"2","c":"3"}}`),
	create(ns+"/secrets", `{"metadata":{"name":"s-basic"},"type":"kubernetes.io/basic-auth","stringData":{"username":"u"}}`),
	create(ns+"/serviceaccounts", `{"metadata":{"name":"sa"}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-cip"},"spec":{"selector":{"app":"web","tier":"front"},"ports":[{"name":"http","port":80,"targetPort":8080},{"name":"dns","port":53,"protocol":"UDP"}]}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-headless"},"spec":{"clusterIP":"None","selector":{"app":"web"},"ports":[{"port":80}]}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-noports"},"spec":{"clusterIP":"None","selector":{"app":"db"}}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-np"},"spec":{"type":"NodePort","externalIPs":["192.0.2.1","192.0.2.2"],"ports":[{"port":443,"nodePort":30443}]}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-lb"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-lb-ips"},"spec":{"type":"LoadBalancer","externalIPs":["192.0.2.9"],"ports":[{"port":80}]}}`),
	status(ns+"/services/svc-lb-ips", `{"status":{"loadBalancer":{"ingress":[{"ip":"198.51.100.2"},{"hostname":"a-very-long-load-balancer.example.com"},{"ip":"198.51.100.1"}]}}}`),
	create(ns+"/services", `{"metadata":{"name":"svc-ext"},"spec":{"type":"ExternalName","externalName":"db.example.com"}}`),
	create("/api/v1/nodes", `{"metadata":{"name":"node-a","labels":{"node-role.kubernetes.io/control-plane":"","node-role.kubernetes.io/infra":"","kubernetes.io/role":"edge","kubernetes.io/os":"linux"}},"spec":{"unschedulable":true}}`),
	status("/api/v1/nodes/node-a", `{"status":{"conditions":[{"type":"MemoryPressure","status":"False"},{"type":"Ready","status":"True"}],"addresses":[{"type":"Hostname","address":"a"},{"type":"InternalIP","address":"10.1.0.1"},{"type":"ExternalIP","address":"203.0.113.1"}],"nodeInfo":{"kubeletVersion":"v1.37.2","osImage":"Linux","kernelVersion":"6.1","containerRuntimeVersion":"containerd://2.0","architecture":"amd64","machineID":"","systemUUID":"","bootID":"","kubeProxyVersion":"","operatingSystem":"linux"}}}`),
	create("/api/v1/nodes", `{"metadata":{"name":"node-b","labels":{"disk":"ssd"}}}`),
	status("/api/v1/nodes/node-b", `{"status":{"conditions":[{"type":"Ready","status":"Unknown"}]}}`),
	create(ns+"/pods", `{"metadata":{"name":"pod-pending","labels":{"app":"web","tier":"front"}},"spec":{"containers":[{"name":"a","image":"nginx"},{"name":"b","image":"busybox"}],"readinessGates":[{"conditionType":"example.com/gate"}]}}`),
	status(ns+"/pods/pod-pending", `{"status":{"nominatedNodeName":"node-b","conditions":[{"type":"example.com/gate","status":"True"}]}}`),
	create(ns+"/pods", `{"metadata":{"name":"pod-running","labels":{"app":"web"}},"spec":{"nodeName":"node-a","containers":[{"name":"a","image":"nginx"},{"name":"b","image":"busybox"}]}}`),
	status(ns+"/pods/pod-running", `{"status":{"phase":"Running","podIP":"10.2.0.5","podIPs":[{"ip":"10.2.0.5"}],"conditions":[{"type":"Ready","status":"True"},{"type":"Initialized","status":"True"}],"containerStatuses":[{"name":"a","image":"nginx","imageID":"","ready":true,"restartCount":3,"state":{"running":{"startedAt":"2026-01-01T00:00:00Z"}},"lastState":{"terminated":{"exitCode":137,"reason":"OOMKilled","finishedAt":"2026-01-01T00:00:00Z"}}},{"name":"b","image":"busybox","imageID":"","ready":false,"restartCount":1,"state":{"waiting":{"reason":"CrashLoopBackOff"}}}]}}`),
	create(ns+"/pods", `{"metadata":{"name":"pod-init"},"spec":{"initContainers":[{"name":"i1","image":"busybox"},{"name":"side","image":"envoy","restartPolicy":"Always"},{"name":"i2","image":"busybox"}],"containers":[{"name":"a","image":"nginx"}]}}`),
	status(ns+"/pods/pod-init", `{"status":{"phase":"Pending","initContainerStatuses":[{"name":"i1","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0}}},{"name":"side","image":"envoy","imageID":"","ready":true,"started":true,"restartCount":2,"state":{"running":{}},"lastState":{"terminated":{"exitCode":1,"finishedAt":"2026-01-01T00:00:00Z"}}},{"name":"i2","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ImagePullBackOff"}}}]}}`),
	create(ns+"/pods", `{"metadata":{"name":"pod-done"},"spec":{"restartPolicy":"Never","containers":[{"name":"a","image":"busybox"}]}}`),
	status(ns+"/pods/pod-done", `{"status":{"phase":"Succeeded","containerStatuses":[{"name":"a","image":"busybox","imageID":"","ready":false,"restartCount":0,"state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}}`),
	create(ns+"/pods", `{"metadata":{"name":"pod-gated"},"spec":{"schedulingGates":[{"name":"example.com/wait"}],"containers":[{"name":"a","image":"nginx"}]}}`),
	create("/apis/apps/v1/namespaces/printers/deployments", `{"metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["front","back"]}]},"template":{"metadata":{"labels":{"app":"web","tier":"front"}},"spec":{"containers":[{"name":"nginx","image":"nginx:1"},{"name":"log","image":"busybox"}]}}}}`),
	create("/apis/apps/v1/namespaces/printers/deployments", `{"metadata":{"name":"paused"},"spec":{"replicas":0,"selector":{"matchLabels":{"app":"paused"}},"template":{"metadata":{"labels":{"app":"paused"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`),
	create("/apis/apps/v1/namespaces/printers/replicasets", `{"metadata":{"name":"rs"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"rs"}},"template":{"metadata":{"labels":{"app":"rs"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`),
	create("/apis/apps/v1/namespaces/printers/statefulsets", `{"metadata":{"name":"db"},"spec":{"replicas":2,"serviceName":"svc-headless","selector":{"matchLabels":{"app":"db"}},"template":{"metadata":{"labels":{"app":"db"}},"spec":{"containers":[{"name":"pg","image":"postgres"}]}}}}`),
	create("/apis/apps/v1/namespaces/printers/daemonsets", `{"metadata":{"name":"agent"},"spec":{"selector":{"matchLabels":{"app":"agent"}},"template":{"metadata":{"labels":{"app":"agent"}},"spec":{"nodeSelector":{"kubernetes.io/os":"linux"},"tolerations":[{"operator":"Exists"}],"containers":[{"name":"a","image":"agent"}]}}}}`),
	create("/apis/batch/v1/namespaces/printers/jobs", `{"metadata":{"name":"job-par"},"spec":{"completions":3,"parallelism":2,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`),
	create("/apis/batch/v1/namespaces/printers/jobs", `{"metadata":{"name":"job-work-queue"},"spec":{"parallelism":3,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`),
	create("/apis/batch/v1/namespaces/printers/jobs", `{"metadata":{"name":"job-suspended"},"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`),
	create("/apis/batch/v1/namespaces/printers/cronjobs", `{"metadata":{"name":"cron"},"spec":{"schedule":"*/5 * * * *","timeZone":"Europe/Paris","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`),
	create("/apis/batch/v1/namespaces/printers/cronjobs", `{"metadata":{"name":"cron-off"},"spec":{"schedule":"@daily","suspend":true,"jobTemplate":{"spec":{"template":{"metadata":{"labels":{"x":"y"}},"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`),
	create(ns+"/endpoints", `{"metadata":{"name":"ep-many"},"subsets":[{"addresses":[{"ip":"10.0.0.1"},{"ip":"10.0.0.2"}],"ports":[{"name":"a","port":80},{"name":"b","port":443}]},{"addresses":[{"ip":"fd00::1"}]}]}`),
	create(ns+"/endpoints", `{"metadata":{"name":"ep-headless"},"subsets":[{"addresses":[{"ip":"10.0.0.9"}]}]}`),
	create("/apis/discovery.k8s.io/v1/namespaces/printers/endpointslices", `{"metadata":{"name":"eps-many"},"addressType":"IPv4","ports":[{"name":"a","port":80},{"name":"named"},{"name":"c","port":81},{"port":82}],"endpoints":[{"addresses":["10.0.0.1","10.0.0.2"]},{"addresses":["10.0.0.3"]},{"addresses":["10.0.0.4"]}]}`),
	create("/apis/discovery.k8s.io/v1/namespaces/printers/endpointslices", `{"metadata":{"name":"eps-empty"},"addressType":"FQDN","ports":[],"endpoints":[]}`),
	create("/api/v1/persistentvolumes", `{"metadata":{"name":"pv-a","annotations":{"volume.beta.kubernetes.io/storage-class":"beta"}},"spec":{"capacity":{"storage":"1536Mi"},"accessModes":["ReadWriteMany","ReadWriteOnce","ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Retain","storageClassName":"fast","hostPath":{"path":"/tmp"},"claimRef":{"namespace":"printers","name":"pvc-bound"},"volumeMode":"Block"}}`),
	status("/api/v1/persistentvolumes/pv-a", `{"status":{"phase":"Bound","reason":"Because"}}`),
	create("/api/v1/persistentvolumes", `{"metadata":{"name":"pv-b"},"spec":{"capacity":{"storage":"10G"},"accessModes":["ReadOnlyMany"],"hostPath":{"path":"/tmp"}}}`),
	create(ns+"/persistentvolumeclaims", `{"metadata":{"name":"pvc-bound"},"spec":{"volumeName":"pv-a","accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"storageClassName":"fast","volumeMode":"Block"}}`),
	status(ns+"/persistentvolumeclaims/pvc-bound", `{"status":{"phase":"Bound","accessModes":["ReadWriteOnce","ReadWriteMany"],"capacity":{"storage":"1536Mi"}}}`),
	create(ns+"/persistentvolumeclaims", `{"metadata":{"name":"pvc-pending"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},"volumeAttributesClassName":"gold"}}`),
	create("/apis/networking.k8s.io/v1/namespaces/printers/ingresses", `{"metadata":{"name":"ing"},"spec":{"ingressClassName":"nginx","tls":[{"hosts":["a.example.com"]}],"rules":[{"host":"a.example.com"},{"host":"b.example.com"},{},{"host":"c.example.com"},{"host":"d.example.com"}]}}`),
	status("/apis/networking.k8s.io/v1/namespaces/printers/ingresses/ing", `{"status":{"loadBalancer":{"ingress":[{"hostname":"lb.example.com"},{"ip":"198.51.100.7"}]}}}`),
	create("/apis/networking.k8s.io/v1/namespaces/printers/ingresses", `{"metadata":{"name":"ing-default"},"spec":{"defaultBackend":{"service":{"name":"svc-cip","port":{"number":80}}}}}`),
	create("/apis/rbac.authorization.k8s.io/v1/namespaces/printers/roles", `{"metadata":{"name":"reader"},"rules":[{"apiGroups":[""],"resources":["pods"],"verbs":["get"]}]}`),
	create("/apis/rbac.authorization.k8s.io/v1/namespaces/printers/rolebindings", `{"metadata":{"name":"readers"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"reader"},"subjects":[{"kind":"User","name":"alice","apiGroup":"rbac.authorization.k8s.io"},{"kind":"User","name":"bob","apiGroup":"rbac.authorization.k8s.io"},{"kind":"Group","name":"devs","apiGroup":"rbac.authorization.k8s.io"},{"kind":"ServiceAccount","name":"sa","namespace":"printers"}]}`),
	create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"metadata":{"name":"printers-view"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":"sa","namespace":"printers"},{"kind":"ServiceAccount","name":"other","namespace":"default"}]}`),
	create(ns+"/events", `{"metadata":{"name":"ev-series"},"involvedObject":{"kind":"Pod","name":"pod-pending","namespace":"printers","fieldPath":"spec.containers{a}"},"reason":"BackOff","message":"  Back-off restarting  \n","type":"Warning","eventTime":"2026-01-01T00:00:00.000000Z","series":{"count":7,"lastObservedTime":"2026-01-01T00:10:00.000000Z"},"reportingComponent":"kubelet","reportingInstance":"node-a","action":"Restart"}`),
	create(ns+"/events", `{"metadata":{"name":"ev-old"},"involvedObject":{"kind":"Node","namespace":"printers"},"reason":"Starting","message":"m","type":"Normal","firstTimestamp":"2026-01-01T00:00:00Z","lastTimestamp":"2026-01-01T01:00:00Z","count":4,"source":{"component":"kubelet","host":"node-a"}}`),
	create(ns+"/events", `{"metadata":{"name":"ev-once"},"involvedObject":{"kind":"Service","name":"svc-lb","namespace":"printers"},"reason":"R","type":"Normal","firstTimestamp":"2026-01-01T00:00:00Z"}`),
	create("/apis/autoscaling/v2/namespaces/printers/horizontalpodautoscalers", `{"metadata":{"name":"hpa-many"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"minReplicas":2,"maxReplicas":10,"metrics":[{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":60}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"target":{"type":"AverageValue","averageValue":"1k"}}},{"type":"External","external":{"metric":{"name":"queue"},"target":{"type":"Value","value":"30"}}}]}}`),
	status("/apis/autoscaling/v2/namespaces/printers/horizontalpodautoscalers/hpa-many", `{"status":{"currentReplicas":3,"desiredReplicas":3,"currentMetrics":[{"type":"Resource","resource":{"name":"cpu","current":{"averageUtilization":45,"averageValue":"100m"}}},{"type":"Pods","pods":{"metric":{"name":"qps"},"current":{"averageValue":"500"}}}]}}`),
	create("/apis/autoscaling/v2/namespaces/printers/horizontalpodautoscalers", `{"metadata":{"name":"hpa-two"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"StatefulSet","name":"db"},"maxReplicas":4,"metrics":[{"type":"Object","object":{"describedObject":{"kind":"Service","name":"svc-cip","apiVersion":"v1"},"metric":{"name":"rps"},"target":{"type":"AverageValue","averageValue":"2"}}},{"type":"ContainerResource","containerResource":{"name":"memory","container":"pg","target":{"type":"AverageValue","averageValue":"1Gi"}}}]}}`),
	create("/apis/autoscaling/v2/namespaces/printers/horizontalpodautoscalers", `{"metadata":{"name":"hpa-none"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"paused"},"maxReplicas":1}}`),
	create("/apis/policy/v1/namespaces/printers/poddisruptionbudgets", `{"metadata":{"name":"pdb-min"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}`),
	create("/apis/policy/v1/namespaces/printers/poddisruptionbudgets", `{"metadata":{"name":"pdb-max"},"spec":{"maxUnavailable":"25%","selector":{"matchLabels":{"app":"db"}}}}`),
	create("/apis/coordination.k8s.io/v1/namespaces/printers/leases", `{"metadata":{"name":"lease-held"},"spec":{"holderIdentity":"me","leaseDurationSeconds":15}}`),
	create("/apis/coordination.k8s.io/v1/namespaces/printers/leases", `{"metadata":{"name":"lease-free"},"spec":{}}`),
}

// controllers are the kube-controller-manager controllers that make
// statuses (and the objects they own, and their events) for the live
// test.
const controllers = "deployment-controller,replicaset-controller,statefulset-controller,daemonset-controller," +
	"job-controller,cronjob-controller,endpoints-controller,endpointslice-controller,disruption-controller,serviceaccount-controller"

// do sends a write to the live server, failing the test unless it
// succeeds.
func (s liveServer) do(w liveWrite) {
	s.t.Helper()
	req, err := http.NewRequestWithContext(s.t.Context(), w.method, s.base+w.path, strings.NewReader(w.body))
	if err != nil {
		s.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if w.method == http.MethodPatch {
		req.Header.Set("Content-Type", "application/merge-patch+json")
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", w.method, w.path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		s.t.Fatalf("%s %s: %d: %s", w.method, w.path, resp.StatusCode, body)
	}
}

// waitFor waits until the JSON object at path satisfies ok: for a
// controller to write a status the test wants printed.
func (s liveServer) waitFor(path, what string, ok func(obj map[string]any) bool) {
	s.t.Helper()
	err := wait.PollUntilContextTimeout(s.t.Context(), 100*time.Millisecond, 60*time.Second, true, func(context.Context) (bool, error) {
		status, body := s.try(path)
		if status == http.StatusNotFound {
			return false, nil
		}
		var obj map[string]any
		if err := json.Unmarshal(body, &obj); err != nil {
			return false, fmt.Errorf("%d: %w", status, err)
		}
		return ok(obj), nil
	})
	if err != nil {
		s.t.Fatalf("waiting for %s: %v", what, err)
	}
}

// field returns the value at a dotted path in obj, nil when absent.
func field(obj map[string]any, path string) any {
	var v any = obj
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// humanDuration matches an age as duration.HumanDuration prints it,
// whole (an Age cell) or in a Pod's Restarts ("3 (5m ago)").
var humanDuration = regexp.MustCompile(`^([0-9]+[smhdy])+$|\(([0-9]+[smhdy])+ ago\)`)

// maskAges replaces the ages in cells, which the server prints on its
// clock when it answers and the printer on the one it is given.
func maskAges(cells []any) []any {
	out := make([]any, len(cells))
	for i, c := range cells {
		if s, ok := c.(string); ok {
			c = humanDuration.ReplaceAllString(s, "<age>")
		}
		out[i] = c
	}
	return out
}

// rowsOf returns the server's Table of collection at resourceVersion rv
// and its objects in JSON at the same resourceVersion.
func (s liveServer) rowsOf(collection string) (cols json.RawMessage, rows [][]any, names []string, items []json.RawMessage) {
	s.t.Helper()
	var list struct {
		Metadata struct{ ResourceVersion string }
		Items    []json.RawMessage
	}
	if err := json.Unmarshal(s.get(collection, "application/json"), &list); err != nil {
		s.t.Fatal(err)
	}
	var tab struct {
		ColumnDefinitions json.RawMessage
		Rows              []struct {
			Cells  []any
			Object struct {
				Metadata struct{ Namespace, Name string }
			}
		}
	}
	q := "?resourceVersion=" + list.Metadata.ResourceVersion + "&resourceVersionMatch=Exact"
	d := json.NewDecoder(bytes.NewReader(s.get(collection+q, kubectlTableAccept)))
	d.UseNumber()
	if err := d.Decode(&tab); err != nil {
		s.t.Fatal(err)
	}
	for _, r := range tab.Rows {
		rows = append(rows, r.Cells)
		names = append(names, r.Object.Metadata.Namespace+"/"+r.Object.Metadata.Name)
	}
	return tab.ColumnDefinitions, rows, names, list.Items
}

// TestLiveBuiltinPrintsAsTheServer creates objects of every kind with a
// ported printer on the live control plane, with the controllers that
// write their statuses, and compares, for each resource, the server's
// Table of all of them with the rows the printer makes of the same
// objects fetched in JSON at the same resourceVersion: the columns byte
// for byte, the cells equal but for ages (the server's are on its clock).
func TestLiveBuiltinPrintsAsTheServer(t *testing.T) {
	cp := controlplanetest.Start(t)
	s := newLiveServer(t, cp)
	cp.StartControllers(t, controllers)
	s.do(liveObjects[0]) // the namespace
	// Pods are admitted once the namespace has its default service
	// account.
	s.waitFor(ns+"/serviceaccounts/default", "the default service account", func(map[string]any) bool { return true })
	for _, w := range liveObjects[1:] {
		s.do(w)
	}
	apps := "/apis/apps/v1/namespaces/printers/"
	s.waitFor(apps+"deployments/web", "the deployment's replicas", func(o map[string]any) bool {
		return fmt.Sprint(field(o, "status.updatedReplicas")) == "2"
	})
	s.waitFor(apps+"statefulsets/db", "the stateful set's first pod", func(o map[string]any) bool {
		return field(o, "status.replicas") != nil
	})
	s.waitFor(apps+"daemonsets/agent", "the daemon set's pod on node-a", func(o map[string]any) bool {
		return fmt.Sprint(field(o, "status.currentNumberScheduled")) == "1"
	})
	s.waitFor("/apis/batch/v1/namespaces/printers/jobs/job-par", "the job's start", func(o map[string]any) bool {
		return field(o, "status.startTime") != nil && field(o, "status.active") != nil
	})
	s.waitFor("/apis/policy/v1/namespaces/printers/poddisruptionbudgets/pdb-min", "the budget's status", func(o map[string]any) bool {
		return field(o, "status.observedGeneration") != nil
	})
	s.waitFor(ns+"/endpoints/svc-cip", "the service's endpoints", func(map[string]any) bool { return true })
	for _, c := range BuiltinCollections() {
		t.Run(strings.TrimPrefix(c, "/"), func(t *testing.T) {
			s := liveServer{t: t, base: s.base, hc: s.hc}
			p, err := NewBuiltin(c)
			if err != nil {
				t.Fatal(err)
			}
			cols, rows, names, items := s.rowsOf(c)
			if !bytes.Equal(cols, p.Columns()) {
				t.Errorf("columns differ:\nserver %s\nprinter %s", cols, p.Columns())
			}
			if len(rows) != len(items) {
				t.Fatalf("%d rows of %d objects", len(rows), len(items))
			}
			now := time.Now()
			differ := 0
			for i, item := range items {
				b, err := p.Cells(item, now)
				if err != nil {
					t.Fatalf("%s: %v", names[i], err)
				}
				d := json.NewDecoder(bytes.NewReader(b))
				d.UseNumber()
				var got []any
				if err := d.Decode(&got); err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(maskAges(rows[i]), maskAges(got)); diff != "" {
					differ++
					t.Errorf("%s: cells (-server +printer):\n%s", names[i], diff)
				}
			}
			t.Logf("%s: %d rows compared, %d differ", c, len(items), differ)
			if len(items) == 0 {
				t.Errorf("no objects to compare")
			}
		})
	}
}
