package cassettes

import (
	"bytes"
	"io"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

func TestAHandWrittenBytesFrameReadsOrIsRefusedByName(t *testing.T) {
	tests := []struct {
		name, line string
		want       []byte
		err        string
	}{
		{"JSON escapes stand for the bytes below 0x80", `{"frame":1,"at":"0s","bytes":"\u0000\/ĀǿA"}`, []byte{0, '/', 0, 0xff, 'A'}, ""},
		{"a character in neither range is refused", `{"frame":1,"at":"0s","bytes":"aé"}`, nil,
			`cassette:4: frame of interaction 1: bad bytes: character U+00E9 at byte 1 stands for no byte (a byte is U+0000-U+007F or U+0100-U+01FF)`},
		{"bytes and base64 together are refused", `{"frame":1,"at":"0s","bytes":"a","base64":"YQ=="}`, nil,
			`cassette:4: frame of interaction 1 needs exactly one of "json", "text" or "base64"`},
		{"bytes on a request line are refused", `{"request":1,"at":"0s","method":"GET","url":"/","bytes":"a"}`, nil,
			`cassette:4: request 1 has fields of another line kind; a request line has at, method, url, header, body`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, perr := decodeEntry(4, []byte(tt.line), cassettefile.CheckValid)
			if tt.err != "" {
				if perr == nil || perr.Error() != tt.err {
					t.Fatalf("error %v, want %s", perr, tt.err)
				}
				return
			}
			if perr != nil {
				t.Fatal(perr)
			}
			if !bytes.Equal(e.Frame.Data, tt.want) {
				t.Errorf("frame %x, want %x", e.Frame.Data, tt.want)
			}
		})
	}
}

// The compressed form writes binary frames as "bytes", plain text as
// base64, and both read back as the frames written.
func TestBinaryFramesAreBytesWhenCompressedAndBase64InPlainText(t *testing.T) {
	frames := [][]byte{[]byte("\x00\x00\x00\x08k8s\x00\x0a\x02\xff\x80"), []byte("{\"a\":1}\n"), []byte("text\n")}
	for _, compress := range []bool{true, false} {
		var out bytes.Buffer
		w, err := NewWriter(&out, Header{}, WriterOptions{Compress: compress, FlushInterval: time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		id, _ := w.Request(0, Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
		w.Response(id, Response{Status: 200})
		for _, f := range frames {
			w.Frame(id, Frame{Data: f})
		}
		w.End(id, End{Reason: EndEOF})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		raw := out.Bytes()
		if compress {
			pr, err := Plain(bytes.NewReader(raw))
			if err != nil {
				t.Fatal(err)
			}
			raw, err = io.ReadAll(pr)
			pr.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
		want := `"base64":"AAAACGs4cwAKAv+A"`
		if compress {
			want = `"bytes":"ĀĀĀĈk8sĀĊĂǿƀ"`
		}
		if !bytes.Contains(raw, []byte(want)) {
			t.Errorf("compress=%v: the binary frame is not written as %s:\n%s", compress, want, raw)
		}
		c, err := Read(bytes.NewReader(out.Bytes()), "t")
		if err != nil {
			t.Fatal(err)
		}
		var got [][]byte
		for _, f := range c.Interactions[0].Frames {
			got = append(got, f.Data)
		}
		if d := cmp.Diff(frames, got); d != "" {
			t.Errorf("compress=%v: frames read back differ (-written +read):\n%s", compress, d)
		}
	}
}
