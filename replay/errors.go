package replay

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
)

// Sentinel errors. Match them with [errors.Is]; the errors returned wrap them
// with the request and what to do next.
var (
	// ErrNoMatch means a request matched no recorded interaction (and, when
	// not [Options.Strict], could not be answered from the rebuilt object
	// state either). The error's text names the request and the nearest
	// recorded candidates with what differs.
	ErrNoMatch = errors.New("no recorded interaction matches")
	// ErrExhausted means the cassette has been fully served: returned only
	// with [Options.ErrorWhenExhausted], as a RoundTrip error for a request
	// with no remaining match and as the body read error of a stream that
	// would otherwise idle, so a test can never hang on a finished replay.
	ErrExhausted = errors.New("replay exhausted: the cassette is consumed, every recorded change has been served")
	// ErrBadEdit means an edit could not be parsed or does not fit the
	// cassette (an interaction or frame that does not exist).
	ErrBadEdit = errors.New("bad replay edit")
	// ErrNotLoopback is returned by [Server.Start] for a listen address
	// other hosts could reach, unless [Server.AllowRemote] is set.
	ErrNotLoopback = errors.New("refusing to serve a cassette beyond loopback; use a 127.0.0.1 address, or allow remote clients explicitly")
)

// IsExhausted reports whether err is [ErrExhausted], also after client-go
// has flattened it: a watch body's read error reaches a client-go watcher
// only as the text of a decoding error, so the sentinel's text is matched
// too.
func IsExhausted(err error) bool { return matches(err, ErrExhausted) }

// IsNoMatch reports whether err is [ErrNoMatch], also inside client-go's
// errors (see [IsExhausted]).
func IsNoMatch(err error) bool { return matches(err, ErrNoMatch) }

func matches(err, sentinel error) bool {
	return err != nil && (errors.Is(err, sentinel) || strings.Contains(err.Error(), sentinel.Error()))
}

// errClosedBody mirrors net/http's error for a read after Close.
var errClosedBody = errors.New("http: read on closed response body")

// resetError is the body read error (or RoundTrip error) replaying a
// connection reset. It wraps [syscall.ECONNRESET], and its text contains
// "connection reset by peer" so apimachinery's net.IsProbableEOF treats it as
// a real reset, exactly as it does on a live connection.
type resetError struct{ recorded string }

func (e *resetError) Error() string {
	if e.recorded != "" {
		return fmt.Sprintf("read tcp: connection reset by peer (kwrec replay; recorded: %s)", e.recorded)
	}
	return "read tcp: connection reset by peer (kwrec replay)"
}

func (e *resetError) Unwrap() error { return syscall.ECONNRESET }
