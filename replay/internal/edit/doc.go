// Package edit holds the machinery of replay's edits that does not depend
// on their public type, replay.Edit: the KIND:key=value syntax and its
// value checks ([Syntax]), the state of a resolved edit as it fires
// ([State]), what an edit anchored by resource names ([Anchor]: the
// timelines it sits on, the requests it counts, by their API verb,
// [Verb]), and the answer of an expired continue token
// ([ContinueExpired]).
//
// Only package replay uses it. replay.Edit, replay.ParseEdit and
// replay.EditReport are its public face: replay parses each key into the
// Edit's fields with the checks here, and resolves edits to the
// interactions and timeline marks they act on through [State] and
// [Anchor].
package edit
