// Package match holds how a replay matches a live request with a recorded
// interaction, as pure functions: [Default] (the logic of
// replay.DefaultMatcher), the canonical query both sides are compared in
// ([CanonicalQuery], [QueryDiff]), and the "no recorded match" error that
// names the request and its nearest recorded candidates ([NoMatch]).
//
// Only package replay uses it: replay.Matcher and replay.DefaultMatcher are
// its public face, and the Replayer ranks its candidates here.
package match
