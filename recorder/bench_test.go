package recorder_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/recorder"
)

const benchEvents = 10_000

// benchPod is a Pod of about 6 KB of JSON, shaped like a real one.
func benchPod(i int) *corev1.Pod {
	labels, ann := map[string]string{}, map[string]string{}
	for j := range 12 {
		labels[fmt.Sprintf("app.kubernetes.io/label-%d", j)] = fmt.Sprintf("value-%d-%d", i, j)
		ann[fmt.Sprintf("example.com/annotation-%d", j)] = fmt.Sprintf("some annotation text for pod %d number %d", i, j)
	}
	var containers []corev1.Container
	for c := range 3 {
		var env []corev1.EnvVar
		for e := range 18 {
			env = append(env, corev1.EnvVar{Name: fmt.Sprintf("ENV_VAR_%d", e), Value: fmt.Sprintf("value-%d-%d-%d", i, c, e)})
		}
		containers = append(containers, corev1.Container{
			Name: fmt.Sprintf("container-%d", c), Image: "registry.example.com/team/image:v1.2.3", Env: env,
			Args:  []string{"--flag-one=1", "--flag-two=two", "--verbose"},
			Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
			Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")},
			},
			VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/etc/config"}, {Name: "data", MountPath: "/var/data"}},
		})
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("pod-%d", i), Namespace: "bench", UID: "c0ffee00-0000-4000-8000-000000000000",
			ResourceVersion: fmt.Sprint(1000 + i), Labels: labels, Annotations: ann},
		Spec: corev1.PodSpec{Containers: containers, NodeName: "node-1", ServiceAccountName: "default",
			Volumes: []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}}}},
				{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", HostIP: "192.168.0.1",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}},
	}
}

var benchStream = func() []byte {
	var b bytes.Buffer
	for i := range benchEvents {
		pod, _ := json.Marshal(benchPod(i))
		fmt.Fprintf(&b, `{"type":"ADDED","object":%s}`+"\n", pod)
	}
	return b.Bytes()
}()

// memWatch serves benchStream as a JSON watch from memory.
var memWatch = rtFunc(func(*http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(bytes.NewReader(benchStream))}, nil
})

func runWatch(b *testing.B, cfg *rest.Config) {
	cs := kubernetes.NewForConfigOrDie(cfg)
	b.SetBytes(int64(len(benchStream)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		w, err := cs.CoreV1().Pods("bench").Watch(b.Context(), metav1.ListOptions{})
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		for range w.ResultChan() {
			n++
		}
		if n != benchEvents {
			b.Fatalf("%d events, want %d", n, benchEvents)
		}
	}
	b.ReportMetric(float64(benchEvents*b.N)/b.Elapsed().Seconds(), "events/s")
}

func benchConfig() *rest.Config {
	return &rest.Config{Host: "http://mem", Transport: memWatch, ContentConfig: rest.ContentConfig{ContentType: "application/json", AcceptContentTypes: "application/json"}, QPS: -1}
}

// BenchmarkDirectWatch decodes a 10k-event watch of 6 KB Pods with
// client-go, with no recorder.
func BenchmarkDirectWatch(b *testing.B) {
	runWatch(b, benchConfig())
}

// BenchmarkRecordWatch is BenchmarkDirectWatch recorded to a compressed
// cassette (discarded).
func BenchmarkRecordWatch(b *testing.B) {
	w, err := cassettes.NewWriter(io.Discard, recorder.Header("", recorder.Options{}), cassettes.WriterOptions{Compress: true})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := recorder.New(w, recorder.Options{})
	if err != nil {
		b.Fatal(err)
	}
	cfg := benchConfig()
	rec.WrapConfig(cfg)
	runWatch(b, cfg)
	b.StopTimer()
	if err := rec.Close(); err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
}
