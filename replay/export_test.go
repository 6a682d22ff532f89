package replay

// Exported for the tests of package replay_test.
var (
	Pending = func(r *Replayer) []string { return r.prog.pending() }
)
