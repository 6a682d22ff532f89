package replay_test

import (
	"context"
	"fmt"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// A typed client replays a recorded watch; an edit cuts it with a 410 after
// the first event, as a compacted etcd would.
func Example() {
	c, err := cassettes.Load("testdata/configmaps.kwrec")
	if err != nil {
		panic(err)
	}
	cut, _ := replay.ParseEdit("watch-error:request=2,after=1,code=410")
	r, err := replay.New(c, replay.Options{Edits: []replay.Edit{cut}})
	if err != nil {
		panic(err)
	}
	cs := kubernetes.NewForConfigOrDie(r.Config())
	w, err := cs.CoreV1().ConfigMaps("default").Watch(context.Background(), metav1.ListOptions{ResourceVersion: "100", AllowWatchBookmarks: true})
	if err != nil {
		panic(err)
	}
	for ev := range w.ResultChan() {
		switch o := ev.Object.(type) {
		case *corev1.ConfigMap:
			fmt.Println(ev.Type, o.Name, o.ResourceVersion)
		case *metav1.Status:
			fmt.Println(ev.Type, o.Code, o.Reason)
		}
	}
	// Output:
	// ADDED c 101
	// ERROR 410 Expired
}

func ExampleParseEdit() {
	e, err := replay.ParseEdit("error:request=3,status=503,retry-after=1")
	fmt.Println(e.Kind, e.Request, e.Status, e.RetryAfter, err)
	fmt.Println(e)
	// Output:
	// error 3 503 1 <nil>
	// error:request=3,status=503,retry-after=1
}
