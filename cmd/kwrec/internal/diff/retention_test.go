package diff

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
)

// recordingOf is a cassette of one watch of n ConfigMaps with m versions
// each, in rounds, with a 1 KB padding each; version j of object i holds
// data.k differ(i, j).
func recordingOf(n, m int, differ func(i, j int) string) string {
	var s strings.Builder
	s.WriteString(`{"kwrec":1,"recordedAt":"2026-12-01T07:00:00Z","redactions":[]}` + "\n")
	s.WriteString(`{"request":1,"at":"0s","method":"GET","url":"https://h/api/v1/configmaps?watch=true"}` + "\n")
	s.WriteString(`{"response":1,"latency":"1ms","status":200}` + "\n")
	pad := strings.Repeat("x", 1024)
	for j := range m {
		for i := range n {
			fmt.Fprintf(&s, `{"frame":1,"at":"1s","json":{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%03d","namespace":"default","resourceVersion":"%d"},"data":{"k":%q,"pad":%q}}}}`+"\n",
				i, 1+j*n+i, differ(i, j), pad)
		}
	}
	s.WriteString(`{"end":1,"at":"2s","reason":"stopped"}` + "\n")
	return s.String()
}

func TestTheBytesKeptAreTheDifferingVersionsNotTheHistories(t *testing.T) {
	const n = 20
	same := func(i, j int) string { return fmt.Sprintf("a%05d", j) }
	// k versions of B differ: version 3 of the first k objects.
	differing := func(k int) func(i, j int) string {
		return func(i, j int) string {
			if i < k && j == 3 {
				return fmt.Sprintf("b%05d", j)
			}
			return same(i, j)
		}
	}
	// Every version's canonical form has the same size.
	c := canonizer{pats: defaultPatterns(t)}
	canon, err := c.canonical([]byte(fmt.Sprintf(`{"metadata":{"name":"cm-000","namespace":"default"},"data":{"k":"a00000","pad":%q}}`, strings.Repeat("x", 1024))))
	if err != nil {
		t.Fatal(err)
	}
	size := len(canon)
	tests := []struct {
		name string
		m, k int
	}{
		{"no differing version keeps nothing", 200, 0},
		{"one differing version in 20 short histories keeps the two versions of its pair", 10, 1},
		{"one differing version in 20 histories twenty times longer keeps the same", 200, 1},
		{"eight differing versions keep their eight pairs", 10, 8},
		{"eight differing versions in histories twenty times longer keep the same", 200, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			open := func(text string) Opener {
				return func() (Source, error) { return cassettes.NewReader(strings.NewReader(text), "c") }
			}
			r, kept, err := compare(open(recordingOf(n, tt.m, same)), open(recordingOf(n, tt.m, differing(tt.k))), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if changed := 0; !r.Equal {
				changed = len(r.Collections[0].Changed)
				if changed != tt.k {
					t.Errorf("%d objects changed, want %d", changed, tt.k)
				}
			}
			want := retention{versions: 2 * tt.k, bytes: 2 * tt.k * size}
			if kept != want {
				t.Errorf("kept %+v of %d versions of %d bytes, want %+v", kept, 2*n*tt.m, size, want)
			}
		})
	}
}

func TestAVersionKeepsAFewDozenBytesWhateverItsSize(t *testing.T) {
	const n, m = 20, 1000
	text := recordingOf(n, m, func(i, j int) string { return fmt.Sprint(j) })
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	src, err := cassettes.NewReader(strings.NewReader(text), "c")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := read(src, defaultPatterns(t))
	if err != nil {
		t.Fatal(err)
	}
	rec.canon = canonizer{} // its buffers are one object's, not the recording's
	runtime.GC()
	runtime.ReadMemStats(&after)
	versions := 0
	for _, h := range rec.colls["/api/v1/configmaps"] {
		versions += len(h.versions)
	}
	if versions != n*m {
		t.Fatalf("read %d versions, want %d", versions, n*m)
	}
	perVersion := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / int64(versions)
	// A version is 24 bytes, its resourceVersion included (it was 48
	// and a string's, 65 here); the deduplicated histories are cloned
	// to their length. Its 1 KB of JSON is not kept.
	t.Logf("per version %d", perVersion)
	if perVersion > 32 {
		t.Errorf("the recording keeps %d bytes a version of %d bytes of JSON, want at most 32", perVersion, len(text)/versions)
	}
	runtime.KeepAlive(rec)
	runtime.KeepAlive(text)
}

func TestAResourceVersionCodesAndReadsBack(t *testing.T) {
	tests := []struct {
		name     string
		rv       string
		wantText bool // coded as text, not a number
	}{
		{"no resourceVersion", "", false},
		{"zero", "0", false},
		{"kube-apiserver's decimal", "123456", false},
		{"the largest number coded as one", "9223372036854775806", false},
		{"a number too large is text", "9223372036854775807", true},
		{"a leading zero is text", "0123", true},
		{"a sign is text", "+5", true},
		{"an opaque version is text", "a1b2", true},
	}
	var tbl rvTable
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tbl.code(tt.rv)
			if got := c&rvText != 0; got != tt.wantText {
				t.Errorf("code(%q) = %#x: as text %v, want %v", tt.rv, uint64(c), got, tt.wantText)
			}
			if got := tbl.text(c); got != tt.rv {
				t.Errorf("text(code(%q)) = %q", tt.rv, got)
			}
			if again := tbl.code(tt.rv); again != c {
				t.Errorf("code(%q) twice: %#x then %#x, want the same", tt.rv, uint64(c), uint64(again))
			}
		})
	}
}
