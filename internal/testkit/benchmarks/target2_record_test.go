package benchmarks_test

import (
	"io"
	"testing"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/testkit/benchmarks"
	"github.com/kwrec/kwrec/recorder"
)

// recording is a recorder writing a compressed cassette to io.Discard with
// the default flush policy (every cassettes.DefaultFlushInterval).
type recording struct {
	w   *cassettes.Writer
	rec *recorder.Recorder
}

func startRecording(b *testing.B) *recording {
	w, err := cassettes.NewWriter(io.Discard, recorder.Header("", recorder.Options{}), cassettes.WriterOptions{Compress: true})
	if err != nil {
		b.Fatal(err)
	}
	rec, err := recorder.New(w, recorder.Options{})
	if err != nil {
		b.Fatal(err)
	}
	return &recording{w: w, rec: rec}
}

func (r *recording) stop(b *testing.B) {
	if err := r.rec.Close(); err != nil {
		b.Fatal(err)
	}
	if err := r.w.Close(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkRecordingCostsTheClientNothing is target 2: with the recorder
// in the path (framing every event and writing a zstd cassette to
// io.Discard), a typed watch reaches at least 0.95 (JSON) and 0.90
// (protobuf) of its events/s without it. allocs/event-added counts the
// heap allocations of every goroutine (the recorder's pump and the
// cassette writer included) per event, beyond the direct side's. Closing
// the recorder and writer (the final flush) is outside the timed part.
func BenchmarkRecordingCostsTheClientNothing(b *testing.B) {
	for _, f := range []benchmarks.Format{benchmarks.JSON, benchmarks.Protobuf} {
		b.Run("typed-watch/"+string(f), func(b *testing.B) {
			s := clientStream(f)
			n := len(s.Events)
			var rec *recording
			sideBySide(b, n, &side{name: "direct"}, &side{name: "recorded"},
				func() func() { return watchAll(b, bareConfig(s, false), n) },
				func() func() {
					if rec != nil {
						rec.stop(b)
					}
					rec = startRecording(b)
					cfg := bareConfig(s, false)
					rec.rec.WrapConfig(cfg)
					return watchAll(b, cfg, n)
				})
			if rec != nil {
				rec.stop(b)
			}
		})
	}
}
