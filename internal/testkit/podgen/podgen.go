// Package podgen generates realistic Pods and their watch streams for
// benchmarks, so no large fixture is checked in. Pods are deterministic for a
// given index and about 6.5 KB as JSON (4.3 KB as protobuf), like the Pods of
// a real Deployment-managed workload.
package podgen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	intstrutil "k8s.io/apimachinery/pkg/util/intstr"
)

// Pod returns the i-th generated Pod, with resourceVersion rv.
func Pod(i int, rv int64) *corev1.Pod {
	name := fmt.Sprintf("web-%08x-%05d", uint32(i*2654435761), i)
	created := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Second))
	env := make([]corev1.EnvVar, 0, 8)
	for k := 0; k < 8; k++ {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("APP_SETTING_%02d", k), Value: fmt.Sprintf("value-%d-%d-some-config-string", i, k)})
	}
	container := func(n string) corev1.Container {
		return corev1.Container{
			Name:  n,
			Image: "registry.example.com/team/" + n + ":v1.37." + fmt.Sprint(i%10),
			Args:  []string{"--port=8080", "--metrics-port=9090", "--log-level=info", "--config=/etc/app/config.yaml"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}, {Name: "metrics", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}},
			Env:   env,
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
			},
			VolumeMounts:             []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "kube-api-access", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			ReadinessProbe:           &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: intstr(8080)}}, PeriodSeconds: 10},
			LivenessProbe:            &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/livez", Port: intstr(8080)}}, PeriodSeconds: 20},
			ImagePullPolicy:          corev1.PullIfNotPresent,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		}
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(fmt.Sprintf("6f1b2c3d-%04x-4a5b-8c9d-%012x", i%65536, i)),
			ResourceVersion: fmt.Sprint(rv), CreationTimestamp: created, GenerateName: "web-",
			Labels:          map[string]string{"app": "web", "pod-template-hash": fmt.Sprintf("%08x", uint32(i*2654435761)), "tier": "frontend", "version": "v1"},
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": created.Format(time.RFC3339), "prometheus.io/scrape": "true", "prometheus.io/port": "9090"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-5d8f7c9b6d", UID: "0a1b2c3d-4e5f-6789-abcd-ef0123456789", Controller: ptr(true), BlockOwnerDeletion: ptr(true)}},
		},
		Spec: corev1.PodSpec{
			Containers:     []corev1.Container{container("app"), container("sidecar")},
			InitContainers: []corev1.Container{container("init")},
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "web-config"}}}},
				{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr(int64(3607))}}}}}}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, ServiceAccountName: "web",
			NodeName: fmt.Sprintf("node-%03d.cluster.example.com", i%200), SchedulerName: "default-scheduler",
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr(int64(300))}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: fmt.Sprintf("10.0.%d.%d", i%250, i%200), PodIP: fmt.Sprintf("10.244.%d.%d", i%250, (i/250)%250),
			StartTime: &created, QOSClass: corev1.PodQOSBurstable,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: created},
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: created}},
			ContainerStatuses: []corev1.ContainerStatus{
				{Name: "app", Ready: true, Image: "registry.example.com/team/app:v1.37.1", ImageID: "registry.example.com/team/app@sha256:" + fmt.Sprintf("%064x", i), ContainerID: "containerd://" + fmt.Sprintf("%064x", i*7), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}},
				{Name: "sidecar", Ready: true, Image: "registry.example.com/team/sidecar:v1.37.1", ImageID: "registry.example.com/team/sidecar@sha256:" + fmt.Sprintf("%064x", i*3), ContainerID: "containerd://" + fmt.Sprintf("%064x", i*11), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: created}}},
			},
		},
	}
}

// WatchEventJSON returns the JSON watch event line (newline included) of
// the i-th event of a generated stream: MODIFIED events of Pod i%pods.
func WatchEventJSON(i int) []byte {
	p := Pod(i%5000, int64(1000+i))
	var b bytes.Buffer
	if err := json.NewEncoder(&b).Encode(struct {
		Type   string      `json:"type"`
		Object *corev1.Pod `json:"object"`
	}{"MODIFIED", p}); err != nil {
		panic(err) // generated Pods always encode
	}
	return b.Bytes()
}

func ptr[T any](v T) *T { return &v }

func intstr(p int) intstrutil.IntOrString { return intstrutil.FromInt32(int32(p)) }
