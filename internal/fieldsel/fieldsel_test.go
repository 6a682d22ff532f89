package fieldsel_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kwrec/kwrec/internal/fieldsel"
)

var (
	pods       = schema.GroupResource{Resource: "pods"}
	configmaps = schema.GroupResource{Resource: "configmaps"}
	widgets    = schema.GroupResource{Group: "example.com", Resource: "widgets"}
)

func TestSetReadsTheFieldsTheServerSelectsOn(t *testing.T) {
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		raw  string
		want fields.Set
	}{
		{"a bound running Pod has its node, phase and IP", pods,
			`{"metadata":{"name":"p","namespace":"web"},"spec":{"nodeName":"n1","restartPolicy":"Always","schedulerName":"default-scheduler","serviceAccountName":"default","hostNetwork":true},"status":{"phase":"Running","podIP":"10.0.0.1"}}`,
			fields.Set{"metadata.name": "p", "metadata.namespace": "web", "spec.nodeName": "n1", "spec.restartPolicy": "Always",
				"spec.schedulerName": "default-scheduler", "spec.serviceAccountName": "default", "spec.hostNetwork": "true",
				"status.phase": "Running", "status.podIP": "10.0.0.1", "status.nominatedNodeName": ""}},
		{"an unscheduled Pod has an empty node and is off the host network", pods,
			`{"metadata":{"name":"p","namespace":"web"},"spec":{}}`,
			fields.Set{"metadata.name": "p", "metadata.namespace": "web", "spec.nodeName": "", "spec.restartPolicy": "",
				"spec.schedulerName": "", "spec.serviceAccountName": "", "spec.hostNetwork": "false",
				"status.phase": "", "status.podIP": "", "status.nominatedNodeName": ""}},
		{"an Event's source is its component", schema.GroupResource{Resource: "events"},
			`{"metadata":{"name":"e","namespace":"web"},"involvedObject":{"kind":"Pod","name":"p","uid":"u"},"reason":"Pulled","source":{"component":"kubelet"},"type":"Normal"}`,
			fields.Set{"metadata.name": "e", "metadata.namespace": "web", "involvedObject.kind": "Pod", "involvedObject.namespace": "",
				"involvedObject.name": "p", "involvedObject.uid": "u", "involvedObject.apiVersion": "", "involvedObject.resourceVersion": "",
				"involvedObject.fieldPath": "", "reason": "Pulled", "reportingComponent": "", "source": "kubelet", "type": "Normal"}},
		{"a ReplicaSet's replicas are a number", schema.GroupResource{Group: "apps", Resource: "replicasets"},
			`{"metadata":{"name":"rs"},"status":{"replicas":3}}`,
			fields.Set{"metadata.name": "rs", "metadata.namespace": "", "status.replicas": "3"}},
		{"a cordoned Node is unschedulable", schema.GroupResource{Resource: "nodes"},
			`{"metadata":{"name":"n1"},"spec":{"unschedulable":true}}`,
			fields.Set{"metadata.name": "n1", "metadata.namespace": "", "spec.unschedulable": "true"}},
		{"a ConfigMap has its name and namespace only", configmaps,
			`{"metadata":{"name":"c","namespace":"web"},"data":{"k":"v"}}`,
			fields.Set{"metadata.name": "c", "metadata.namespace": "web"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fieldsel.Set(tc.gr, []byte(tc.raw))
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("Set (-want +got):\n%s", d)
			}
		})
	}
}

func TestSetOfBytesThatAreNotJSONIsAnError(t *testing.T) {
	_, err := fieldsel.Set(pods, []byte("k8s\x00"))
	if err == nil || err.Error() != "reading the fields of a pods object: invalid character 'k' looking for beginning of value" {
		t.Errorf("err = %v", err)
	}
}

func TestUnsupportedFieldsGetTheServersMessage(t *testing.T) {
	for _, tc := range []struct {
		name, gr, sel, label, msg string
	}{
		{"a Pod's node is supported", "pods", "spec.nodeName=n1,metadata.name=p", "", ""},
		{"a field a Pod lacks is refused as pods refuse it", "pods", "spec.nodeName=n1,spec.foo=x", "spec.foo", "field label not supported: spec.foo"},
		{"a field beyond metadata on a ConfigMap gets the default conversion's message", "configmaps", "data.k=1", "data.k",
			`"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"`},
		{"metadata is supported everywhere", "widgets.example.com", "metadata.namespace!=x", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sel, err := fields.ParseSelector(tc.sel)
			if err != nil {
				t.Fatal(err)
			}
			label, msg := fieldsel.Unsupported(schema.ParseGroupResource(tc.gr), sel)
			if label != tc.label || msg != tc.msg {
				t.Errorf("Unsupported = %q, %q; want %q, %q", label, msg, tc.label, tc.msg)
			}
		})
	}
}

func TestOnlyBuiltInGroupsAreKnown(t *testing.T) {
	for gr, want := range map[schema.GroupResource]bool{pods: true, configmaps: true, widgets: false,
		{Group: "apps", Resource: "deployments"}: true} {
		if got := fieldsel.Known(gr); got != want {
			t.Errorf("Known(%s) = %v, want %v", gr, got, want)
		}
	}
}
