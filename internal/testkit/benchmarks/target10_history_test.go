package benchmarks

import (
	"fmt"
	"testing"

	"github.com/kwrec/kwrec/replay"
)

// historyCassettes are the recordings the history targets read: the
// example controller's (what an exploration replays once per fault point)
// and a real recording of 2,000 ConfigMaps of 4 KB.
var historyCassettes = []struct{ name, path string }{
	{"mirror", "../examplecontroller/testdata/mirror.kwrec.zst"},
	{"2000cm", "testdata/recorded-2000cm.kwrec.zst"},
}

// BenchmarkOneHistoryManyReplays compares one replay.Open of a cassette
// with one replay.Load of it and 1,000 Replayers made from the history,
// each taking writes, as an exploration's are: the target is less than
// twice the time and the bytes allocated of the one Open. -count N runs
// the two in turn, N rounds.
func BenchmarkOneHistoryManyReplays(b *testing.B) {
	opts := replay.Options{Writes: replay.WritesOverlay}
	for _, c := range historyCassettes {
		b.Run(c.name+"/open", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r, err := replay.Open(c.path, opts)
				if err != nil {
					b.Fatal(err)
				}
				r.Close()
			}
		})
		b.Run(c.name+"/load+1000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				h, err := replay.Load(c.path)
				if err != nil {
					b.Fatal(err)
				}
				for range 1000 {
					r, err := h.Replayer(opts)
					if err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
				h.Close()
			}
		})
	}
}

// BenchmarkAReplayerOfALoadedHistory measures one Replayer made from a
// loaded history (target: under 1 ms), in the mode each kind of replay
// uses.
func BenchmarkAReplayerOfALoadedHistory(b *testing.B) {
	for _, c := range historyCassettes {
		h, err := replay.Load(c.path)
		if err != nil {
			b.Fatal(err)
		}
		for _, w := range []replay.WriteMode{replay.WritesStrict, replay.WritesOverlay} {
			b.Run(fmt.Sprintf("%s/%v", c.name, w), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					r, err := h.Replayer(replay.Options{Writes: w})
					if err != nil {
						b.Fatal(err)
					}
					r.Close()
				}
			})
		}
		h.Close()
	}
}
