package edit

import (
	"sync"

	"github.com/kwrec/kwrec/internal/timeline"
)

// State is where a resolved edit sits and whether it fired.
type State struct {
	// Where says where the edit sits, for reports; Interaction, Paths and
	// RV say it as data (see replay.EditReport).
	Where       string
	Interaction int
	Paths       []string
	RV          int64
	// Mark is the timeline point of a watch-error, reset or truncate; it
	// counts its own firing.
	Mark *timeline.Mark

	mu      sync.Mutex
	fired   int
	firedAt string
	seen    int // requests counted by an error edit anchored by resource
}

// Fire notes that the edit took effect, at a place for reports.
func (s *State) Fire(at string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fired++
	if s.firedAt == "" {
		s.firedAt = at
	}
}

// Fired counts the times the edit took effect.
func (s *State) Fired() int {
	if s.Mark != nil {
		return s.Mark.Fired()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.fired
}

// Count counts one more request the edit is anchored on, and reports
// whether it is the nth.
func (s *State) Count(nth int) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seen++
	return s.seen == nth
}
