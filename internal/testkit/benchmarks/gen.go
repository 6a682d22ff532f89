package benchmarks

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"github.com/kwrec/kwrec/internal/wire"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kwrec/kwrec/internal/testkit/podgen"
)

// Format is the wire encoding of a generated stream.
type Format string

// The two encodings a Kubernetes watch is served in.
const (
	JSON     Format = "json"
	Protobuf Format = "protobuf"
)

// ContentType is the response Content-Type of a watch in format f.
func (f Format) ContentType() string {
	if f == Protobuf {
		return "application/vnd.kubernetes.protobuf;stream=watch"
	}
	return "application/json"
}

// ListContentType is the response Content-Type of a list in format f.
func (f Format) ListContentType() string {
	if f == Protobuf {
		return "application/vnd.kubernetes.protobuf"
	}
	return "application/json"
}

// Stream is a generated Pod collection: an initial list and the watch
// events that follow it, encoded as the API server sends them.
type Stream struct {
	Format Format
	// List is the encoded PodList of the initial state, at ListRV.
	List   []byte
	ListRV int64
	// Items is the number of Pods in List.
	Items int
	// Watch is the watch body: every event concatenated.
	Watch []byte
	// Events are the events, each a subslice of Watch (a JSON line, or a
	// length-prefixed protobuf WatchEvent).
	Events [][]byte

	watchList []byte // the initial events of WatchList
	once      sync.Once
	full      []byte
}

// WatchList returns the body a streaming list
// (sendInitialEvents=true) answers with: an ADDED event per List item, the
// k8s.io/initial-events-end bookmark at ListRV, then Watch. It is built on
// first use.
func (s *Stream) WatchList() []byte {
	s.once.Do(func() { s.full = append(append([]byte(nil), s.watchList...), s.Watch...) })
	return s.full
}

// Generate returns a Stream of a cluster of pods Pods (listed first), then
// events watch events, in format f. It is deterministic.
//
// podgen's Pods are realistic in shape but deterministic in content: their
// uid, IPs, container IDs and image digests are low-entropy functions of the
// index, and [podgen.WatchEventJSON] cycles 5000 of them, which flatters
// compression. Generate keeps podgen's shape (about 6.6 KB of JSON per
// event) and randomises what varies in a real cluster:
//
//   - per Pod: name suffix, uid, node, host and pod IPs, container IDs,
//     creation time; per Deployment (40 of them): the pod-template-hash,
//     the ReplicaSet's uid and the image digests;
//   - per event: a resourceVersion that only grows, a clock advancing
//     0-3 ms per event, and one change: a readiness flip (conditions and
//     their lastTransitionTime), a container restart (restartCount, a new
//     container ID, lastState), or an annotation update; 3% of events
//     delete a Pod, whose replacement is ADDED next time its slot changes.
//
// Events pick a Pod uniformly at random, so with thousands of Pods the
// previous event of the same Pod is usually further back than zstd's
// window: the compression ratio measured on this stream is not flattered.
func Generate(f Format, pods, events int) *Stream {
	g := newGen(pods)
	s := &Stream{Format: f, ListRV: g.rv, Items: pods}
	enc := newEncoder(f)
	list := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: strconv.FormatInt(g.rv, 10)}}
	for _, sl := range g.slots {
		p := sl.pod.DeepCopy()
		if f == JSON {
			p.TypeMeta = metav1.TypeMeta{} // the API server strips them from JSON list items
		}
		list.Items = append(list.Items, *p)
	}
	s.List = enc.list(list)
	for _, sl := range g.slots {
		s.watchList = append(s.watchList, enc.event("ADDED", sl.pod)...)
	}
	if f == JSON {
		s.watchList = fmt.Appendf(s.watchList, `{"type":"BOOKMARK","object":{"kind":"Pod","apiVersion":"v1","metadata":{"resourceVersion":"%d","annotations":{"k8s.io/initial-events-end":"true"}}}}`+"\n", g.rv)
	} else {
		s.watchList = append(s.watchList, enc.event("BOOKMARK", &corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.FormatInt(g.rv, 10), Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})...)
	}
	offs := make([]int, 0, events+1)
	for range events {
		typ, p := g.next()
		offs = append(offs, len(s.Watch))
		s.Watch = append(s.Watch, enc.event(typ, p)...)
	}
	offs = append(offs, len(s.Watch))
	for i := range events {
		s.Events = append(s.Events, s.Watch[offs[i]:offs[i+1]:offs[i+1]])
	}
	return s
}

type encoder struct {
	f     Format
	proto runtime.Encoder
}

func newEncoder(f Format) *encoder {
	return &encoder{f: f, proto: protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)}
}

func (e *encoder) list(l *corev1.PodList) []byte {
	if e.f == Protobuf {
		b, err := runtime.Encode(e.proto, l)
		if err != nil {
			panic(err) // generated lists always encode
		}
		return b
	}
	b, err := json.Marshal(l)
	if err != nil {
		panic(err)
	}
	return append(b, '\n')
}

// event encodes one watch event as the API server streams it: a JSON line,
// or a 4-byte big-endian length then a metav1.WatchEvent whose object is
// the protobuf-serialized Pod ("k8s\x00" + runtime.Unknown).
func (e *encoder) event(typ string, p *corev1.Pod) []byte {
	if e.f == Protobuf {
		obj, err := runtime.Encode(e.proto, p)
		if err != nil {
			panic(err)
		}
		ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}
		b, err := ev.Marshal()
		if err != nil {
			panic(err)
		}
		return append(binary.BigEndian.AppendUint32(make([]byte, 0, 4+len(b)), uint32(len(b))), b...)
	}
	obj, err := json.Marshal(p)
	if err != nil {
		panic(err)
	}
	return wire.WatchEventJSON(typ, obj)
}

type deployment struct {
	name, hash, rsUID string
	digests           map[string]string // container name -> image digest
}

type slot struct {
	pod     *corev1.Pod
	deleted bool // the next event of this slot ADDs a replacement
}

type gen struct {
	rng   *rand.Rand
	rv    int64
	now   time.Time
	n     int // Pods made so far
	deps  []*deployment
	slots []*slot
}

var deploymentNames = []string{"web", "api", "checkout", "cart", "search", "auth", "billing", "catalog", "frontend", "gateway"}

func newGen(pods int) *gen {
	g := &gen{rng: rand.New(rand.NewPCG(9, 9)), rv: 100000, now: time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)}
	for i := range 40 {
		d := &deployment{name: fmt.Sprintf("%s-%d", deploymentNames[i%len(deploymentNames)], i/len(deploymentNames)),
			hash: g.str(10), rsUID: g.uuid(), digests: map[string]string{}}
		for _, c := range []string{"app", "sidecar", "init"} {
			d.digests[c] = g.hex(64)
		}
		g.deps = append(g.deps, d)
	}
	for range pods {
		g.rv += 1 + g.rng.Int64N(3)
		g.slots = append(g.slots, &slot{pod: g.newPod()})
	}
	return g
}

const alnum = "bcdfghjklmnpqrstvwxz2456789" // the alphabet of generated name suffixes

func (g *gen) str(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = alnum[g.rng.IntN(len(alnum))]
	}
	return string(b)
}

func (g *gen) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[g.rng.IntN(16)]
	}
	return string(b)
}

func (g *gen) uuid() string {
	h := g.hex(32)
	return h[:8] + "-" + h[8:12] + "-4" + h[13:16] + "-a" + h[17:20] + "-" + h[20:]
}

func (g *gen) newPod() *corev1.Pod {
	p := podgen.Pod(g.n, g.rv)
	g.n++
	d := g.deps[g.rng.IntN(len(g.deps))]
	created := metav1.NewTime(g.now.Truncate(time.Second))
	p.Name = d.name + "-" + d.hash + "-" + g.str(5)
	p.GenerateName = d.name + "-" + d.hash + "-"
	p.UID = types.UID(g.uuid())
	p.CreationTimestamp = created
	p.Labels["app"] = d.name
	p.Labels["pod-template-hash"] = d.hash
	p.Annotations["kubectl.kubernetes.io/restartedAt"] = created.Format(time.RFC3339)
	p.OwnerReferences[0].Name = d.name + "-" + d.hash
	p.OwnerReferences[0].UID = types.UID(d.rsUID)
	node := g.rng.IntN(200)
	p.Spec.NodeName = fmt.Sprintf("node-%03d.cluster.example.com", node)
	p.Status.HostIP = fmt.Sprintf("10.0.%d.%d", node/100, 10+node%100)
	p.Status.PodIP = fmt.Sprintf("10.244.%d.%d", g.rng.IntN(256), 1+g.rng.IntN(254))
	p.Status.StartTime = &created
	for i := range p.Status.Conditions {
		p.Status.Conditions[i].LastTransitionTime = created
	}
	for i := range p.Status.ContainerStatuses {
		cs := &p.Status.ContainerStatuses[i]
		cs.ImageID = "registry.example.com/team/" + cs.Name + "@sha256:" + d.digests[cs.Name]
		cs.ContainerID = "containerd://" + g.hex(64)
		cs.State.Running.StartedAt = created
	}
	return p
}

// next returns the next event's type and Pod.
func (g *gen) next() (string, *corev1.Pod) {
	g.rv += 1 + g.rng.Int64N(3)
	g.now = g.now.Add(time.Duration(g.rng.IntN(3000)) * time.Microsecond)
	sl := g.slots[g.rng.IntN(len(g.slots))]
	if sl.deleted {
		sl.pod, sl.deleted = g.newPod(), false
		return "ADDED", sl.pod
	}
	p := sl.pod
	p.ResourceVersion = strconv.FormatInt(g.rv, 10)
	now := metav1.NewTime(g.now.Truncate(time.Second))
	switch r := g.rng.IntN(100); {
	case r < 3:
		p.DeletionTimestamp = &now
		p.DeletionGracePeriodSeconds = ptr(int64(30))
		sl.deleted = true
		return "DELETED", p
	case r < 50: // readiness flips
		st := corev1.ConditionFalse
		if p.Status.Conditions[0].Status == corev1.ConditionFalse {
			st = corev1.ConditionTrue
		}
		for i := range 2 { // Ready, ContainersReady
			p.Status.Conditions[i].Status = st
			p.Status.Conditions[i].LastTransitionTime = now
		}
		for i := range p.Status.ContainerStatuses {
			p.Status.ContainerStatuses[i].Ready = st == corev1.ConditionTrue
		}
	case r < 80: // a container restarts
		cs := &p.Status.ContainerStatuses[g.rng.IntN(len(p.Status.ContainerStatuses))]
		cs.LastTerminationState = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: int32(1 + g.rng.IntN(137)), Reason: "Error", StartedAt: cs.State.Running.StartedAt, FinishedAt: now, ContainerID: cs.ContainerID}}
		cs.RestartCount++
		cs.ContainerID = "containerd://" + g.hex(64)
		cs.State.Running.StartedAt = now
	default: // a controller annotates
		p.Annotations["example.com/last-reconcile"] = now.Format(time.RFC3339) + "/" + g.hex(8)
	}
	return "MODIFIED", p
}

func ptr[T any](v T) *T { return &v }
