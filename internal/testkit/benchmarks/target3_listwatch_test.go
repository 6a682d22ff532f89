package benchmarks_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"gopkg.in/dnaeon/go-vcr.v3/cassette"
	"gopkg.in/yaml.v3"
	corev1 "k8s.io/api/core/v1"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

// listPage is the page size a watcher (and kwrec record) lists in, as
// client-go's reflector does.
const listPage = 500

// exchange is one recorded HTTP exchange of a list-and-watch: its URL and
// the frames of its body.
type exchange struct {
	url    string
	frames [][]byte
}

// listAndWatch is what a client that lists and then watches the 20k-event
// Pods of target 3 receives, and what kwrec record records of them: the
// initial state in pages of listPage Pods (limit and continue), then the
// watch from the list's resourceVersion.
var listAndWatch = sync.OnceValue(func() []exchange {
	s := stream(benchmarks.JSON, 5000, 20_000)
	var l corev1.PodList
	if err := json.Unmarshal(s.List, &l); err != nil {
		panic(err)
	}
	const base = "https://127.0.0.1:6443/api/v1/pods"
	var out []exchange
	cont := ""
	for i := 0; i < len(l.Items); i += listPage {
		page := l
		page.Items = l.Items[i:min(i+listPage, len(l.Items))]
		page.Continue = ""
		page.RemainingItemCount = nil
		if rest := int64(len(l.Items) - i - len(page.Items)); rest > 0 {
			page.Continue = fmt.Sprintf("page-%d", i/listPage+1)
			page.RemainingItemCount = &rest
		}
		b, err := json.Marshal(&page)
		if err != nil {
			panic(err)
		}
		u := base + "?limit=" + strconv.Itoa(listPage)
		if cont != "" {
			u += "&continue=" + cont
		}
		out = append(out, exchange{url: u, frames: [][]byte{append(b, '\n')}})
		cont = page.Continue
	}
	watch := base + "?allowWatchBookmarks=true&resourceVersion=" + strconv.FormatInt(s.ListRV, 10) + "&watch=true"
	return append(out, exchange{url: watch, frames: s.Events})
})

// writeExchanges writes exs as a cassette to out with the Writer's options
// opts, flushing every 1000 watch events, and returns the raw bytes of
// their bodies.
func writeExchanges(tb testing.TB, out io.Writer, exs []exchange, opts cassettes.WriterOptions) int64 {
	opts.FlushInterval = time.Hour
	w, err := cassettes.NewWriter(out, cassettes.Header{}, opts)
	if err != nil {
		tb.Fatal(err)
	}
	var raw int64
	at := time.Duration(0)
	for _, ex := range exs {
		id, err := w.Request(at, cassettes.Request{Method: "GET", URL: ex.url, Header: map[string][]string{"Accept": {"application/json"}}})
		if err != nil {
			tb.Fatal(err)
		}
		w.Response(id, cassettes.Response{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}})
		for i, f := range ex.frames {
			raw += int64(len(f))
			if err := w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: f}); err != nil {
				tb.Fatal(err)
			}
			if i%1000 == 999 {
				w.Flush()
			}
		}
		end := time.Duration(len(ex.frames)) * time.Millisecond
		w.End(id, cassettes.End{At: end, Reason: cassettes.EndEOF})
		at += end
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	return raw
}

// exchangesYAML is exs as a go-vcr v3 cassette holds them: an interaction
// each, its body the frames end to end.
func exchangesYAML(tb testing.TB, exs []exchange) []byte {
	vc := cassette.Cassette{Version: cassette.CassetteFormatV2}
	for _, ex := range exs {
		vc.Interactions = append(vc.Interactions, &cassette.Interaction{
			Request: cassette.Request{Method: "GET", URL: ex.url, Headers: map[string][]string{"Accept": {"application/json"}}},
			Response: cassette.Response{Code: 200, Headers: map[string][]string{"Content-Type": {"application/json"}},
				Body: string(bytes.Join(ex.frames, nil))},
		})
	}
	out, err := yaml.Marshal(&vc)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// listAndWatchZstd19 is the size of listAndWatch's go-vcr YAML compressed
// with `zstd -19`, or 0 without the CLI; measured once per process.
var listAndWatchZstd19 = sync.OnceValue(func() int64 {
	if _, err := exec.LookPath("zstd"); err != nil {
		return 0
	}
	dir, err := os.MkdirTemp("", "kwrec-bench-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "list-watch.yaml")
	if err := os.WriteFile(path, exchangesYAML(panicTB{}, listAndWatch()), 0o644); err != nil {
		panic(err)
	}
	var out countWriter
	cmd := exec.Command("zstd", "-19", "-q", "-c", path)
	cmd.Stdout = &out
	if err := cmd.Run(); err != nil {
		panic(err)
	}
	return out.n
})

// sizeListWatch20k is the list+watch case of BenchmarkCassettesAreSmall:
// target 3's 20k-event Pods as a client lists and watches them (the list
// in pages of 500 first), against go-vcr YAML + `zstd -19` of the same
// exchanges.
func sizeListWatch20k(b *testing.B, opts cassettes.WriterOptions) {
	exs := listAndWatch()
	ref := listAndWatchZstd19()
	var out countWriter
	var raw int64
	for b.Loop() {
		out = countWriter{}
		raw = writeExchanges(b, &out, exs, opts)
	}
	b.SetBytes(raw)
	b.ReportMetric(float64(out.n)/1e6, "MB-cassette")
	if ref > 0 {
		b.ReportMetric(float64(ref)/1e6, "MB-go-vcr-yaml-zstd19")
		b.ReportMetric(float64(out.n)/float64(ref), "cassette/go-vcr-zstd19")
	}
}
