package cassettes

import "time"

// Repair ends every interaction of c that has no End, as a recorder killed
// mid-way leaves them, with [EndStopped] at its last frame's offset, and
// returns the IDs it ended. A request cut before its response ends as
// stopped at offset 0. Nothing recorded is dropped.
func Repair(c *Cassette) []int {
	var ended []int
	for _, in := range c.Interactions {
		if in.End != nil {
			continue
		}
		var at time.Duration
		if n := len(in.Frames); n > 0 {
			at = in.Frames[n-1].At
		}
		in.End = &End{At: at, Reason: EndStopped}
		ended = append(ended, in.ID)
	}
	return ended
}
