package benchmarks_test

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	corev1 "k8s.io/api/core/v1"

	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
)

// listPage is the page size a watcher (and kwrec record) lists in, as
// client-go's reflector does.
const listPage = 500

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
