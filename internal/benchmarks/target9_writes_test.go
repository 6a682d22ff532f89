package benchmarks

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kwrec/kwrec/replay"
)

// BenchmarkOverlayWritesOnARecording measures one create and one delete of
// a ConfigMap through a typed client, in process, on the overlay of a real
// recording of 2,000 ConfigMaps of 4 KB (testdata/recorded-2000cm.kwrec.zst):
// with kwrec's garbage collector, which looks for the dependents of what
// each delete removed, and without it.
func BenchmarkOverlayWritesOnARecording(b *testing.B) {
	for _, gc := range []bool{true, false} {
		b.Run(fmt.Sprintf("gc=%v", gc), func(b *testing.B) {
			r, err := replay.Open("testdata/recorded-2000cm.kwrec.zst", replay.Options{Writes: replay.WritesOverlay, DisableGarbageCollection: !gc})
			if err != nil {
				b.Fatal(err)
			}
			defer r.Close()
			cs := kubernetes.NewForConfigOrDie(r.Config())
			ctx := context.Background()
			l, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 1})
			if err != nil || len(l.Items) == 0 {
				b.Fatalf("the recording lists no ConfigMap: %v", err)
			}
			cms := cs.CoreV1().ConfigMaps(l.Items[0].Namespace)
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
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
