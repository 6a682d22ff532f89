package cassettes_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cassettefile"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

// entries reads every entry of the cassette in data, copying each frame's
// bytes at once (as a borrowing reader's caller must), and the error that
// ended the read.
func entries(t *testing.T, data []byte, borrow bool) ([]cassettes.Entry, string) {
	t.Helper()
	sc := cassettefile.NewScanner([]cassettefile.Part{{R: bytes.NewReader(data), Name: "x"}}, cassettefile.ScanOptions{Borrow: borrow})
	rd, err := cassettes.NewReader(cassettefile.Scanned{S: sc}, "x")
	if err != nil {
		return nil, err.Error()
	}
	defer rd.Close()
	var out []cassettes.Entry
	for {
		e, err := rd.Next()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return out, ""
			}
			return out, err.Error()
		}
		if e.Frame != nil {
			f := *e.Frame
			f.Data = bytes.Clone(f.Data)
			e.Frame = &f
		}
		out = append(out, e)
	}
}

func TestABorrowingReaderReadsWhatACopyingOneDoes(t *testing.T) {
	dir := t.TempDir()
	long := cassettetest.Generated()
	// Frames longer than the Reader's 64 KiB buffer, one after another.
	in := long.Interactions[0]
	for i := range 3 {
		data := `{"kind":"List","items":["` + strings.Repeat(string(rune('a'+i)), 100_000+i) + `"]}` + "\n"
		in.Frames = append(in.Frames, cassettes.Frame{At: in.Frames[len(in.Frames)-1].At + time.Millisecond, Data: []byte(data)})
	}
	sources := map[string]*cassettes.Cassette{"generated with long lines": long}
	for _, f := range cassettetest.Fixtures {
		sources[f] = cassettetest.Load(t, filepath.Join("testdata", f))
	}
	// A borrowing reader lends the frames it rebuilds from deltas too:
	// each must be what a copying reader gives while it is lent.
	forms := []struct {
		name string
		opts cassettes.WriterOptions
	}{
		{".kwrec", cassettes.WriterOptions{SegmentSize: 1000}},
		{".kwrec.zst", cassettes.WriterOptions{SegmentSize: 1000}},
		{".kwrec.zst with deltas against lists", cassettes.WriterOptions{SegmentSize: 1000, Compress: true, ListDeltas: true}},
		{".kwrec.zst with object deltas", cassettes.WriterOptions{SegmentSize: 1000, Compress: true, Deltas: true}},
	}
	deltas := 0
	for name, c := range sources {
		for _, form := range forms {
			p := filepath.Join(dir, "c"+strings.Fields(form.name)[0])
			cassettetest.Write(t, p, c, form.opts)
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if form.opts.ListDeltas || form.opts.Deltas {
				deltas += bytes.Count(cassettetest.RawText(t, p), []byte(`"delta":`))
			}
			for _, cut := range []int{len(data), len(data) - 7, len(data) / 2} {
				t.Run(fmt.Sprintf("%s in the %s form, read to byte %d of %d", name, form.name, cut, len(data)), func(t *testing.T) {
					want, werr := entries(t, data[:cut], false)
					got, gerr := entries(t, data[:cut], true)
					if gerr != werr {
						t.Errorf("borrowing reader ends with %q, copying one with %q", gerr, werr)
					}
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("entries differ (-copied +borrowed):\n%s", diff)
					}
				})
			}
		}
	}
	if deltas == 0 {
		t.Error("no fixture was written with a delta: the forms with deltas test nothing of them")
	}
}
