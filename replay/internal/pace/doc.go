// Package pace times what a replay serves, as kube-apiserver would:
//
//   - [Pacing] turns the gaps recorded between frames into waits on the
//     replay's clock, scaled by a speed and capped;
//   - [Lag] applies kube-apiserver's rule for a watch that cannot keep up
//     with its events, within a dispatch [Budget] shared by the watches of
//     one resource;
//   - [Alarms] lets every wait for one instant share one timer.
//
// Only package replay uses it: a served response body (replay's state
// machine) waits with Pacing and Alarms, and asks Lag, as it takes each
// frame of a paced watch, whether the watch has fallen too far behind.
package pace
