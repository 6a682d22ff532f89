package replay_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/kwrec/kwrec/replay"
)

func TestTheSentinelsAreRecognisedAfterClientGoFlattensThem(t *testing.T) {
	flattened := errors.New(`an error on the server ("unable to decode an event from the watch stream: ` + replay.ErrExhausted.Error() + `") has prevented the request from succeeding`)
	tests := []struct {
		name                 string
		err                  error
		exhausted, noMatched bool
	}{
		{"nil is neither", nil, false, false},
		{"a wrapped ErrExhausted", fmt.Errorf("watch failed: %w", replay.ErrExhausted), true, false},
		{"ErrExhausted as text inside a client-go decoding error", flattened, true, false},
		{"a wrapped ErrNoMatch", fmt.Errorf("list: %w", replay.ErrNoMatch), false, true},
		{"another error", errors.New("connection refused"), false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := replay.IsExhausted(tt.err); got != tt.exhausted {
				t.Errorf("IsExhausted = %v, want %v", got, tt.exhausted)
			}
			if got := replay.IsNoMatch(tt.err); got != tt.noMatched {
				t.Errorf("IsNoMatch = %v, want %v", got, tt.noMatched)
			}
		})
	}
}
