package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/cassettetest"
)

// TestLintFixKeepsTheFormOfACutCassette: a recording made with deltas and
// cut mid-way is repaired with its deltas, not three times larger.
func TestLintFixKeepsTheFormOfACutCassette(t *testing.T) {
	p := filepath.Join(t.TempDir(), "cut.kwrec.zst")
	w, err := cassettes.Create(p, cassettes.Header{Server: "v1.37.2"}, cassettes.WriterOptions{Deltas: true, FlushInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	id := cassettetest.StartWatch(t, w)
	event := func(rv int) cassettes.Frame {
		return cassettes.Frame{At: time.Duration(rv) * time.Millisecond, Data: fmt.Appendf(nil,
			`{"type":"MODIFIED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a","namespace":"default","resourceVersion":"%d"},"data":{"text":"%s"}}}`+"\n",
			rv, strings.Repeat("the same words again ", 20))}
	}
	for rv := 1; rv <= 10; rv++ {
		if err := w.Frame(id, event(rv)); err != nil {
			t.Fatal(err)
		}
	}
	// Everything so far decodes; the cut falls in what comes after.
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	flushed := st.Size()
	for rv := 11; rv <= 20; rv++ {
		if err := w.Frame(id, event(rv)); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err = os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, flushed+(st.Size()-flushed)/2); err != nil {
		t.Fatal(err)
	}

	msg := lintFile(p, true)
	if !strings.Contains(msg, "repaired: kept 12 line(s), ended 1 left open as stopped") {
		t.Fatalf("lint --fix: %s", msg)
	}
	if msg := lintFile(p, false); msg != "" {
		t.Fatalf("lint after the fix: %s", msg)
	}
	f, err := cassettes.FormOf(p)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cassettes.Form{Compressed: true, Deltas: true}); f != want {
		t.Errorf("repaired as %+v, want %+v", f, want)
	}
	c, err := cassettes.Load(p)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(c.Interactions[0].Frames); n != 10 {
		t.Errorf("%d frames kept, want the 10 before the cut", n)
	}
	for i, fr := range c.Interactions[0].Frames {
		if want := event(i + 1); string(fr.Data) != string(want.Data) {
			t.Fatalf("frame %d: %s, want %s", i, fr.Data, want.Data)
		}
	}
}
