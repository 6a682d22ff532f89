package replay_test

import (
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/replay"
)

// answer is what a replay answered one request, as a client reads it.
type answer struct {
	Status  int
	Type    string
	Body    string
	ReadErr string
}

// ask sends each request in turn to r, as the transport of a client, and
// reads every answer to its end.
func ask(t *testing.T, r *replay.Replayer, reqs []*http.Request) []answer {
	t.Helper()
	var out []answer
	for _, req := range reqs {
		resp, err := r.RoundTrip(req.Clone(ctxT(t)))
		if err != nil {
			out = append(out, answer{ReadErr: err.Error()})
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		a := answer{Status: resp.StatusCode, Type: resp.Header.Get("Content-Type"), Body: string(b)}
		if err != nil {
			a.ReadErr = err.Error()
		}
		out = append(out, a)
	}
	return out
}

func TestNewAndOpenAnswerAlike(t *testing.T) {
	table := func(pathQuery string) *http.Request {
		req := rawRequest(pathQuery)
		req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io,application/json")
		return req
	}
	// The two fixtures, and a real `kwrec record configmaps -n default`
	// of 2,000 ConfigMaps and 1,200 changes: discovery, OpenAPI, lists and
	// Table lists of 4 pages, their watches.
	for _, name := range []string{"configmaps.kwrec", "watchlist.kwrec", "../../internal/testkit/benchmarks/testdata/recorded-2000cm.kwrec.zst"} {
		t.Run(filepath.Base(name), func(t *testing.T) {
			c := fixture(t, name)
			// Reads the recording never answered (views of the
			// timeline: a selected list, gets, kubectl's Table), then
			// every recorded request as it was sent, to its end.
			views := []*http.Request{
				rawRequest(cmPath + "?labelSelector=app%3Ddemo"),
				rawRequest(cmPath + "/a"),
				rawRequest(cmPath + "/nope"),
				table(cmPath),
			}
			reqs := views
			for _, in := range c.Interactions {
				req, err := http.NewRequest(in.Request.Method, in.Request.URL, nil)
				if err != nil {
					t.Fatal(err)
				}
				req.Header = in.Request.Header.Clone()
				reqs = append(reqs, req)
			}
			opts := replay.Options{ErrorWhenExhausted: true}
			mem, err := replay.New(c, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer mem.Close()
			var file *replay.Replayer
			if strings.HasSuffix(name, ".zst") { // the recording itself
				if file, err = replay.Open("testdata/"+name, opts); err != nil {
					t.Fatal(err)
				}
				defer file.Close()
			} else {
				file = fromFile.replayer(t, c, opts)
			}
			want, got := ask(t, file, reqs), ask(t, mem, reqs)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("replay.New answers unlike replay.Open (-Open +New):\n%s", d)
			}
			// The views were answered, not refused: the bodies compared
			// are objects.
			for i, a := range want[:len(views)] {
				if a.Status != http.StatusOK && a.Status != http.StatusNotFound {
					t.Errorf("%s: %d %q %s, want an answer from the timeline", views[i].URL.RequestURI(), a.Status, a.Body, a.ReadErr)
				}
			}
		})
	}
}
