package cassettes_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

// compatDir holds cassettes written by earlier kwrec versions; its
// README.md says which commit wrote each, how, and what it exercises.
const compatDir = "testdata/compat"

// compatText is what an old file's text form ([cassettes.ReadText]) must
// be, byte for byte.
type compatText int

const (
	// textAny: not compared (a rotated recording's parts; a source with
	// comments, which no Writer keeps).
	textAny compatText = iota
	// textOfSource: the source file's bytes, which the same kwrec wrote.
	textOfSource
	// textWrittenNow: the text form this kwrec writes for the source.
	textWrittenNow
	// textCompressedNow: the text of the compressed form this kwrec writes
	// for the source (binary frames in "bytes").
	textCompressedNow
)

// compatCase is one recording an earlier kwrec wrote.
type compatCase struct {
	name   string
	file   string // in compatDir: a file, or a rotated recording's parts as a pattern
	source string // in testdata: the recording it was written from
	form   cassettes.Form
	text   compatText
	// keptFrom, for a recording kwrec record --keep rebased, is the first
	// of the source watch's frames it kept: it must hold the state of the
	// Pods before that frame, then the watch from it on.
	keptFrom int
}

var compatCases = []compatCase{
	{name: "the foundation's text form of a list of Pods and a watch of their changes",
		file: "pods.kwrec", source: "compat/pods.kwrec", text: textOfSource},
	{name: "the foundation's text form of binary frames, as text and base64",
		file: "binary.kwrec", source: "compat/binary.kwrec", text: textOfSource},
	{name: "the foundation's compressed form, one zstd stream, reads as the text it compressed",
		file: "e070fff-pods.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true}, text: textOfSource},
	{name: "the foundation's compressed form of binary frames in base64",
		file: "e070fff-binary.kwrec.zst", source: "compat/binary.kwrec", form: cassettes.Form{Compressed: true}, text: textOfSource},
	{name: "the foundation's compressed form of the doc's list and watch",
		file: "e070fff-list-then-watch.kwrec.zst", source: "list-then-watch.kwrec", form: cassettes.Form{Compressed: true}},
	{name: "the foundation's compressed form of a protobuf watch",
		file: "e070fff-protobuf-watch.kwrec.zst", source: "protobuf-watch.kwrec", form: cassettes.Form{Compressed: true}},
	{name: "segments with seek comments and a 1 MiB window read as one text",
		file: "8337c9e-pods.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true}, text: textWrittenNow},
	{name: "segments of binary frames still in base64",
		file: "8337c9e-binary.kwrec.zst", source: "compat/binary.kwrec", form: cassettes.Form{Compressed: true}, text: textWrittenNow},
	{name: "binary frames in the bytes form",
		file: "6872f18-binary.kwrec.zst", source: "compat/binary.kwrec", form: cassettes.Form{Compressed: true}, text: textCompressedNow},
	{name: "a protobuf watch in the bytes form",
		file: "6872f18-protobuf-watch.kwrec.zst", source: "protobuf-watch.kwrec", form: cassettes.Form{Compressed: true}, text: textCompressedNow},
	{name: "the first kwrec compact's form, a window as large as a segment",
		file: "6872f18-pods-compact.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true}, text: textWrittenNow},
	{name: "kwrec compact's object deltas, seek points among them",
		file: "18b37eb-pods-deltas.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true, Deltas: true}, text: textWrittenNow},
	{name: "kwrec compact's deltas against a shared list's items",
		file: "e058fd0-pods-shared.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true, Deltas: true}, text: textWrittenNow},
	{name: "a rotated recording whose deltas name frames in earlier parts",
		file: "18b37eb-pods-parts-*.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true, Deltas: true}},
	{name: "a kept recording whose oldest part was rewritten as the state and its lines",
		file: "26a2720-pods-kept-*.kwrec.zst", source: "compat/pods.kwrec", form: cassettes.Form{Compressed: true}, keptFrom: 100},
	{name: "a kept recording whose state is a rebased part of its own",
		file: "e5ab987-pods-kept-*.kwrec", source: "compat/pods.kwrec", keptFrom: 90},
}

// TestCassettesWrittenByEarlierVersionsStillRead: every recording in
// testdata/compat loads as the recording it was written from, in the
// form it was written in, its text as that kwrec wrote it, and a
// Reader streams the same.
func TestCassettesWrittenByEarlierVersionsStillRead(t *testing.T) {
	for _, tc := range compatCases {
		t.Run(tc.name, func(t *testing.T) {
			name := filepath.Join(compatDir, tc.file)
			got, err := cassettes.Load(name)
			if err != nil {
				t.Fatal(err)
			}
			want := compatWant(t, tc)
			if d := cmp.Diff(want, got, compatOpts(tc)); d != "" {
				t.Errorf("Load(%s) (-want +got):\n%s", tc.file, d)
			}
			if d := cmp.Diff(got, streamed(t, name)); d != "" {
				t.Errorf("a Reader of %s streams other than Load reads (-Load +Reader):\n%s", tc.file, d)
			}
			parts, err := cassettes.Parts(name)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range parts {
				if f, err := cassettes.FormOf(p); err != nil || f != tc.form {
					t.Errorf("FormOf(%s) = %+v, %v; want %+v", p, f, err, tc.form)
				}
			}
			if tc.text != textAny {
				if d := cmp.Diff(string(compatWantText(t, tc)), string(readText(t, name))); d != "" {
					t.Errorf("text of %s (-want +got):\n%s", tc.file, d)
				}
			}
		})
	}
}

// TestEveryCompatFileHasACase: a recording added to testdata/compat
// without a case here, or to cassettetest.Compat (which replay's test
// reads), fails.
func TestEveryCompatFileHasACase(t *testing.T) {
	var files []string
	var compat []cassettetest.CompatFile
	for _, tc := range compatCases {
		files = append(files, tc.file)
		source := tc.source
		if tc.keptFrom > 0 {
			source = ""
		}
		compat = append(compat, cassettetest.CompatFile{Name: tc.file, Source: source})
	}
	if d := cmp.Diff(cassettetest.Compat, compat); d != "" {
		t.Errorf("cassettetest.Compat and the cases name other files (-Compat +cases):\n%s", d)
	}
	entries, err := os.ReadDir(compatDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.IsDir() || !strings.Contains(e.Name(), ".kwrec") || e.Name() == "future-version.kwrec.zst" {
			continue
		}
		if !slices.ContainsFunc(files, func(p string) bool { ok, _ := filepath.Match(p, e.Name()); return ok }) {
			t.Errorf("%s has no case in compatCases", e.Name())
		}
	}
}

// TestTheCompatSourcesReadAsWritten: the sources the old files were
// written from read as their lines say: this kwrec's text form of what
// it loaded is, line by line, the same JSON (comments aside).
func TestTheCompatSourcesReadAsWritten(t *testing.T) {
	for _, src := range []string{"compat/pods.kwrec", "compat/binary.kwrec", "list-then-watch.kwrec", "protobuf-watch.kwrec"} {
		t.Run(src, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", src))
			if err != nil {
				t.Fatal(err)
			}
			rewritten := cassettetest.Encode(t, cassettetest.Load(t, filepath.Join("testdata", src)), cassettes.WriterOptions{})
			if d := cmp.Diff(jsonLines(t, data), jsonLines(t, rewritten)); d != "" {
				t.Errorf("lines (-file +as loaded and written again):\n%s", d)
			}
		})
	}
}

// TestAFutureVersionIsRefusedByItsVersion: a cassette of a later format
// version, with a header key this kwrec does not know, is refused as
// that version, naming the file and what to do, not as malformed.
func TestAFutureVersionIsRefusedByItsVersion(t *testing.T) {
	name := filepath.Join(compatDir, "future-version.kwrec.zst")
	want := name + ":1: cassette format version 2 is not supported (this kwrec reads version 1); re-record the cassette or use a kwrec that reads version 2"
	_, err := cassettes.Load(name)
	if err == nil || err.Error() != want || !errors.Is(err, cassettes.ErrUnsupportedVersion) {
		t.Errorf("Load: %v\nwant %s (wrapping %v)", err, want, cassettes.ErrUnsupportedVersion)
	}
	r, err := cassettes.Open(name)
	if err == nil {
		r.Close()
	}
	if err == nil || err.Error() != want || !errors.Is(err, cassettes.ErrUnsupportedVersion) {
		t.Errorf("Open: %v\nwant %s (wrapping %v)", err, want, cassettes.ErrUnsupportedVersion)
	}
}

// compatWant is the recording tc's file must load as: its source, or for
// a kept recording the source's state before frame keptFrom of its watch
// as a list, then the watch from there.
func compatWant(t *testing.T, tc compatCase) *cassettes.Cassette {
	t.Helper()
	c := cassettetest.Load(t, filepath.Join("testdata", tc.source))
	if tc.keptFrom == 0 {
		return c
	}
	c.Header.Skipped, c.Header.Rebased = []string{"secrets: forbidden (list)"}, true
	list, watch := c.Interactions[0], c.Interactions[1]
	rv, state := podsBefore(t, list.Frames[0].Data, watch.Frames[:tc.keptFrom])
	list.Response.Latency = 0
	list.End.At = 0
	list.Frames[0].Data = state
	u, err := url.Parse(watch.Request.URL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("resourceVersion", rv)
	u.RawQuery = q.Encode()
	watch.Request.URL = u.String()
	watch.Frames = watch.Frames[tc.keptFrom:]
	return c
}

// podsBefore folds a watch's events into a list's Pods: the
// resourceVersion of the last event and the PodList at it.
func podsBefore(t *testing.T, list []byte, events []cassettes.Frame) (string, []byte) {
	t.Helper()
	type meta struct {
		Name            string `json:"name,omitempty"`
		ResourceVersion string `json:"resourceVersion"`
	}
	type object struct {
		Metadata meta `json:"metadata"`
	}
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(list, &l); err != nil {
		t.Fatal(err)
	}
	pods := map[string]json.RawMessage{}
	for _, it := range l.Items {
		var o object
		if err := json.Unmarshal(it, &o); err != nil {
			t.Fatal(err)
		}
		pods[o.Metadata.Name] = it
	}
	var rv string
	for _, f := range events {
		var ev struct {
			Type   string
			Object map[string]json.RawMessage
		}
		if err := json.Unmarshal(f.Data, &ev); err != nil {
			t.Fatal(err)
		}
		var m meta
		if err := json.Unmarshal(ev.Object["metadata"], &m); err != nil {
			t.Fatal(err)
		}
		rv = m.ResourceVersion
		delete(ev.Object, "kind") // a list's items have neither
		delete(ev.Object, "apiVersion")
		switch ev.Type {
		case "ADDED", "MODIFIED":
			obj, err := json.Marshal(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			pods[m.Name] = obj
		case "DELETED":
			delete(pods, m.Name)
		}
	}
	var items []json.RawMessage
	for _, name := range slices.Sorted(maps.Keys(pods)) {
		items = append(items, pods[name])
	}
	state, err := json.Marshal(map[string]any{"kind": "PodList", "apiVersion": "v1", "metadata": meta{ResourceVersion: rv}, "items": items})
	if err != nil {
		t.Fatal(err)
	}
	return rv, append(state, '\n')
}

// compatOpts compares the state list of a kept recording as a JSON
// value: it is the rebase's own encoding of the objects. Every other
// frame is compared byte for byte.
func compatOpts(tc compatCase) cmp.Option {
	if tc.keptFrom == 0 {
		return nil
	}
	isList := func(f cassettes.Frame) bool { return bytes.Contains(f.Data, []byte(`"kind":"PodList"`)) }
	type jsonFrame struct {
		At   time.Duration
		JSON any
	}
	return cmp.FilterValues(func(a, b cassettes.Frame) bool { return isList(a) && isList(b) },
		cmp.Transformer("json", func(f cassettes.Frame) jsonFrame {
			var v any
			if err := json.Unmarshal(f.Data, &v); err != nil {
				return jsonFrame{At: f.At, JSON: string(f.Data)}
			}
			return jsonFrame{At: f.At, JSON: v}
		}))
}

// compatWantText is the text form tc's file must have.
func compatWantText(t *testing.T, tc compatCase) []byte {
	t.Helper()
	path := filepath.Join("testdata", tc.source)
	switch tc.text {
	case textOfSource:
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	case textWrittenNow:
		return cassettetest.Encode(t, cassettetest.Load(t, path), cassettes.WriterOptions{})
	case textCompressedNow:
		data := cassettetest.Encode(t, cassettetest.Load(t, path), cassettes.WriterOptions{Compress: true})
		text, _, err := cassettes.ReadText(bytes.NewReader(data))
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	panic(fmt.Sprintf("compatText %d", tc.text))
}

// readText is the text form of the file name.
func readText(t *testing.T, name string) []byte {
	t.Helper()
	f, err := os.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	text, _, err := cassettes.ReadText(f)
	if err != nil {
		t.Fatal(err)
	}
	return text
}

// streamed is the recording names name as a Reader streams it.
func streamed(t *testing.T, name string) *cassettes.Cassette {
	t.Helper()
	r, err := cassettes.Open(name)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c := &cassettes.Cassette{Header: r.Header()}
	byID := map[int]*cassettes.Interaction{}
	for {
		e, err := r.Next()
		if err == io.EOF {
			return c
		}
		if err != nil {
			t.Fatal(err)
		}
		in := byID[e.ID]
		switch {
		case e.Request != nil:
			in = &cassettes.Interaction{ID: e.ID, At: e.At, Request: *e.Request}
			byID[e.ID] = in
			c.Interactions = append(c.Interactions, in)
		case e.Response != nil:
			in.Response = e.Response
		case e.Frame != nil:
			in.Frames = append(in.Frames, *e.Frame)
		case e.End != nil:
			in.End = e.End
		}
	}
}

// jsonLines is data's lines, comments left out, each as a JSON value.
func jsonLines(t *testing.T, data []byte) []any {
	t.Helper()
	var lines []any
	for l := range bytes.Lines(data) {
		if s := bytes.TrimSpace(l); len(s) == 0 || s[0] == '#' {
			continue
		}
		var v any
		if err := json.Unmarshal(l, &v); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, v)
	}
	return lines
}
