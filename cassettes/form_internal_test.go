package cassettes

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

func TestTheWriterStartsEveryZstdFrameWithItsSeekComment(t *testing.T) {
	var out bytes.Buffer
	w, _ := NewWriter(&out, Header{}, WriterOptions{Compress: true, SegmentSize: 1000, FlushInterval: time.Hour})
	id, _ := w.Request(0, Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
	w.Response(id, Response{Status: 200})
	for i := 0; i < 100; i++ {
		w.Frame(id, Frame{At: time.Duration(i), Data: fmt.Appendf(nil, `{"n":%d}`+"\n", i)})
		if i%7 == 0 {
			w.Flush()
		}
	}
	w.End(id, End{Reason: EndEOF})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	z := out.Bytes()
	rd, err := NewReader(bytes.NewReader(z), "w")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := rd.Next(); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
	}
	sc := rd.sc
	if len(sc.Seeks()) < 2 {
		t.Fatalf("%d seek points in %d bytes of text; want one per 1000", len(sc.Seeks()), sc.Off())
	}
	for _, p := range sc.Seeks() {
		dec, _ := zstd.NewReader(bytes.NewReader(z[p.Zstd:]))
		text, err := io.ReadAll(dec)
		dec.Close()
		if err != nil {
			t.Fatalf("decoding from %+v: %v", p, err)
		}
		if want := cassettefile.AppendSeekComment(nil, p); !bytes.HasPrefix(text, want) {
			t.Errorf("decoding from %+v starts %q, want %q", p, text[:min(len(text), 60)], want)
		}
		if int64(len(text)) != sc.Off()-p.Text {
			t.Errorf("decoding from %+v gives %d bytes, want the %d after its text offset", p, len(text), sc.Off()-p.Text)
		}
	}
}

func TestTheScannerRefusesTheLinesThatAReaderDoes(t *testing.T) {
	if MaxLineSize != cassettefile.MaxLineSize {
		t.Errorf("cassettes.MaxLineSize is %d, the scanner's %d", MaxLineSize, cassettefile.MaxLineSize)
	}
}

func TestTheFormatPackageChainsDeltasAsTheWriterSays(t *testing.T) {
	if MaxDeltaChain != cassettefile.MaxDeltaChain {
		t.Errorf("cassettes.MaxDeltaChain is %d, the delta writer's %d", MaxDeltaChain, cassettefile.MaxDeltaChain)
	}
}
