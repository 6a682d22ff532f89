// Package fanout lets many watches of one collection share the work of
// serving it, as kube-apiserver's watch cache serializes each object once
// per encoding for all its watchers (cachingObject).
//
// Every watch still walks its collection on its own (its own starting
// point, selector, pacing and edits), but the frame of a recorded event,
// in the encoding it negotiated, comes from the collection's [Hub] for
// that encoding: made once by a [Maker], then handed to every watch that
// sends it, which writes the same bytes.
//
// A hub makes frames in event order on a goroutine of its own, a little
// ahead of the watch that is furthest on, and never waits for one that is
// behind: a slow watch only ever costs itself. It keeps the frames it
// made up to a byte budget, oldest dropped first; a watch that needs a
// frame the hub no longer holds, or never made (it was made before the
// watch's starting point), makes that one itself.
//
// Only package replay uses it, for the watches of a recorded collection.
package fanout
