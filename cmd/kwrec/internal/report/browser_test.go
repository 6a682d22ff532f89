package report_test

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cmd/kwrec/internal/report"
	"github.com/kwrec/kwrec/replay"
)

// selftest is what the page writes into <pre id="kwrec-selftest">.
type selftest struct {
	Lanes           int            `json:"lanes"`
	Groups          int            `json:"groups"`
	Frames          int            `json:"frames"`
	Marks           map[string]int `json:"marks"`
	Edits           int            `json:"edits"`
	EditsPlaced     int            `json:"editsPlaced"`
	ParseMs         int            `json:"parseMs"`
	RenderMs        int            `json:"renderMs"`
	Errors          []string       `json:"errors"`
	Selected        string         `json:"selected"`
	DiffLines       int            `json:"diffLines"`
	HistoryVersions int            `json:"historyVersions"`
	TextsMs         int            `json:"textsMs"`
	Serve           string         `json:"serve"`
}

// chromium returns the headless browser's path, skipping the test when
// there is none (failing under KWREC_REQUIRE_CONTROLPLANE=1, where every
// end-to-end dependency must be present).
func chromium(tb testing.TB) string {
	tb.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("KWREC_REQUIRE_CONTROLPLANE") == "1" {
		tb.Fatal("no chromium on PATH (KWREC_REQUIRE_CONTROLPLANE=1): apt-get install chromium")
	}
	tb.Skip("no chromium on PATH: install Debian's chromium package to render reports headless")
	return ""
}

// headless runs chromium on the page at file with the URL fragment frag
// and returns its stdout and how long it took.
func headless(tb testing.TB, bin, file, frag string, args ...string) ([]byte, time.Duration) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all := append([]string{"--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--user-data-dir=" + tb.TempDir(), "--window-size=1400,900",
		// wait for the page's promises (inflating the objects) before
		// dumping the DOM or taking the screenshot
		"--virtual-time-budget=60000"}, args...)
	all = append(all, "file://"+file+frag)
	cmd := exec.CommandContext(ctx, bin, all...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		tb.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return out, time.Since(start)
}

var selftestRE = regexp.MustCompile(`<pre id="kwrec-selftest">([^<]*)</pre>`)

func readSelftest(tb testing.TB, dom []byte) selftest {
	tb.Helper()
	m := selftestRE.FindSubmatch(dom)
	if m == nil {
		tb.Fatalf("the page wrote no selftest summary; DOM starts:\n%.2000s", dom)
	}
	var s selftest
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &s); err != nil {
		tb.Fatalf("selftest %s: %v", m[1], err)
	}
	return s
}

// TestReportRendersInChromium renders the report of a cassette recorded
// from a real control plane (kube-apiserver v1.37.2: configmaps and
// serviceaccounts, streaming lists, kubectl's Table lists and discovery)
// with a 410 the cassette stores and one given as a flag, in headless
// Chromium: the DOM after the scripts ran must show every lane, marks of
// each recorded event type, both edits, a diff and a history, and no
// JavaScript error. KWREC_UPDATE_DOCS=1 copies the screenshot to
// docs/report.png.
func TestReportRendersInChromium(t *testing.T) {
	bin := chromium(t)
	e, err := replay.ParseEdit("watch-error:resource=configmaps,rv=220,code=410")
	if err != nil {
		t.Fatal(err)
	}
	r, err := report.Build("testdata/live-410.kwrec.zst", report.Options{Edits: []replay.Edit{e}})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "report.html")
	writeHTML(t, r, file)

	dom, _ := headless(t, bin, file, "#selftest", "--dump-dom")
	s := readSelftest(t, dom)
	if len(s.Errors) > 0 {
		t.Errorf("the page logged JavaScript errors: %q", s.Errors)
	}
	if s.Lanes != len(r.Lanes) || s.Groups != len(r.Groups) || s.Lanes < 10 {
		t.Errorf("drew %d lanes in %d groups, want %d in %d", s.Lanes, s.Groups, len(r.Lanes), len(r.Groups))
	}
	for _, typ := range []string{report.TypeAdded, report.TypeModified, report.TypeDeleted, report.TypeBookmark, report.TypeList, report.TypeOther} {
		if s.Marks[typ] == 0 {
			t.Errorf("no %s mark drawn (marks %v)", typ, s.Marks)
		}
	}
	if s.Edits != 2 || s.EditsPlaced != 2 {
		t.Errorf("edits %d, drawn %d; want the cassette's 410 and the flag's, both drawn", s.Edits, s.EditsPlaced)
	}
	if s.DiffLines == 0 || s.HistoryVersions < 2 {
		t.Errorf("selected %q: %d diff lines, history of %d versions; want a diff and a history", s.Selected, s.DiffLines, s.HistoryVersions)
	}
	if want := regexp.MustCompile(`^kwrec serve 'live-410.kwrec.zst' --at rv=\d+ --paused --kubeconfig-out at.kubeconfig$`); !want.MatchString(s.Serve) {
		t.Errorf("the selected mark offers %q, want the kwrec serve command that opens the recording at its resourceVersion", s.Serve)
	}
	t.Logf("selftest: %+v", s)

	shot := filepath.Join(t.TempDir(), "report.png")
	headless(t, bin, file, "#select=MODIFIED", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	if b := img.Bounds(); b.Dx() != 1400 || b.Dy() != 900 {
		t.Errorf("screenshot is %v, want 1400x900", b)
	}
	if os.Getenv("KWREC_UPDATE_DOCS") == "1" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile("../../../../docs/report.png", data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func writeHTML(tb testing.TB, r *report.Report, file string) {
	tb.Helper()
	f, err := os.Create(file)
	if err != nil {
		tb.Fatal(err)
	}
	if err := r.WriteHTML(f); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}
