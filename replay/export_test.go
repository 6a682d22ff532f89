package replay

// Exported for the tests of package replay_test.
var (
	CanonicalQuery = canonicalQuery
	Pending        = (*Replayer).pending
)
