package replay_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay"
)

// serverToken is a continue token as kube-apiserver writes it.
func serverToken(rv int, start string) string {
	b, _ := json.Marshal(struct {
		V     string `json:"v"`
		RV    int    `json:"rv"`
		Start string `json:"start"`
	}{"meta.k8s.io/v1", rv, start})
	return base64.RawURLEncoding.EncodeToString(b)
}

// pagedCassette is a list of c0-c4 at resourceVersion 100 recorded in
// pages of two, each page after the first asked with the server's token
// of the one before, then a watch from 100 that modifies c0 (101).
func pagedCassette() *cassettes.Cassette {
	c := &cassettes.Cassette{Header: cassettes.Header{Version: 1}}
	json := http.Header{"Content-Type": {"application/json"}}
	cont := ""
	for page := range 3 {
		var items []string
		for i := 2 * page; i < min(2*page+2, 5); i++ {
			items = append(items, cmJSON(fmt.Sprintf("c%d", i), 90+i, "v"))
		}
		q := url.Values{"limit": {"2"}}
		if cont != "" {
			q.Set("continue", cont)
		}
		md, next := `"resourceVersion":"100"`, ""
		if page < 2 {
			next = serverToken(100, fmt.Sprintf("c%d\x00", 2*page+1))
			md += fmt.Sprintf(`,"continue":%q,"remainingItemCount":%d`, next, 3-2*page)
		}
		c.Interactions = append(c.Interactions, &cassettes.Interaction{
			ID:       len(c.Interactions) + 1,
			Request:  cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443" + cmPath + "?" + q.Encode(), Header: http.Header{"Accept": {"application/json"}}},
			Response: &cassettes.Response{Status: 200, Header: json},
			Frames:   []cassettes.Frame{{Data: []byte(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{` + md + `},"items":[` + strings.Join(items, ",") + "]}\n")}},
			End:      &cassettes.End{Reason: cassettes.EndEOF},
		})
		cont = next
	}
	w := watchCassette(cassettes.EndStopped, eventFrame(time.Second, "MODIFIED", cmJSON("c0", 101, "w"))).Interactions[0]
	w.ID = len(c.Interactions) + 1
	c.Interactions = append(c.Interactions, w)
	return c
}

// listPage is a list answer reduced to what paging is about.
type listPage struct {
	Status    int
	Names     []string
	RV        string
	Continue  string
	Remaining int64
	Message   string
}

func getPage(t *testing.T, r *replay.Replayer, query string) listPage {
	t.Helper()
	resp, err := r.RoundTrip(rawRequest(cmPath + "?" + query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var l struct {
		Metadata struct {
			ResourceVersion    string `json:"resourceVersion"`
			Continue           string `json:"continue"`
			RemainingItemCount *int64 `json:"remainingItemCount"`
		} `json:"metadata"`
		Items   []struct{ Metadata metav1.ObjectMeta } `json:"items"`
		Message string                                 `json:"message"`
	}
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	p := listPage{Status: resp.StatusCode, RV: l.Metadata.ResourceVersion, Continue: l.Metadata.Continue, Message: l.Message}
	if l.Metadata.RemainingItemCount != nil {
		p.Remaining = *l.Metadata.RemainingItemCount
	}
	for _, it := range l.Items {
		p.Names = append(p.Names, it.Metadata.Name)
	}
	return p
}

func TestAServersContinueTokenResumesInAPageTheReplayMakes(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		r := src.replayer(t, pagedCassette(), replay.Options{})
		// Page 1 is the recorded one, byte for byte: the server's token.
		first := getPage(t, r, "limit=2")
		if want := (listPage{Status: 200, Names: []string{"c0", "c1"}, RV: "100", Continue: serverToken(100, "c1\x00"), Remaining: 3}); !cmp.Equal(want, first) {
			t.Fatalf("page 1 = %+v, want %+v", first, want)
		}
		// Pages of another size are not recorded: the replay reads the
		// server's token and makes them, at the list's resourceVersion.
		second := getPage(t, r, "limit=3&continue="+url.QueryEscape(first.Continue))
		if want := (listPage{Status: 200, Names: []string{"c2", "c3", "c4"}, RV: "100"}); !cmp.Equal(want, second) {
			t.Errorf("page 2 = %+v, want %+v", second, want)
		}
		// A token of the replay's own, after the replay played the watch
		// past 100: still the state at 100.
		mine := getPage(t, r, "limit=1&resourceVersion=100&resourceVersionMatch=Exact")
		w, err := clientset(t, r.Config()).CoreV1().ConfigMaps("default").Watch(ctxT(t), metav1.ListOptions{ResourceVersion: "100"})
		if err != nil {
			t.Fatal(err)
		}
		recv(t, w, 1)
		w.Stop()
		if got := getPage(t, r, "limit=2"); got.RV != "101" {
			t.Fatalf("a list after the watch is at %s, want 101", got.RV)
		}
		rest := getPage(t, r, "limit=10&continue="+url.QueryEscape(mine.Continue))
		if want := (listPage{Status: 200, Names: []string{"c1", "c2", "c3", "c4"}, RV: "100"}); !cmp.Equal(want, rest) {
			t.Errorf("the rest of a page made before the watch = %+v, want %+v", rest, want)
		}
	})
}

func TestAnExpireContinueEditIsTheServersAnswerToACompactedToken(t *testing.T) {
	forEachSource(t, func(t *testing.T, src source) {
		e, err := replay.ParseEdit("expire-continue:resource=configmaps,nth=1")
		if err != nil {
			t.Fatal(err)
		}
		r := src.replayer(t, pagedCassette(), replay.Options{Edits: []replay.Edit{e}})
		log := &requestLog{next: r}
		cfg := r.Config()
		cfg.Transport = log
		cms := clientset(t, cfg).CoreV1().ConfigMaps("default")
		p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) { return cms.List(ctx, o) })
		p.PageSize = 2
		l, _, err := p.List(ctxT(t), metav1.ListOptions{})
		if err != nil {
			t.Fatalf("the pager did not fall back to a full list: %v", err)
		}
		var names []string
		meta.EachListItem(l, func(o runtime.Object) error {
			names = append(names, o.(*corev1.ConfigMap).Name)
			return nil
		})
		if want := []string{"c0", "c1", "c2", "c3", "c4"}; !cmp.Equal(want, names) {
			t.Errorf("the pager listed %v, want %v\n%s", names, want, log)
		}
		if reps := r.Edits(); reps[0].Fired != 1 {
			t.Errorf("%s", reps[0])
		}
		// The next continued list is the edit's no more.
		second := getPage(t, r, "limit=2&continue="+url.QueryEscape(serverToken(100, "c1\x00")))
		if second.Status != 200 || len(second.Names) != 2 {
			t.Errorf("a second continued list = %+v, want a page", second)
		}
	})
}

func TestAnExpiredContinueIsAnsweredAsTheServerDoes(t *testing.T) {
	e, _ := replay.ParseEdit("expire-continue:resource=configmaps")
	r, err := replay.New(pagedCassette(), replay.Options{Edits: []replay.Edit{e}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := getPage(t, r, "limit=2&continue="+url.QueryEscape(serverToken(100, "c1\x00")))
	want := listPage{Status: http.StatusGone, Continue: serverToken(-1, "/c1\x00"),
		Message: "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list."}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("the expired page (-want +got):\n%s", d)
	}
	// The Status's token continues in the latest state.
	if rest := getPage(t, r, "continue="+url.QueryEscape(got.Continue)); !cmp.Equal(rest.Names, []string{"c2", "c3", "c4"}) {
		t.Errorf("continuing with the Status's token = %+v", rest)
	}
}

// TestAViewSendsTheWarningsTheServerSentWithTheCollection: kube-apiserver
// sends a deprecated API's warning with every answer about it, so a page
// the replay makes carries the recorded one as the recorded page does.
func TestAViewSendsTheWarningsTheServerSentWithTheCollection(t *testing.T) {
	const warning = `299 - "v1 ConfigMap is deprecated in v9.99+"`
	forEachSource(t, func(t *testing.T, src source) {
		c := pagedCassette()
		for _, in := range c.Interactions {
			in.Response.Header = http.Header{"Content-Type": {"application/json"}, "Warning": {warning}}
		}
		r := src.replayer(t, c, replay.Options{})
		for _, query := range []string{"limit=2", "limit=3", "limit=3&continue=" + url.QueryEscape(serverToken(100, "c1\x00")), "watch=true&resourceVersion=100"} {
			req := rawRequest(cmPath + "?" + query)
			ctx, cancel := context.WithCancel(ctxT(t))
			resp, err := r.RoundTrip(req.WithContext(ctx))
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			cancel()
			if got := resp.Header.Values("Warning"); !cmp.Equal(got, []string{warning}) {
				t.Errorf("%s: Warning %q, want %q", query, got, warning)
			}
		}
	})
}
