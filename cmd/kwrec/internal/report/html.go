package report

import (
	"bufio"
	_ "embed"
	"encoding/base64"
	"encoding/json"
	"io"
	"strings"
)

// page is the report's HTML, CSS and JavaScript, hand-written and
// self-contained: the page loads nothing, so it opens offline.
//
//go:embed report.html
var page string

// dataMarker is where WriteHTML puts the report's JSON, inside a
// <script type="application/json">: encoding/json escapes <, > and &, so
// no recorded string can end the script.
const dataMarker = "/*KWREC-DATA*/"

// textsMarker is where WriteHTML puts the object versions' texts: a JSON
// array, gzipped and base64-encoded, which the page inflates with the
// browser's own DecompressionStream (a 100k-event report is 4 times
// smaller so).
const textsMarker = "/*KWREC-TEXTS*/"

// WriteHTML writes r as one HTML page: a zoomable timeline with a lane per
// interaction, hover and click details, object histories with diffs. The
// page writes a JSON summary of what it drew into <pre id="kwrec-selftest">
// (lanes, groups, marks per type, edits, JavaScript errors, render time)
// for tests in a headless browser; the URL fragment #selftest also opens
// one object's details and history and reports whether they rendered.
func (r *Report) WriteHTML(w io.Writer) error {
	head, rest, _ := strings.Cut(page, dataMarker)
	mid, tail, _ := strings.Cut(rest, textsMarker)
	bw := bufio.NewWriterSize(w, 1<<16)
	bw.WriteString(head)
	if err := json.NewEncoder(bw).Encode(r); err != nil {
		return err
	}
	bw.WriteString(mid)
	b64 := base64.NewEncoder(base64.StdEncoding, bw)
	b64.Write(r.Versions.Texts)
	if err := b64.Close(); err != nil {
		return err
	}
	bw.WriteString(tail)
	return bw.Flush()
}
