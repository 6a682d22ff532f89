package replay

import (
	"fmt"

	"github.com/kwrec/kwrec/cassettes"
)

// WriteMode says what a [Replayer] does with a write (POST, PUT, PATCH or
// DELETE) that matches no recorded one.
type WriteMode int

// The write modes.
const (
	// WritesStrict fails such a write with [ErrNoMatch]: a write is
	// answered only by the recorded response to the same request. Through
	// [Server] the client reads a 500 InternalError carrying the error's
	// text, never a status that says something about the object.
	WritesStrict WriteMode = iota
	// WritesOverlay applies it to the recorded world as the API server
	// would (see the package documentation, "Writes"), and every watch,
	// list and get of its collection sees it from then on.
	WritesOverlay
)

// String returns "strict" or "overlay".
func (m WriteMode) String() string {
	if m == WritesOverlay {
		return "overlay"
	}
	return "strict"
}

// ParseWriteMode parses "strict" or "overlay".
func ParseWriteMode(s string) (WriteMode, error) {
	switch s {
	case "strict":
		return WritesStrict, nil
	case "overlay":
		return WritesOverlay, nil
	}
	return 0, fmt.Errorf("unknown write mode %q: use strict or overlay", s)
}

func (opts Options) overlay() bool { return opts.Writes == WritesOverlay }

// Writes returns the writes applied in Overlay mode, in order: each an
// interaction with the request, its JSON body, and the answer.
func (r *Replayer) Writes() []*cassettes.Interaction {
	if r.writer == nil {
		return nil
	}
	return r.writer.Writes()
}
