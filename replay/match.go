package replay

import (
	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/match"
)

// A Matcher compares a live request (got, with its URL, headers and body
// filled in) with a recorded interaction. It returns nil when the recorded
// interaction may answer the request, else the differences, each a short
// phrase such as "query resourceVersion=12 vs 10" (live value first). The
// differences also rank the nearest candidates in [ErrNoMatch] messages:
// fewer is nearer. A Matcher must be a pure function; it is called with the
// [Replayer]'s lock held.
type Matcher func(got *cassettes.Request, rec *cassettes.Interaction) []string

// DefaultMatcher matches on method, URL path, canonical query (parameters
// sorted, timeoutSeconds and timeout ignored: client-go picks a random timeoutSeconds
// for every watch), the body for requests that have one, and
// the response's media type against the request's Accept header: a JSON-only
// client is not answered with a recorded protobuf stream, while client-go's
// "application/vnd.kubernetes.protobuf,application/json" takes either.
func DefaultMatcher(got *cassettes.Request, rec *cassettes.Interaction) []string {
	return match.Default(got, rec)
}
