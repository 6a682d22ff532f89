package examplecontroller_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kwrec/kwrec/internal/testkit/examplecontroller"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// An informer controller (a shared informer, a workqueue, a worker) that
// keeps each labelled source's mirror, in two variants: one that logs a
// failed list or watch as client-go's default handler does, and one that
// gives up for good when one fails before its cache has synced (its
// initial sync failing once), a flaw that reads as prudence.

// listThenWatch is a ListWatch whose informer lists and then watches, as
// informers did before client-go's WatchListClient (and do against a
// server without streaming lists): its initial sync is a list.
type listThenWatch struct{ *cache.ListWatch }

// IsWatchListSemanticsUnSupported tells the reflector to list first.
func (listThenWatch) IsWatchListSemanticsUnSupported() bool { return true }

// informerMirror runs the informer controller until ctx ends, or until
// it gives up: with givesUp, at a list or watch error before its
// initial list has come. With lists, its informer lists then watches; else it
// streams its initial list as client-go v0.37 does by default.
func informerMirror(ctx context.Context, cs kubernetes.Interface, lists, givesUp bool) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var lw cache.ListerWatcher = cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", namespace, fields.Everything())
	if lists {
		lw = listThenWatch{lw.(*cache.ListWatch)}
	}
	inf := cache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, cache.Indexers{})
	_ = inf.SetWatchErrorHandlerWithContext(func(ctx context.Context, r *cache.Reflector, err error) {
		// Nothing synced yet. (HasSynced would race: it turns true only
		// once the handlers have had the initial objects, maybe after
		// the watch that follows the list has failed.)
		if givesUp && inf.LastSyncResourceVersion() == "" {
			cancel() // "the cluster is unreachable: stop rather than act on nothing"
			return
		}
		cache.DefaultWatchErrorHandler(ctx, r, err)
	})
	q := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	defer q.ShutDown()
	enqueue := func(obj any) {
		if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
			q.Add(key)
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue})
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return // gave up, or ctx ended
	}
	go func() {
		<-ctx.Done()
		q.ShutDown()
	}()
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		obj, exists, _ := inf.GetStore().GetByKey(key)
		src := corev1.ConfigMap{}
		if exists {
			src = *obj.(*corev1.ConfigMap)
		} else {
			_, src.Name, _ = cache.SplitMetaNamespaceKey(key)
		}
		if src.Labels[examplecontroller.MirrorOf] == "" {
			syncMirror(ctx, cs, correct, src, !exists)
		}
		q.Forget(key)
		q.Done(key)
	}
}

// envInformer names the variant TestExploreAnInformerController explores
// ("lists" or "streams", then "correct" or "givesUp", as "lists/givesUp"),
// set by TestExplorationFindsAnInformerThatGivesUpOnItsInitialSync.
const envInformer = "KWREC_TEST_INFORMER"

func TestExploreAnInformerController(t *testing.T) {
	mode, variant, ok := strings.Cut(os.Getenv(envInformer), "/")
	if !ok {
		t.Skipf("run by TestExplorationFindsAnInformerThatGivesUpOnItsInitialSync with %s set", envInformer)
	}
	replaytest.Explore(t, cassette, replaytest.Faults{}, func(t *testing.T, r *replay.Replayer) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			defer close(done)
			informerMirror(ctx, kubernetes.NewForConfigOrDie(r.Config()), mode == "lists", variant == "givesUp")
		}()
		synctest.Wait() // it has synced the recorded start, or given up
		r.Play()
		<-r.Consumed()
		cancel()
		<-done
	})
}

// TestExplorationFindsAnInformerThatGivesUpOnItsInitialSync explores
// the informer controller in a child test process per variant. The one
// that gives up when its initial sync fails once is caught where that
// sync is a list that fails; the correct one passes every point. Where
// the sync is a streaming list, client-go itself falls back to a list
// when it fails, and the same flaw survives every single fault.
func TestExplorationFindsAnInformerThatGivesUpOnItsInitialSync(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exploration four times in child processes")
	}
	for _, tc := range []struct {
		variant string
		want    []string
	}{
		{"lists/correct", nil},
		{"lists/givesUp", []string{"500@list:configmaps:nth=1", "503@list:configmaps:nth=1"}},
		{"streams/correct", nil},
		{"streams/givesUp", nil},
	} {
		t.Run(tc.variant, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestExploreAnInformerController$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envInformer+"="+tc.variant)
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			var got []string
			for _, m := range failedInformerPoint.FindAllStringSubmatch(string(out), -1) {
				got = append(got, m[1])
			}
			slices.Sort(got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("points failed with the %s informer controller (-want +got):\n%s\n%s", tc.variant, d, lastLines(string(out), 30))
			}
			if (len(got) == 0) != (err == nil) {
				t.Errorf("the child exited with %v, with %d failing points:\n%s", err, len(got), lastLines(string(out), 30))
			}
			if !strings.Contains(string(out), "fault points of "+cassette) {
				t.Errorf("the child explored nothing:\n%s", lastLines(string(out), 30))
			}
		})
	}
}
