package watcher

import (
	"maps"
	"slices"
	"sync"
)

// Store is an in-memory view fed by a watcher's events, keyed by [Key].
// An initial view (Init … InitDone) is applied atomically: readers keep
// seeing the previous contents until InitDone, then the new view replaces
// them at once, so objects deleted during a re-list disappear and nothing is
// ever half-listed. Objects are shared with the events: do not modify them.
// The zero value is an empty store, safe for concurrent use.
type Store[T Object] struct {
	mu      sync.RWMutex
	objects map[string]T
	pending map[string]T // the view being built; nil outside Init … InitDone
	ready   bool
}

// Apply updates the store with one event. Error events change nothing.
func (s *Store[T]) Apply(ev Event[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch ev.Type {
	case Init:
		s.pending = map[string]T{}
	case InitApply:
		if s.pending == nil { // InitApply without Init: be lenient
			s.pending = map[string]T{}
		}
		s.pending[Key(ev.Object)] = ev.Object
	case InitDone:
		s.objects, s.pending = s.pending, nil
		if s.objects == nil {
			s.objects = map[string]T{}
		}
		s.ready = true
	case Apply:
		if s.objects == nil {
			s.objects = map[string]T{}
		}
		s.objects[Key(ev.Object)] = ev.Object
	case Delete:
		delete(s.objects, Key(ev.Object))
	}
}

// Ready reports whether a first InitDone has been applied.
func (s *Store[T]) Ready() bool {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.ready
}

// Get returns the object with key "namespace/name" ("name" if cluster
// scoped).
func (s *Store[T]) Get(key string) (T, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	obj, ok := s.objects[key]
	return obj, ok
}

// List returns every object, sorted by key.
func (s *Store[T]) List() []T {
	s.mu.RLock()
	defer s.mu.RUnlock()
	objs := make([]T, 0, len(s.objects))
	for _, k := range slices.Sorted(maps.Keys(s.objects)) {
		objs = append(objs, s.objects[k])
	}
	return objs
}
