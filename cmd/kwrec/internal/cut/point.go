package cut

import "errors"

// ErrOrder: a window whose start is after its end. (A point's own errors
// are timepoint's: ErrBadPoint, ErrOutside, ErrUnknownRV.)
var ErrOrder = errors.New("empty window")
