// Package heapceiling keeps the kwrec binary's heap close to what it
// holds: after every garbage collection it sets the Go runtime's soft
// memory limit to the live heap plus a margin, never below a floor.
//
// kwrec's commands that read a whole recording (cut, report, diff,
// serve) keep an index of it, tens of MB for a million events, while
// they turn over every line's bytes. With GOGC alone the heap grows to
// that index times 1 + GOGC/100 before each collection, and a fixed
// memory limit below what a command must keep makes the collector run
// without pause (the runtime caps it at half the CPU, so the command
// slows, as kwrec diff of two million-event recordings did by 70% under
// a 100 MiB limit). A ceiling that follows the live heap does neither:
// under the floor it changes nothing; above it, the heap may grow by the
// margin only.
//
//	c := heapceiling.Start(heapceiling.Options{Floor: 96 << 20, Margin: 0.3})
//	defer c.Stop() // puts the limit back
//
// The runtime's own settings win: [Start] is for when neither GOGC nor
// GOMEMLIMIT is set ([Chosen] tells).
package heapceiling
