package cassettes

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

// TestCompressedTextWithDeltasReadsBackAsTheText: the text compressed
// with deltas (as Compress writes it with deltas on) holds delta frames,
// and Plain gives the text back byte for byte.
func TestCompressedTextWithDeltasReadsBackAsTheText(t *testing.T) {
	var text bytes.Buffer
	in := &Interaction{ID: 1, Request: Request{Method: "GET", URL: "/api/v1/pods?watch=true"}, Response: &Response{Status: 200},
		End: &End{At: time.Second, Reason: EndEOF}}
	for i := range 300 {
		in.Frames = append(in.Frames, Frame{At: time.Duration(i), Data: fmt.Appendf(nil,
			`{"type":"MODIFIED","object":{"kind":"Pod","metadata":{"name":"p%d","namespace":"ns","uid":"%x","resourceVersion":"%d"},"spec":{"x":%d}}}`+"\n", i%9, i%9*7919, 100+i, i)})
	}
	in.Frames = append(in.Frames, Frame{At: 300, Data: []byte{0, 0, 0, 1, 0xff}}, Frame{At: 300, Data: []byte("text\n")})
	if err := Write(&text, &Cassette{Interactions: []*Interaction{in}}, false); err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	s, err := newSegmenter(&z, compressionFor(WriterOptions{Compress: true, SegmentSize: 512}))
	if err != nil {
		t.Fatal(err)
	}
	if err := compressText(s, bytes.NewReader(text.Bytes()), newDeltaWriter(WriterOptions{Deltas: true})); err != nil {
		t.Fatal(err)
	}
	if err := s.close(); err != nil {
		t.Fatal(err)
	}
	raw, err := Plain(bytes.NewReader(z.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(raw)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, text.Bytes()) {
		t.Errorf("Plain gives back other text than was compressed:\n%s", got)
	}
	dec, _ := NewReader(bytes.NewReader(z.Bytes()), "z")
	defer dec.Close()
	n := 0
	for {
		e, err := dec.Next()
		if err != nil {
			break
		}
		if e.Frame != nil && dec.ext.Delta {
			n++
		}
	}
	if n < 250 {
		t.Errorf("%d delta frames, want most of the JSON events", n)
	}
}
