package report_test

import (
	"fmt"
	"io"
	"log"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/report"
	"github.com/kwrec/kwrec/replay"
)

// Build a cassette's report with a 410 injected after the watch's first
// frame, then write the HTML page.
func Example() {
	e, err := replay.ParseEdit("watch-error:request=2,after=1,code=410")
	if err != nil {
		log.Fatal(err)
	}
	r, err := report.Build("../../../../replay/testdata/configmaps.kwrec", report.Options{Edits: []replay.Edit{e}})
	if err != nil {
		log.Fatal(err)
	}
	for _, g := range r.Groups {
		fmt.Printf("%s: %d lanes\n", g.Name, len(g.Lanes))
	}
	for _, ed := range r.Edits {
		fmt.Printf("%s at %s, drawn on lane %d\n", ed.Edit, ed.Where, ed.Places[0].Lane)
	}
	if err := r.WriteHTML(io.Discard); err != nil {
		log.Fatal(err)
	}
	// Output:
	// /api/v1/namespaces/default/configmaps: 2 lanes
	// watch-error:request=2,after=1,code=410 at interaction 2 after frame 1 (/api/v1/namespaces/default/configmaps at resourceVersion 101), drawn on lane 1
}
