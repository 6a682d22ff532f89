package replay

// Exported for the tests of package replay_test.
var (
	Pending = (*Replayer).pending
)
