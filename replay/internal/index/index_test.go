package index_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// testdata holds the fixtures of package cassettes.
const testdata = "../../../cassettes/testdata"

// indexForms writes every fixture and the generated cassette in each form
// an Index reads, and returns their paths by test name.
func indexForms(t *testing.T) map[string]string {
	dir := t.TempDir()
	forms := map[string]string{}
	sources := map[string]*cassettes.Cassette{"generated": cassettetest.Generated()}
	for _, f := range cassettetest.Fixtures {
		p := filepath.Join(testdata, f)
		forms[f+"/plain"] = p
		sources[f] = cassettetest.Load(t, p)
	}
	for name, c := range sources {
		for _, seg := range []int{0, 64, 1000, -1} {
			p := filepath.Join(dir, fmt.Sprintf("%s.seg%d.kwrec.zst", name, seg))
			cassettetest.WriteInterleaved(t, p, c, cassettes.WriterOptions{SegmentSize: seg})
			forms[fmt.Sprintf("%s/zstd segments of %d", name, seg)] = p
		}
		p := filepath.Join(dir, name+".kwrec")
		cassettetest.WriteInterleaved(t, p, c, cassettes.WriterOptions{})
		forms[name+"/plain interleaved"] = p
		// Rotated into parts, read as one through a pattern.
		cassettetest.WriteInterleaved(t, filepath.Join(dir, name+".rot.kwrec.zst"), c, cassettes.WriterOptions{SegmentSize: 1000, MaxSize: 1500})
		forms[name+"/zstd parts"] = filepath.Join(dir, name+".rot-*.kwrec.zst")
		cassettetest.WriteInterleaved(t, filepath.Join(dir, name+".rot.kwrec"), c, cassettes.WriterOptions{MaxSize: 3000})
		forms[name+"/plain parts"] = filepath.Join(dir, name+".rot-*.kwrec")
	}
	return forms
}

// skeleton is what an index of c holds: its interactions without frame
// bytes. Compare it with ignoreLocations.
func skeleton(c *cassettes.Cassette) []*index.Interaction {
	var out []*index.Interaction
	for _, in := range c.Interactions {
		sk := &index.Interaction{ID: in.ID, At: in.At, Request: in.Request, Response: in.Response, End: in.End}
		for _, f := range in.Frames {
			sk.Frames.Append(index.Frame{At: f.At})
		}
		out = append(out, sk)
	}
	return out
}

var ignoreLocations = cmp.Options{
	cmp.Transformer("Slice", func(l index.FrameList) []index.Frame { return l.Slice() }),
	cmpopts.IgnoreUnexported(index.Frame{}, index.Interaction{}), // where frames and delta bases are
}

func readAll(t *testing.T, x *index.Index, in *index.Interaction, from int) []cassettes.Frame {
	t.Helper()
	fr, err := x.Frames(in, from)
	if err != nil {
		t.Fatal(err)
	}
	defer fr.Close()
	var got []cassettes.Frame
	for {
		f, err := fr.Next()
		if err == io.EOF {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, f)
	}
}

func TestAnIndexHasLoadsStructureAndReadsBackEveryFrame(t *testing.T) {
	for name, path := range indexForms(t) {
		t.Run(name, func(t *testing.T) {
			want := cassettetest.Load(t, path)
			x, err := index.Open(path, index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			if diff := cmp.Diff(want.Header, x.Header); diff != "" {
				t.Fatalf("the index's header differs from Load's (-Load +index):\n%s", diff)
			}
			if diff := cmp.Diff(skeleton(want), x.Interactions, ignoreLocations); diff != "" {
				t.Fatalf("the index's structure differs from Load's (-Load +index):\n%s", diff)
			}
			var refs []index.FrameRef
			for k, in := range x.Interactions {
				wf := want.Interactions[k].Frames
				if diff := cmp.Diff(wf, readAll(t, x, in, 0), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("interaction %d: frames from 0 differ (-Load +index):\n%s", in.ID, diff)
				}
				mid := len(wf) / 2
				if diff := cmp.Diff(wf[mid:], readAll(t, x, in, mid), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("interaction %d: frames from %d differ (-Load +index):\n%s", in.ID, mid, diff)
				}
				for i := range in.Frames.Len() {
					refs = append(refs, index.FrameRef{In: in, I: i})
				}
			}
			pos := map[*index.Interaction]int{}
			for k, in := range x.Interactions {
				pos[in] = k
			}
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(refs), func(a, b int) { refs[a], refs[b] = refs[b], refs[a] })
			seen := make([]bool, len(refs))
			err = x.ReadFrames(refs, func(k int, f cassettes.Frame) error {
				r := refs[k]
				if seen[k] {
					t.Errorf("ref %d read twice", k)
				}
				seen[k] = true
				if diff := cmp.Diff(want.Interactions[pos[r.In]].Frames[r.I], f); diff != "" {
					t.Errorf("ReadFrames: frame %d of interaction %d differs (-Load +index):\n%s", r.I, r.In.ID, diff)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for k, ok := range seen {
				if !ok {
					t.Errorf("ReadFrames skipped ref %d", k)
				}
			}
		})
	}
}

func TestVisitSeesEveryFrameOnceInFileOrder(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "g.kwrec.zst")
	cassettetest.WriteInterleaved(t, path, cassettetest.Generated(), cassettes.WriterOptions{SegmentSize: 512})
	type visit struct {
		ID, I int
		F     cassettes.Frame
	}
	var want []visit
	r, err := cassettes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	n := map[int]int{}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Frame != nil {
			want = append(want, visit{e.ID, n[e.ID], *e.Frame})
			n[e.ID]++
		}
	}
	r.Close()
	var got []visit
	x, err := index.Open(path, index.Options{Visit: func(in *index.Interaction, i int, f cassettes.Frame) error {
		if in.Response == nil || in.Frames.Len() != i+1 {
			t.Errorf("visit of frame %d of interaction %d: response %v, %d frames so far", i, in.ID, in.Response, in.Frames.Len())
		}
		got = append(got, visit{in.ID, i, cassettes.Frame{At: f.At, Data: bytes.Clone(f.Data)}})
		return nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	x.Close()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("visits differ from the streamed frames (-want +got):\n%s", diff)
	}

	stop := errors.New("enough")
	calls := 0
	x, err = index.Open(path, index.Options{Visit: func(*index.Interaction, int, cassettes.Frame) error {
		calls++
		return stop
	}})
	if x != nil || err != stop || calls != 1 {
		t.Errorf("a Visit error: index %v, error %v after %d calls; want nil, the error, 1", x, err, calls)
	}
}

func zstdFrames(t *testing.T, parts ...[]byte) []byte {
	t.Helper()
	var out bytes.Buffer
	for _, p := range parts {
		enc, _ := zstd.NewWriter(&out)
		enc.Write(p)
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

func TestSeekCommentsThatLieStillReadCorrectly(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.kwrec.zst")
	cassettetest.WriteInterleaved(t, src, cassettetest.Generated(), cassettes.WriterOptions{SegmentSize: 512})
	segmented := cassettetest.RawText(t, src)
	if n := bytes.Count(segmented, []byte("# kwrec:seek ")); n < 20 {
		t.Fatalf("%d seek comments, want many", n)
	}
	// A text with comments at their own text offsets (so the reader takes
	// them) that point at the wrong compressed bytes.
	lines := bytes.SplitAfter(bytes.ReplaceAll(segmented, []byte("# kwrec:seek"), []byte("# was seek")), []byte("\n"))
	var forged, a, b bytes.Buffer
	for i, l := range lines {
		if i > 0 && i%40 == 0 {
			c := []int64{7, 1 << 40, 0, int64(a.Len())}[i/40%4]
			fmt.Fprintf(&forged, "# kwrec:seek zstd=%d text=%d\n", c, forged.Len())
		}
		forged.Write(l)
	}
	text := forged.Bytes()
	a.Write(text[:len(text)/2])
	b.Write(text[len(text)/2:])
	tests := []struct {
		name string
		data []byte
	}{
		{"a file recompressed by another tool keeps stale comments", zstdFrames(t, segmented)},
		{"forged comments point at no frame, past the end, at the start", zstdFrames(t, text)},
		{"forged comments point at another tool's frame start", zstdFrames(t, a.Bytes(), b.Bytes())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "lying.kwrec.zst")
			if err := os.WriteFile(path, tt.data, 0o644); err != nil {
				t.Fatal(err)
			}
			want := cassettetest.Load(t, path)
			x, err := index.Open(path, index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			for k, in := range x.Interactions {
				for _, from := range []int{in.Frames.Len() - 1, in.Frames.Len() / 2, 0} {
					if diff := cmp.Diff(want.Interactions[k].Frames[from:], readAll(t, x, in, from)); diff != "" {
						t.Errorf("interaction %d from %d (-Load +index):\n%s", in.ID, from, diff)
					}
				}
			}
		})
	}
}

func TestACutCompressedCassetteIndexesEverythingBeforeTheCut(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "src.kwrec.zst")
	cassettetest.WriteInterleaved(t, src, cassettetest.Generated(), cassettes.WriterOptions{SegmentSize: 1000})
	z, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, cut := range []int{len(z) / 3, len(z) / 2, len(z) - 10} {
		t.Run(fmt.Sprintf("cut at byte %d of %d", cut, len(z)), func(t *testing.T) {
			path := filepath.Join(dir, "cut.kwrec.zst")
			if err := os.WriteFile(path, z[:cut], 0o644); err != nil {
				t.Fatal(err)
			}
			want, werr := cassettes.Load(path)
			x, err := index.Open(path, index.Options{})
			if !errors.Is(err, cassettes.ErrTruncated) || x == nil {
				t.Fatalf("Open = %v, %v; want an index and a truncated error", x, err)
			}
			defer x.Close()
			if err.Error() != werr.Error() {
				t.Errorf("Open error %q, Load's %q", err, werr)
			}
			if diff := cmp.Diff(want.Header, x.Header); diff != "" {
				t.Fatalf("the index's header differs from Load's (-Load +index):\n%s", diff)
			}
			if diff := cmp.Diff(skeleton(want), x.Interactions, ignoreLocations); diff != "" {
				t.Fatalf("the index's structure differs from Load's (-Load +index):\n%s", diff)
			}
			for k, in := range x.Interactions {
				if diff := cmp.Diff(want.Interactions[k].Frames, readAll(t, x, in, 0), cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("interaction %d (-Load +index):\n%s", in.ID, diff)
				}
			}
		})
	}
}

func TestOpenFailsAsLoadDoes(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, data string
	}{
		{"an empty file", ""},
		{"a frame before its response", `{"kwrec":1,"recordedAt":"2026-12-01T00:00:00Z","redactions":[]}` + "\n" +
			`{"request":1,"at":"0s","method":"GET","url":"/"}` + "\n" + `{"frame":1,"at":"0s","text":"x"}` + "\n"},
		{"a missing file", "-"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "bad.kwrec")
			os.Remove(path)
			if tt.data != "-" {
				os.WriteFile(path, []byte(tt.data), 0o644)
			}
			_, lerr := cassettes.Load(path)
			x, err := index.Open(path, index.Options{})
			if x != nil || err == nil || lerr == nil || err.Error() != lerr.Error() {
				t.Errorf("Open = %v, %v; want nil and Load's error %v", x, err, lerr)
			}
		})
	}
}

func TestAFileChangedAfterIndexingFailsWithErrModified(t *testing.T) {
	dir := t.TempDir()
	c := cassettetest.Generated()
	for _, seg := range []int{0, 512, -1} {
		for _, compress := range []bool{false, true} {
			if !compress && seg != 0 {
				continue
			}
			t.Run(fmt.Sprintf("compress=%v/segments of %d", compress, seg), func(t *testing.T) {
				path := filepath.Join(dir, "c.kwrec")
				if compress {
					path += ".zst"
				}
				cassettetest.WriteInterleaved(t, path, c, cassettes.WriterOptions{SegmentSize: seg})
				x, err := index.Open(path, index.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer x.Close()
				line := lineOf(t, path, 2, 50)
				// Every line moves: a longer server name in the header.
				c2 := *c
				c2.Header.Server = "v1.37.2-with-a-longer-name"
				cassettetest.WriteInterleaved(t, path, &c2, cassettes.WriterOptions{SegmentSize: seg})
				in := x.Interactions[1]
				fr, err := x.Frames(in, 50)
				if err != nil {
					t.Fatal(err)
				}
				defer fr.Close()
				_, err = fr.Next()
				want := fmt.Sprintf("%s:%d: the cassette changed since it was indexed; reopen it", path, line)
				if !errors.Is(err, index.ErrModified) || err.Error() != want {
					t.Errorf("Next = %v, want %s", err, want)
				}
				if _, again := fr.Next(); again != err {
					t.Errorf("second Next = %v, want the same error", again)
				}
				err = x.ReadFrames([]index.FrameRef{{In: in, I: 50}}, func(int, cassettes.Frame) error { return nil })
				if !errors.Is(err, index.ErrModified) || err.Error() != want {
					t.Errorf("ReadFrames = %v, want %s", err, want)
				}
			})
		}
	}
}

// lineOf returns the line of frame i (0-based) of interaction id.
func lineOf(t *testing.T, path string, id, i int) int {
	t.Helper()
	r, err := cassettes.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for {
		e, err := r.Next()
		if err != nil {
			t.Fatalf("frame %d of interaction %d not found: %v", i, id, err)
		}
		if e.Frame != nil && e.ID == id {
			if i == 0 {
				return e.Line
			}
			i--
		}
	}
}

func TestIndexMisuseGivesErrors(t *testing.T) {
	x, err := index.Open(testdata+"/list-then-watch.kwrec", index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	y, err := index.Open(testdata+"/list-then-watch.kwrec", index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer y.Close()
	other := y.Interactions[0] // of another index of the same file
	in := x.Interactions[1]
	fn := func(int, cassettes.Frame) error { return nil }
	tests := []struct {
		name string
		call func() error
		want string
	}{
		{"an interaction of another cassette", func() error { _, err := x.Frames(other, 0); return err },
			"cassette: ../../../cassettes/testdata/list-then-watch.kwrec: the interaction is not one of this index's Interactions"},
		{"a nil interaction", func() error { return x.ReadFrames([]index.FrameRef{{}}, fn) },
			"cassette: ../../../cassettes/testdata/list-then-watch.kwrec: the interaction is not one of this index's Interactions"},
		{"a negative frame", func() error { _, err := x.Frames(in, -1); return err },
			"cassette: interaction 2 has no frame -1; it has 3 (numbered from 0)"},
		{"a frame past the end", func() error { return x.ReadFrames([]index.FrameRef{{In: in, I: 3}}, fn) },
			"cassette: interaction 2 has no frame 3; it has 3 (numbered from 0)"},
		{"a closed frame reader", func() error {
			fr, _ := x.Frames(in, 0)
			fr.Close()
			_, err := fr.Next()
			return err
		}, "cassette: frame reader is closed"},
		{"a closed index", func() error {
			x.Close()
			fr, err := x.Frames(in, 0)
			if err != nil {
				return err
			}
			_, err = fr.Next()
			return err
		}, "../../../cassettes/testdata/list-then-watch.kwrec: file already closed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.call(); err == nil || err.Error() != tt.want {
				t.Errorf("error = %v, want %s", err, tt.want)
			}
		})
	}
	if fr, err := x.Frames(in, 3); err != nil {
		t.Errorf("Frames from len(Frames) = %v, want a reader at its end", err)
	} else if _, err := fr.Next(); err != io.EOF {
		t.Errorf("Next at the end = %v, want io.EOF", err)
	}
}

func TestFrameReadersWorkConcurrently(t *testing.T) {
	dir := t.TempDir()
	for _, seg := range []int{256, -1} {
		t.Run(fmt.Sprintf("segments of %d", seg), func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("c%d.kwrec.zst", seg))
			cassettetest.WriteInterleaved(t, path, cassettetest.Generated(), cassettes.WriterOptions{SegmentSize: seg})
			want := cassettetest.Load(t, path)
			x, err := index.Open(path, index.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			shared, _ := x.Frames(x.Interactions[0], 0)
			defer shared.Close()
			var wg sync.WaitGroup
			errs := make(chan error, 100)
			for g := 0; g < 8; g++ {
				wg.Add(2)
				go func() {
					defer wg.Done()
					for k, in := range x.Interactions {
						fr, err := x.Frames(in, g*10)
						if err != nil {
							errs <- err
							return
						}
						for i := g * 10; ; i++ {
							f, err := fr.Next()
							if err == io.EOF {
								break
							}
							if err != nil {
								errs <- err
								break
							}
							if !bytes.Equal(f.Data, want.Interactions[k].Frames[i].Data) {
								errs <- fmt.Errorf("goroutine %d: frame %d of interaction %d differs", g, i, in.ID)
							}
						}
						fr.Close()
					}
				}()
				go func() {
					defer wg.Done()
					refs := []index.FrameRef{{In: x.Interactions[2], I: g}, {In: x.Interactions[0], I: 99 - g}}
					if err := x.ReadFrames(refs, func(k int, f cassettes.Frame) error {
						if !bytes.Equal(f.Data, want.Interactions[refs[k].In.ID-1].Frames[refs[k].I].Data) {
							return fmt.Errorf("ReadFrames %d: ref %d differs", g, k)
						}
						return nil
					}); err != nil {
						errs <- err
					}
					// One reader shared by many goroutines hands out each
					// frame once.
					if _, err := shared.Next(); err != nil && err != io.EOF {
						errs <- err
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
		})
	}
}

func TestAKilledSegmentedWriterLeavesEverythingFlushedIndexable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "killed.kwrec.zst")
	w, err := cassettes.Create(path, cassettes.Header{}, cassettes.WriterOptions{SegmentSize: 200, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, cassettes.Response{Status: 200})
	var want []cassettes.Frame
	for i := 0; i < 50; i++ {
		f := cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: fmt.Appendf(nil, `{"type":"ADDED","object":{"n":%d}}`+"\n", i)}
		w.Frame(id, f)
		want = append(want, f)
	}
	w.Flush()
	// Written after the last flush, never closed: what a SIGKILL leaves.
	w.Frame(id, cassettes.Frame{At: time.Second, Data: []byte(`{"type":"ADDED","object":{"n":50}}` + "\n")})
	defer w.Close()

	_, lerr := cassettes.Load(path)
	x, err := index.Open(path, index.Options{})
	if !errors.Is(err, cassettes.ErrTruncated) || x == nil || err.Error() != lerr.Error() {
		t.Fatalf("Open = %v, %v; want an index and Load's error %v", x, err, lerr)
	}
	defer x.Close()
	if diff := cmp.Diff(want, readAll(t, x, x.Interactions[0], 0)); diff != "" {
		t.Errorf("frames after the kill (-flushed +read):\n%s", diff)
	}
}

// ReadFrames decodes binary frames (the "bytes" form of a compressed
// cassette, as protobuf watches are recorded) into one buffer it reuses,
// as it does for lines: reading more frames allocates nothing more, and
// every frame reads back as written.
func TestReadFramesReusesItsBufferForBinaryFrames(t *testing.T) {
	const n = 400
	in := &cassettes.Interaction{ID: 1, Request: cassettes.Request{Method: "GET", URL: "https://127.0.0.1:6443/api/v1/pods?watch=true"},
		Response: &cassettes.Response{Status: 200, Header: http.Header{"Content-Type": {"application/vnd.kubernetes.protobuf;stream=watch"}}},
		End:      &cassettes.End{At: time.Second, Reason: cassettes.EndEOF}}
	for i := range n {
		data := []byte{0, 0, 0, byte(i), 'k', '8', 's', 0, '"', '\\', 0xff, byte(i * 7)}
		data = append(data, bytes.Repeat([]byte{byte(i), 0x80, 'x'}, 40)...)
		in.Frames = append(in.Frames, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: data})
	}
	path := filepath.Join(t.TempDir(), "binary.kwrec.zst")
	if err := cassettes.Save(path, &cassettes.Cassette{Header: cassettes.Header{Version: 1}, Interactions: []*cassettes.Interaction{in}}); err != nil {
		t.Fatal(err)
	}
	x, err := index.Open(path, index.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer x.Close()
	xin := x.Interactions[0]
	read := func(m int) {
		refs := make([]index.FrameRef, m)
		for i := range refs {
			refs[i] = index.FrameRef{In: xin, I: i}
		}
		if err := x.ReadFrames(refs, func(k int, f cassettes.Frame) error {
			if !bytes.Equal(f.Data, in.Frames[k].Data) {
				t.Fatalf("frame %d reads back as %q, want %q", k, f.Data, in.Frames[k].Data)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	few := testing.AllocsPerRun(3, func() { read(20) })
	all := testing.AllocsPerRun(3, func() { read(n) })
	if per := (all - few) / (n - 20); per > 0.05 {
		t.Errorf("reading a frame more allocates %.2f times (20 frames: %.0f, %d: %.0f), want none", per, few, n, all)
	}
}
