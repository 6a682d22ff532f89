// Package benchmarks is kwrec's performance suite: each benchmark measures
// one of the project's targets as a ratio, both sides side by side in the
// same run, on realistic generated Pod streams (see [Generate]; nothing
// large is checked in). `make bench` runs it with benchstat; BENCHMARKS.md
// at the repository root holds the latest table.
//
// The benchmarks, one file each, in the order they run:
//
//	BenchmarkReplayCostsTheClientNothing     target 1: replay at speed 0 vs a bare in-memory RoundTripper
//	                                         (typed watch JSON and protobuf, SharedIndexInformer list+watch,
//	                                         WatchList); metric replay/bare, target >= 0.95 JSON, 0.90 protobuf
//	BenchmarkRecordingCostsTheClientNothing  target 2: the same watch through the recorder (zstd cassette to
//	                                         io.Discard) vs direct; metrics recorded/direct, allocs/event-added
//	BenchmarkCassettesAreSmall               target 3: a 100k-event cassette's size vs the raw watch JSON
//	                                         (target <= 1/15) and go-vcr YAML (<= 1/10), per flush policy
//	BenchmarkCassettesReadFast               target 4: streaming read rate vs go-vcr YAML load (>= 2x), and
//	                                         peak memory (VmHWM of a subprocess) of reading and of replaying
//	                                         a 100k-event cassette (target < 100 MB)
//	BenchmarkTestsAreFast                    target 5: each watcher seed scenario's replay (< 100 ms) vs
//	                                         starting a real control plane
//	BenchmarkFanOut                          target 6 (issue 16): 1,000 watchers of one collection through
//	                                         replay.Server (HTTPS/h2, as kwrec serve) vs the real kube-apiserver
//	                                         on the same events: events/s at speed 0 (replay/apiserver >= 2, every
//	                                         watcher every event in order), memory per idle watcher (< 64 KB),
//	                                         lateness p50/p99/max at speed 1, 10 and 100 (p99 < 20 ms at speed 1);
//	                                         needs the control plane binaries for the apiserver side
//	BenchmarkServeStartsFast                 target 7: kwrec serve of 2,000 ConfigMaps + 1,200 changes, exec to
//	                                         its ready line (< 50 ms), and its CPU to serve an informer against
//	                                         the in-process replay's (<= 1.2)
//	BenchmarkServeStartsFastOnARecording     issue 30: kwrec serve of a real kwrec record cassette (discovery,
//	                                         OpenAPI, Table form), exec to its kubeconfig (< 50 ms) and to a
//	                                         first answer, with and without discovery
//	BenchmarkAMillionEvents                  target 8: peak RSS of recording and of replaying 1,000,000 events
//	                                         (< 150 MB each), each in a child process
//	BenchmarkRecordAll                       target 11 (issue 27): kwrec record --all, a child process, for 10
//	                                         minutes ($KWREC_BENCH_RECORD_FOR) of a control plane holding
//	                                         10,000 objects of 20 kinds under 50 changes a second: its CPU,
//	                                         CPU per second, peak RSS, events, and bytes per event against the
//	                                         same traffic as go-vcr YAML + zstd -19; needs the control plane
//	BenchmarkTheMachineIsSteady              the machine, not kwrec: how often 10 ms of CPU work takes over
//	                                         1.5x as long with nothing else running (what bounds lateness p99)
//
// Each op of a side-by-side benchmark is one round: both sides eight times
// ($KWREC_BENCH_PAIRS), alternating which goes first, each timed alone,
// the round's ratio the median of its pairs'; ns/op is their sum and
// means little. Read the custom metrics: events/s of each side, their
// ratio over all rounds and its median, min and max per round (each
// round's ratio is logged), allocations per event. -benchtime 5x gives
// five rounds from one run.
//
// Run one target with, for example:
//
//	go test -run '^$' -bench CassettesAreSmall -benchmem ./internal/testkit/benchmarks/
package benchmarks
