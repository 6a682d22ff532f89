package timeline

// TakeWrites makes t a timeline the code under test can write to (see
// [Timeline.Commit]), as [Timeline.WithWrites] makes one of a sealed
// timeline: its recorded resourceVersions are scaled by [RVScale]. Call
// it before [Timeline.Seal]. For the tests of package timeline_test.
func (t *Timeline) TakeWrites() { t.scale = RVScale }
