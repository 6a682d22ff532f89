package examplecontroller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kwrec/kwrec/internal/testkit/examplecontroller"
	"github.com/kwrec/kwrec/replay"
	"github.com/kwrec/kwrec/replay/replaytest"
)

// A hand-written mirror controller (a list, then a watch, its own map of
// sources) with one flaw each, to prove that exploration finds what a
// controller does not survive.
type flaw string

const (
	correct flaw = "correct"
	// swallow409 ignores a 409 on a mirror's write instead of retrying.
	swallow409 flaw = "swallow409"
	// emptyOn503 takes a list that failed with 503 for an empty world.
	emptyOn503 flaw = "emptyOn503"
	// keepAcross410 adds what a re-list holds to the sources it knew,
	// so it never forgets one deleted while its watch was behind.
	keepAcross410 flaw = "keepAcross410"
	// deleteOnGetError takes any failed get of a mirror for a broken
	// mirror, and deletes it (a later change of its source makes it
	// again).
	deleteOnGetError flaw = "deleteOnGetError"
	// exitOnFirstWatchError stops syncing for good when the watch of its
	// initial sync cannot be opened.
	exitOnFirstWatchError flaw = "exitOnFirstWatchError"
	// recreateOn409 deletes a mirror whose update conflicts and creates
	// it again: the world converges, but the mirror's users saw it gone.
	recreateOn409 flaw = "recreateOn409"
)

// loop runs the controller until ctx ends: it lists, syncs every
// source (at the start and after a watch error), deletes the mirrors of
// sources gone, then watches from where the list (or the last event)
// left it, for five minutes, and lists again.
func loop(ctx context.Context, cs kubernetes.Interface, f flaw) {
	cms := cs.CoreV1().ConfigMaps(namespace)
	var lastRV string
	resync, first := true, true
	sources := map[string]corev1.ConfigMap{}
	for ctx.Err() == nil {
		l, err := cms.List(ctx, metav1.ListOptions{})
		switch {
		case err != nil && f == emptyOn503 && apierrors.IsServiceUnavailable(err):
			l = &corev1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: lastRV}}
		case err != nil:
			pause(ctx)
			continue
		}
		lastRV = l.ResourceVersion
		if f != keepAcross410 {
			sources = map[string]corev1.ConfigMap{}
		}
		for _, cm := range l.Items {
			if cm.Labels[examplecontroller.MirrorOf] == "" {
				sources[cm.Name] = cm
			}
		}
		if resync {
			for _, cm := range sources {
				syncMirror(ctx, cs, f, cm, false)
			}
		}
		resync = true
		// The mirrors of sources that are gone.
		if ms, err := cms.List(ctx, metav1.ListOptions{LabelSelector: examplecontroller.MirrorOf}); err == nil {
			for _, m := range ms.Items {
				if _, ok := sources[m.Labels[examplecontroller.MirrorOf]]; !ok {
					_ = cms.Delete(ctx, m.Name, metav1.DeleteOptions{})
				}
			}
		}
		w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV, TimeoutSeconds: ptr.To[int64](300)})
		if err != nil && f == exitOnFirstWatchError && first {
			return
		}
		first = false
		if err != nil {
			pause(ctx)
			continue
		}
		resync = false
		for ev := range w.ResultChan() {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				resync = true
				break // an ERROR event: list again
			}
			lastRV = cm.ResourceVersion
			if ev.Type == watch.Deleted {
				delete(sources, cm.Name)
			} else if cm.Labels[examplecontroller.MirrorOf] == "" {
				sources[cm.Name] = *cm
			}
			syncMirror(ctx, cs, f, *cm, ev.Type == watch.Deleted)
		}
		w.Stop()
	}
}

// pause waits a second (of bubble time) before the next attempt.
func pause(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
	}
}

// syncMirror makes the mirror of src what it should be: its data while src is
// labelled mirror=true, else none.
func syncMirror(ctx context.Context, cs kubernetes.Interface, f flaw, src corev1.ConfigMap, deleted bool) {
	if src.Labels[examplecontroller.MirrorOf] != "" {
		return
	}
	cms := cs.CoreV1().ConfigMaps(namespace)
	name := src.Name + examplecontroller.MirrorSuffix
	for attempt := 0; attempt < 10 && ctx.Err() == nil; attempt++ {
		cur, err := cms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case err != nil && !apierrors.IsNotFound(err) && f == deleteOnGetError:
			_ = cms.Delete(ctx, name, metav1.DeleteOptions{})
			return
		case err != nil && !apierrors.IsNotFound(err):
			pause(ctx)
			continue
		case deleted || src.Labels[examplecontroller.Label] != "true":
			if err == nil {
				err = cms.Delete(ctx, name, metav1.DeleteOptions{})
			} else {
				err = nil
			}
		case err != nil:
			_, err = cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name,
				Labels: map[string]string{examplecontroller.MirrorOf: src.Name}}, Data: src.Data}, metav1.CreateOptions{})
		case !maps(cur.Data, src.Data):
			cur.Data = src.Data
			_, err = cms.Update(ctx, cur, metav1.UpdateOptions{})
		}
		if err == nil || apierrors.IsNotFound(err) || f == swallow409 && apierrors.IsConflict(err) {
			return
		}
		if f == recreateOn409 && apierrors.IsConflict(err) && cur != nil {
			_ = cms.Delete(ctx, name, metav1.DeleteOptions{})
			continue // the next attempt finds it gone and creates it
		}
		if !apierrors.IsConflict(err) && !apierrors.IsTooManyRequests(err) {
			pause(ctx)
		}
	}
}

func maps(a, b map[string]string) bool { return cmp.Equal(a, b) }

// exploreLoop explores the controller with flaw f over the recording.
func exploreLoop(t *testing.T, f flaw) []replaytest.Point {
	return replaytest.Explore(t, cassette, replaytest.Faults{}, func(t *testing.T, r *replay.Replayer) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() { defer close(done); loop(ctx, kubernetes.NewForConfigOrDie(r.Config()), f) }()
		synctest.Wait() // it has listed and synced the recorded start
		r.Play()
		<-r.Consumed()
		cancel()
		<-done
	})
}

// envFlaw names the flaw TestExploreALoopController explores, set by
// TestExplorationFindsWhatEachFlawDoesNotSurvive, which runs it in a
// child process so that its failing points do not fail the parent.
const envFlaw = "KWREC_TEST_FLAW"

func TestExploreALoopController(t *testing.T) {
	f := flaw(os.Getenv(envFlaw))
	if f == "" {
		t.Skipf("run by TestExplorationFindsWhatEachFlawDoesNotSurvive with %s set", envFlaw)
	}
	exploreLoop(t, f)
}

// failedPoint is a failing point's line in `go test -v` output.
var failedPoint = regexp.MustCompile(`(?m)^    --- FAIL: TestExploreALoopController/(\S+)`)

// failedInformerPoint is a failing point's line of TestExploreAnInformerController.
var failedInformerPoint = regexp.MustCompile(`(?m)^    --- FAIL: TestExploreAnInformerController/(\S+)`)

// TestExplorationFindsWhatEachFlawDoesNotSurvive explores the loop
// controller with each flaw in a child test process and compares the
// points that failed there with those the flaw cannot survive; the
// correct controller survives every point.
func TestExplorationFindsWhatEachFlawDoesNotSurvive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the exploration three times in child processes")
	}
	for _, tc := range []struct {
		flaw flaw
		want []string
	}{
		{correct, nil},
		// Its mirror's create, update or delete stays undone.
		{swallow409, []string{"409@create:configmaps:nth=4", "409@delete:configmaps/kwrec-mirror/gamma-mirror:nth=1",
			"409@update:configmaps/kwrec-mirror/alpha-mirror:nth=2"}},
		// The third list is the periodic one, once mirrors exist: taken
		// for an empty world, it deletes them all.
		{emptyOn503, []string{"503@list:configmaps:nth=3"}},
		// Behind at the 410 after 226, its watch never sends epsilon's
		// deletion; the re-list lacks epsilon, but it remembers it.
		{keepAcross410, []string{"410behind@configmaps/kwrec-mirror:rv=226"}},
		// A failed get of a mirror deletes it, at each get where the
		// mirror exists.
		{deleteOnGetError, []string{"500@get:configmaps/kwrec-mirror/alpha-mirror:nth=2", "500@get:configmaps/kwrec-mirror/alpha-mirror:nth=3",
			"500@get:configmaps/kwrec-mirror/delta-mirror:nth=2", "503@get:configmaps/kwrec-mirror/alpha-mirror:nth=2",
			"503@get:configmaps/kwrec-mirror/alpha-mirror:nth=3", "503@get:configmaps/kwrec-mirror/delta-mirror:nth=2"}},
		// The watch of its initial sync refused: it stops, and the run
		// does not settle (client-go retries a 429 and a reset itself).
		{exitOnFirstWatchError, []string{"500@watch-open:configmaps:nth=1", "503@watch-open:configmaps:nth=1"}},
		// It converges, but deleted the mirrors it recreated.
		{recreateOn409, []string{"409@update:configmaps/kwrec-mirror/alpha-mirror:nth=1", "409@update:configmaps/kwrec-mirror/alpha-mirror:nth=2"}},
	} {
		t.Run(string(tc.flaw), func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run", "^TestExploreALoopController$", "-test.v", "-test.count=1")
			cmd.Env = append(os.Environ(), envFlaw+"="+string(tc.flaw))
			out, err := cmd.CombinedOutput()
			var ee *exec.ExitError
			if err != nil && !errors.As(err, &ee) {
				t.Fatal(err)
			}
			var got []string
			for _, m := range failedPoint.FindAllStringSubmatch(string(out), -1) {
				got = append(got, m[1])
			}
			slices.Sort(got)
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("points failed with the %s controller (-want +got):\n%s\n%s", tc.flaw, d, lastLines(string(out), 30))
			}
			if (len(got) == 0) != (err == nil) {
				t.Errorf("the child exited with %v, with %d failing points:\n%s", err, len(got), lastLines(string(out), 30))
			}
		})
	}
}

// TestAFailingPointRerunsAloneAndItsCassetteReproducesIt reruns one
// point of the swallow409 exploration by its subtest name, with
// KWREC_EXPLORE_OUT set: only that point runs, it fails, and the cassette
// it writes, opened with replay.Open, makes the same controller end in a
// world unlike the one the recording alone gives.
func TestAFailingPointRerunsAloneAndItsCassetteReproducesIt(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an exploration in a child process")
	}
	dir := t.TempDir()
	const point = "409@update:configmaps/kwrec-mirror/alpha-mirror:nth=2"
	cmd := exec.Command(os.Args[0], "-test.run", "^TestExploreALoopController$/^"+regexp.QuoteMeta(point)+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envFlaw+"="+string(swallow409), replaytest.EnvExploreOut+"="+dir)
	out, _ := cmd.CombinedOutput()
	ran := regexp.MustCompile(`(?m)^    --- (?:PASS|FAIL): TestExploreALoopController/(\S+)`).FindAllStringSubmatch(string(out), -1)
	if len(ran) != 1 || ran[0][1] != point || !strings.Contains(string(out), "--- FAIL: TestExploreALoopController/"+point) {
		t.Fatalf("rerunning %s by name ran %v; want it alone, failing:\n%s", point, ran, lastLines(string(out), 30))
	}
	written := filepath.Join(dir, "409_update_configmaps_kwrec-mirror_alpha-mirror_nth_2.kwrec.zst")
	world := func(path string) string {
		var w string
		synctest.Test(t, func(t *testing.T) {
			r, err := replay.Open(path, replaytest.BubbleOptions())
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() { defer close(done); loop(ctx, kubernetes.NewForConfigOrDie(r.Config()), swallow409) }()
			synctest.Wait()
			r.Play()
			<-r.Consumed()
			cancel()
			<-done
			objs, err := r.World()
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if o.Resource == "configmaps" {
					var cm corev1.ConfigMap
					if err := json.Unmarshal(o.JSON, &cm); err != nil {
						t.Fatal(err)
					}
					w += fmt.Sprintf("%s %v\n", cm.Name, cm.Data)
				}
			}
		})
		return w
	}
	clean, faulty := world(replaytest.Path(cassette)), world(written)
	if clean == faulty {
		t.Errorf("%s replays to the world of the recording alone:\n%s", written, clean)
	}
	t.Logf("the recording alone:\n%sthe written cassette:\n%s", clean, faulty)
}

func lastLines(s string, n int) string {
	re := regexp.MustCompile(`\n`)
	idx := re.FindAllStringIndex(s, -1)
	if len(idx) <= n {
		return s
	}
	return s[idx[len(idx)-n-1][1]:]
}
