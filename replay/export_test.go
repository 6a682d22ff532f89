package replay

// SplitWatchLineForTest exposes splitWatchLine to the external tests.
var SplitWatchLineForTest = splitWatchLine
