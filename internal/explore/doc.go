// Package explore is what fault exploration shares between
// replaytest.Explore (Go controllers in a synctest bubble) and `kwrec
// explore` (a controller in any language, as a process against a served
// replay):
//
//   - the fault kinds ([FaultKind], [AllFaults]) and the points they make
//     from what a reference run did ([Points]): a watch fault after each
//     recorded change of a collection the code watched, an error on each
//     list, get, watch open and write it made; a sample of them ([Select])
//     and one shard of them ([Shard]);
//   - the world a run ends in as text to compare ([World], with
//     [Normalize] setting aside the fields the server sets);
//   - the objects a run deleted ([Deleted]): a point's run must not delete
//     what the reference never deleted, even if it creates it again.
//
// A run of a point is a replay with [Point.Edit] added to its options.
package explore
