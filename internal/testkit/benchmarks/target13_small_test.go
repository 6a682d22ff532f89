package benchmarks_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/controlplanetest"
)

// The traffic of BenchmarkRecordingsAreSmall: a `kwrec record` of
// configmaps while smallObjects ConfigMaps of smallSize bytes exist, then
// smallUpdates are updated and smallDeletes deleted.
const (
	smallObjects = 2000
	smallSize    = 4 << 10
	smallUpdates = 1000
	smallDeletes = 200
	smallNS      = "size"
	smallEnd     = "kwrec-size-end" // created last: both recorders have it when they have everything
)

// BenchmarkRecordingsAreSmall is target 13 (issue 39): a `kwrec record
// configmaps` (JSON and kubectl's Table form, lists and watches,
// discovery and OpenAPI) of 2,000 ConfigMaps of 4 KB of word-like text
// (four keys of 1 KB), while 1,000 are updated and 200 deleted. An update
// rewrites all four keys with new text (replace: as the committed
// recorded-2000cm recording was made, nothing of a version in the next),
// or one of them (edit), in two sub-benchmarks. Each is recorded by
// default (every frame whole) and with --deltas (object deltas), both
// recording the same changes side by side;
// and the default recording after `kwrec compact`. Each is compared with
// the same traffic as go-vcr v3 YAML compressed by the zstd CLI at -19
// (every interaction, a watch's body its frames end to end, as target 11
// does). Targets: default/go-vcr-zstd19 at most 1, compact at most 0.6.
// Beside them, what the ConfigMaps' texts alone cost at the least
// ([dataFloor]) against the same go-vcr figure: their information as
// drawn, and each compressor's size of them.
// Needs the control plane binaries (skipped without them) and the zstd
// CLI. With $KWREC_BENCH_RECORD_KEEP set, each default recording is kept
// as that name with -edit=false.kwrec.zst or -edit=true.kwrec.zst.
func BenchmarkRecordingsAreSmall(b *testing.B) {
	for _, edit := range []bool{false, true} {
		name := "updates=replace"
		if edit {
			name = "updates=edit"
		}
		b.Run(name, func(b *testing.B) { recordingsAreSmall(b, edit) })
	}
}

// recordingsAreSmall is a sub-benchmark of BenchmarkRecordingsAreSmall,
// an update rewriting one key (edit) or all four.
func recordingsAreSmall(b *testing.B, edit bool) {
	cp := controlplanetest.Start(b)
	cfg := rest.CopyConfig(cp.Config)
	cfg.QPS, cfg.Burst = -1, -1
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: smallNS}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := parallel(smallObjects, 16, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(smallNS).Create(ctx, smallConfigMap(i, 0, edit), metav1.CreateOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	bin := kwrecBinary(b)
	dir := tempDir(b)
	for b.Loop() {
		paths := map[string]string{"default": filepath.Join(dir, "small.kwrec.zst"), "deltas": filepath.Join(dir, "small-deltas.kwrec.zst")}
		recordSmall(b, bin, cp.Kubeconfig, cs, paths, edit)
		b.StopTimer()
		sizes := map[string]int64{}
		for k, p := range paths {
			st, err := os.Stat(p)
			if err != nil {
				b.Fatal(err)
			}
			sizes[k] = st.Size()
		}
		sizes["compact"] = compactSize(b, bin, paths["default"])
		c, err := cassettes.Load(paths["default"])
		if err != nil {
			b.Fatal(err)
		}
		n := countWatchFrames(c)
		b.Logf("%d interactions; JSON watches: %d events; Table watches: %d frames", len(c.Interactions), n.events, n.table)
		for _, k := range []string{"default", "deltas", "compact"} {
			b.ReportMetric(float64(sizes[k])/1e6, "MB-"+k)
		}
		if _, zst := vcrZstd19Of(b, c); zst > 0 {
			b.ReportMetric(float64(zst)/1e6, "MB-go-vcr-yaml-zstd19")
			for _, k := range []string{"default", "deltas", "compact"} {
				b.ReportMetric(float64(sizes[k])/float64(zst), k+"/go-vcr-zstd19")
			}
			// What any recording of this traffic holds at the least: its
			// ConfigMaps' texts, as drawn and as zstd compresses them alone.
			floor := smallDataFloor(b, edit)
			b.ReportMetric(floor.bits/8/1e6, "MB-data-entropy")
			b.ReportMetric(floor.bits/8/float64(zst), "data-entropy/go-vcr-zstd19")
			b.ReportMetric(float64(floor.zstdLong)/float64(zst), "data-zstd19-long/go-vcr-zstd19")
			b.ReportMetric(float64(floor.klauspostBest)/float64(zst), "data-klauspost-best/go-vcr-zstd19")
		}
		if keep := os.Getenv("KWREC_BENCH_RECORD_KEEP"); keep != "" {
			// The default recording, for measuring other forms of it.
			if err := os.Rename(paths["default"], fmt.Sprintf("%s-edit=%v.kwrec.zst", keep, edit)); err != nil {
				b.Fatal(err)
			}
		}
		for _, p := range paths {
			os.Remove(p)
		}
		b.StartTimer()
	}
}

// smallConfigMap is ConfigMap i of target 13 in its version v: four keys
// of a quarter of smallSize each; from version 0, version 1 has new text
// in key i%4 (edit) or in every key.
func smallConfigMap(i, v int, edit bool) *corev1.ConfigMap {
	data := map[string]string{}
	for k := range 4 {
		kv := v
		if edit && k != i%4 {
			kv = 0
		}
		data[fmt.Sprintf("part%d", k)] = fanPayload((i*4+k)*10+kv, smallSize/4)
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%04d", i), Labels: map[string]string{"app": "size", "v": fmt.Sprint(v)}},
		Data: data}
}

// smallTexts are the distinct texts target 13's ConfigMaps ever hold:
// every key of every ConfigMap as created, then what the updates write
// (one key of each updated ConfigMap with edit, all four without).
func smallTexts(edit bool) []string {
	var texts []string
	seen := map[string]bool{}
	add := func(cm *corev1.ConfigMap) {
		for k := range 4 {
			if t := cm.Data[fmt.Sprintf("part%d", k)]; !seen[t] {
				seen[t] = true
				texts = append(texts, t)
			}
		}
	}
	for i := range smallObjects {
		add(smallConfigMap(i, 0, edit))
	}
	for i := range smallUpdates {
		add(smallConfigMap(i, 1, edit))
	}
	return texts
}

// dataFloor is what target 13's ConfigMap texts ([smallTexts]) cost at
// the least, with nothing else of the recording.
type dataFloor struct {
	// bits is their information as drawn: each word one of [fanWords]
	// and a number below [fanNumbers], which no encoding can leave out
	// short of rerunning the generator.
	bits float64
	// zstdLong is `zstd -19 --long=27` of them end to end (0 without the
	// CLI), klauspostBest klauspost's best level with a 16 MiB window
	// (`kwrec compact`'s compressor): the least a cassette holding them
	// can be with either compressor.
	zstdLong, klauspostBest int64
}

// smallDataFloor measures target 13's [dataFloor], an update editing one
// key (edit) or all four.
func smallDataFloor(tb testing.TB, edit bool) dataFloor {
	perWord := math.Log2(float64(len(fanWords)) * fanNumbers)
	var f dataFloor
	var all bytes.Buffer
	for _, t := range smallTexts(edit) {
		f.bits += float64(len(strings.Fields(t))) * perWord
		all.WriteString(t)
		all.WriteByte('\n')
	}
	path := filepath.Join(tempDir(tb), "small-texts.txt")
	if err := os.WriteFile(path, all.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	defer os.Remove(path)
	f.zstdLong = zstd19(tb, path, "--long=27")
	var out countWriter
	enc, err := zstd.NewWriter(&out, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithWindowSize(16<<20), zstd.WithEncoderConcurrency(1))
	if err != nil {
		tb.Fatal(err)
	}
	if _, err := enc.Write(all.Bytes()); err != nil {
		tb.Fatal(err)
	}
	if err := enc.Close(); err != nil {
		tb.Fatal(err)
	}
	f.klauspostBest = out.n
	return f
}

// recordSmall runs a `kwrec record configmaps` per entry of paths (the
// key "deltas" with --deltas) until each has recorded the initial state,
// makes target 13's changes (updates as edit says), then the end marker,
// and interrupts them once both recordings hold it.
func recordSmall(b *testing.B, bin, kubeconfig string, cs kubernetes.Interface, paths map[string]string, edit bool) {
	ctx := context.Background()
	var cmds []*exec.Cmd
	var ready sync.WaitGroup
	for k, p := range paths {
		args := []string{"record", "configmaps", "-n", smallNS, "--kubeconfig", kubeconfig, "-o", p}
		if k == "deltas" {
			args = append(args, "--deltas")
		}
		cmd := exec.Command(bin, args...)
		stderr, err := cmd.StderrPipe()
		if err != nil {
			b.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		cmds = append(cmds, cmd)
		ready.Add(1)
		go func() {
			sc := bufio.NewScanner(stderr)
			once := sync.OnceFunc(ready.Done)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "is recorded; watching") {
					once()
				}
			}
			once()
			io.Copy(io.Discard, stderr)
		}()
	}
	ready.Wait()
	cms := cs.CoreV1().ConfigMaps(smallNS)
	if err := parallel(smallUpdates+smallDeletes, 8, func(k int) error {
		if k < smallUpdates {
			_, err := cms.Update(ctx, smallConfigMap(k, 1, edit), metav1.UpdateOptions{})
			return err
		}
		return cms.Delete(ctx, fmt.Sprintf("cm-%04d", smallObjects-1-(k-smallUpdates)), metav1.DeleteOptions{})
	}); err != nil {
		b.Fatal(err)
	}
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: smallEnd}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	// Both recordings hold the marker in their JSON and Table watches
	// (the recorder flushes every second).
	for _, p := range paths {
		waitHolds(b, p, `"name":"`+smallEnd+`"`, 2)
	}
	for _, cmd := range cmds {
		_ = cmd.Process.Signal(syscall.SIGINT)
		if err := cmd.Wait(); err != nil {
			b.Fatalf("kwrec record: %v", err)
		}
	}
	if err := cms.Delete(ctx, smallEnd, metav1.DeleteOptions{}); err != nil {
		b.Fatal(err)
	}
	// The next round starts from the same world: the deleted ones back,
	// every one at version 0.
	if err := parallel(smallObjects, 16, func(i int) error {
		if i >= smallObjects-smallDeletes {
			_, err := cms.Create(ctx, smallConfigMap(i, 0, edit), metav1.CreateOptions{})
			return err
		}
		if i < smallUpdates {
			_, err := cms.Update(ctx, smallConfigMap(i, 0, edit), metav1.UpdateOptions{})
			return err
		}
		return nil
	}); err != nil {
		b.Fatal(err)
	}
}

// holds reports whether the recording at path, as far as it is flushed,
// holds s at least n times.
func holds(path, s string, n int) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	text, _, _ := cassettes.ReadText(f)
	return bytes.Count(text, []byte(s)) >= n
}

// waitHolds waits until the recording being written at path holds s at
// least n times (see [holds]), reading it every 200 ms, at most two
// minutes.
func waitHolds(tb testing.TB, path, s string, n int) {
	tb.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return holds(path, s, n), nil
	})
	if err != nil {
		tb.Fatalf("%s never recorded %d of %s: %v", path, n, s, err)
	}
}

// parallel runs f(0) ... f(n-1), workers at a time, and returns the first
// error.
func parallel(n, workers int, f func(int) error) error {
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
		return nil
	}
}

func TestTarget13sTextsAreTheCreatedKeysAndWhatTheUpdatesWrite(t *testing.T) {
	tests := []struct {
		name string
		edit bool
		want int
	}{
		{name: "an update rewriting one key adds one text an update", edit: true, want: 4*smallObjects + smallUpdates},
		{name: "an update replacing the data adds four texts an update", edit: false, want: 4*smallObjects + 4*smallUpdates},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			texts := smallTexts(tt.edit)
			if len(texts) != tt.want {
				t.Fatalf("%d distinct texts, want %d", len(texts), tt.want)
			}
			for _, text := range texts[:3] {
				if n := len(text); n < smallSize/4 || n > smallSize/4+16 {
					t.Fatalf("a text of %d bytes, want about %d", n, smallSize/4)
				}
			}
		})
	}
}
