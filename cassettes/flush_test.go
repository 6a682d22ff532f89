package cassettes_test

import (
	"bytes"
	"errors"
	"fmt"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kwrec/kwrec/cassettes"
)

func TestAKilledWriterLeavesEverythingFlushedReadable(t *testing.T) {
	for _, compress := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress=%v", compress), func(t *testing.T) {
			fc := clocktesting.NewFakeClock(time.Unix(0, 0))
			out := newLockedBuffer()
			w, err := cassettes.NewWriter(out, cassettes.Header{}, cassettes.WriterOptions{Compress: compress, Clock: fc})
			if err != nil {
				t.Fatal(err)
			}
			id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/api/v1/pods?watch=true"})
			w.Response(id, cassettes.Response{Status: 200})
			for i := 0; i < 3; i++ {
				w.Frame(id, cassettes.Frame{At: time.Duration(i) * time.Millisecond, Data: []byte(fmt.Sprintf(`{"type":"ADDED","object":{"n":%d}}`+"\n", i))})
			}
			// Only the header has reached the output; the frames wait in
			// the writer's buffer for the flush interval.
			before := len(out.Bytes())
			select {
			case <-out.wrote: // the header's write
			default:
			}
			if !fc.HasWaiters() {
				t.Fatal("the writer has no flush ticker on the clock")
			}
			// One flush interval later the frames are in the output, with no
			// Close: what a SIGKILL would leave.
			fc.Step(cassettes.DefaultFlushInterval)
			select {
			case <-out.wrote:
			case <-time.After(10 * time.Second): // a hang guard, not a wait
				t.Fatal("nothing flushed one flush interval later")
			}
			// The flush runs under the writer's lock: once another method
			// gets it, the whole flush has been written.
			w.Open()
			if len(out.Bytes()) <= before {
				t.Fatal("the flush wrote nothing")
			}
			// Written after the last flush: lost on a kill, never half-read.
			w.Frame(id, cassettes.Frame{At: 5 * time.Millisecond, Data: []byte(`{"type":"ADDED","object":{"n":3}}` + "\n")})

			c, err := cassettes.Read(bytes.NewReader(out.Bytes()), "killed")
			if !errors.Is(err, cassettes.ErrTruncated) {
				t.Fatalf("error = %v, want truncated", err)
			}
			if got := len(c.Interactions[0].Frames); got != 3 {
				t.Errorf("%d frames readable after the kill, want the 3 flushed", got)
			}
			w.Close()
		})
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n <= 0 {
		return 0, errors.New("no space left on device")
	}
	f.n--
	return len(p), nil
}

func TestAWriteErrorIsStickyAndReturnedByClose(t *testing.T) {
	w, err := cassettes.NewWriter(&failingWriter{n: 1}, cassettes.Header{}, cassettes.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	id, _ := w.Request(0, cassettes.Request{Method: "GET", URL: "/"})
	w.Response(id, cassettes.Response{Status: 200})
	ferr := w.Flush()
	const want = "cassette: writing: no space left on device"
	if ferr == nil || ferr.Error() != want {
		t.Fatalf("flush error = %v, want %s", ferr, want)
	}
	if err := w.Frame(id, cassettes.Frame{Data: []byte("x")}); err == nil || err.Error() != want {
		t.Errorf("frame after the failure = %v, want the same error", err)
	}
	if err := w.Close(); err == nil || err.Error() != want {
		t.Errorf("close = %v, want the same error", err)
	}
}
