package benchmarks

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/kwrec/kwrec/replay"
)

// BenchmarkOverlayWritesOnARecording measures one create and one delete of
// a ConfigMap through a typed client, in process, on the overlay of a real
// recording of 2,000 ConfigMaps of 4 KB (testdata/recorded-2000cm.kwrec.zst):
// with kwrec's garbage collector, which looks for the dependents of what
// each delete removed, and without it. The overlay numbers its writes
// between the recording's resourceVersions, which leave room for fewer
// than 1,000 before the next recorded event, so a new replay is opened,
// off the clock, every writesPerReplay iterations.
func BenchmarkOverlayWritesOnARecording(b *testing.B) {
	const writesPerReplay = 400 // iterations: 800 writes
	for _, gc := range []bool{true, false} {
		b.Run(fmt.Sprintf("gc=%v", gc), func(b *testing.B) {
			opts := replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: !gc}
			var r *replay.Replayer
			var cms typedcorev1.ConfigMapInterface
			defer func() {
				if r != nil {
					r.Close()
				}
			}()
			ctx := context.Background()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if i%writesPerReplay == 0 {
					b.StopTimer()
					if r != nil {
						r.Close()
					}
					r, cms = overlayConfigMaps(b, opts)
					b.StartTimer()
				}
				name := fmt.Sprintf("bench-%d", i)
				if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
					b.Fatal(err)
				}
				if err := cms.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// overlayConfigMaps opens a replay of the 2,000 ConfigMaps with opts and
// returns it with a client of the namespace of the first of them.
func overlayConfigMaps(b *testing.B, opts replay.Options) (*replay.Replayer, typedcorev1.ConfigMapInterface) {
	r, err := replay.Open("testdata/recorded-2000cm.kwrec.zst", opts)
	if err != nil {
		b.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(r.Config())
	l, err := cs.CoreV1().ConfigMaps("").List(context.Background(), metav1.ListOptions{Limit: 1})
	if err != nil || len(l.Items) == 0 {
		r.Close()
		b.Fatalf("the recording lists no ConfigMap: %v", err)
	}
	return r, cs.CoreV1().ConfigMaps(l.Items[0].Namespace)
}
