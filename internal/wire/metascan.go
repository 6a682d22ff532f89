package wire

import (
	"bytes"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"
)

// metaScan is MetaJSON's fast path: a scanner over the bytes that reads
// kind, apiVersion and metadata's name, namespace, resourceVersion, labels
// and the initial-events-end annotation, and skips every other value
// without decoding it. ok is false for anything it does not read plainly
// (a string with escapes in a field it keeps, a malformed value); MetaJSON
// then decodes.
func metaScan(raw []byte) (m Meta, ok bool) {
	s := scanner{b: raw}
	defer func() {
		// Labels and annotations merge over repeated keys, as decoding
		// into the same map does.
		if len(s.labels) > 0 {
			m.Labels = s.labels.String()
		}
		m.InitialEventsEnd = s.iee != nil && *s.iee == "true"
	}()
	if !s.open('{') {
		return m, false
	}
	for seen := 0; seen < 3; {
		key, more, ok := s.key()
		if !ok {
			return m, false
		}
		if !more {
			return m, true
		}
		switch string(key) {
		case "kind":
			if m.Kind, ok = s.str(); !ok {
				return m, false
			}
			seen++
		case "apiVersion":
			if m.APIVersion, ok = s.str(); !ok {
				return m, false
			}
			seen++
		case "metadata":
			if !s.metadata(&m) {
				return m, false
			}
			seen++
		default:
			if !s.skip() {
				return m, false
			}
		}
		s.first = false
	}
	return m, true
}

type scanner struct {
	b      []byte
	i      int
	first  bool       // no member read yet in the object being read
	labels labels.Set // metadata.labels so far
	iee    *string    // the initial-events-end annotation so far, nil for none
}

func (s *scanner) ws() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\n' || s.b[s.i] == '\t' || s.b[s.i] == '\r') {
		s.i++
	}
}

// open reads c (an object's '{').
func (s *scanner) open(c byte) bool {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != c {
		return false
	}
	s.i++
	s.first = true
	return true
}

// key reads the next member's key and its colon; more is false at the
// object's end.
func (s *scanner) key() (key []byte, more, ok bool) {
	s.ws()
	if s.i >= len(s.b) {
		return nil, false, false
	}
	if s.b[s.i] == '}' {
		s.i++
		return nil, false, true
	}
	if !s.first {
		if s.b[s.i] != ',' {
			return nil, false, false
		}
		s.i++
		s.ws()
	}
	s.first = false
	k, ok := s.rawStr()
	if !ok {
		return nil, false, false
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != ':' {
		return nil, false, false
	}
	s.i++
	return k, true, true
}

// rawStr reads a string without escapes and returns its bytes.
func (s *scanner) rawStr() ([]byte, bool) {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '"' {
		return nil, false
	}
	j := bytes.IndexByte(s.b[s.i+1:], '"')
	if j < 0 {
		return nil, false
	}
	v := s.b[s.i+1 : s.i+1+j]
	// Escapes, and bytes that are not UTF-8 (which encoding/json turns
	// into U+FFFD), are left to the decoder.
	if bytes.IndexByte(v, '\\') >= 0 || !utf8.Valid(v) {
		return nil, false
	}
	s.i += j + 2
	return v, true
}

func (s *scanner) str() (string, bool) {
	v, ok := s.rawStr()
	return string(v), ok
}

// skip passes over one value of any kind.
func (s *scanner) skip() bool {
	s.ws()
	if s.i >= len(s.b) {
		return false
	}
	switch c := s.b[s.i]; c {
	case '"':
		for s.i++; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case '\\':
				s.i++
			case '"':
				s.i++
				return true
			}
		}
		return false
	case '{', '[':
		depth := 0
		for ; s.i < len(s.b); s.i++ {
			switch s.b[s.i] {
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					s.i++
					return true
				}
			case '"':
				if !s.skip() {
					return false
				}
				s.i--
			}
		}
		return false
	default: // a number, true, false or null
		start := s.i
		for s.i < len(s.b) && s.b[s.i] != ',' && s.b[s.i] != '}' && s.b[s.i] != ']' && s.b[s.i] != ' ' && s.b[s.i] != '\n' {
			s.i++
		}
		return s.i > start
	}
}

// metadata reads the metadata object into m.
func (s *scanner) metadata(m *Meta) bool {
	if !s.open('{') {
		return false
	}
	for {
		key, more, ok := s.key()
		if !ok {
			return false
		}
		if !more {
			return true
		}
		switch string(key) {
		case "name":
			m.Name, ok = s.str()
		case "namespace":
			m.Namespace, ok = s.str()
		case "resourceVersion":
			m.ResourceVersion, ok = s.str()
		case "labels":
			var set labels.Set
			var null bool
			if set, null, ok = s.strMap(""); ok {
				if null {
					s.labels = nil
				}
				for k, v := range set {
					if s.labels == nil {
						s.labels = labels.Set{}
					}
					s.labels[k] = v
				}
			}
		case "annotations":
			var set labels.Set
			var null bool
			if set, null, ok = s.strMap(InitialEventsEnd); ok {
				if null {
					s.iee = nil
				}
				if v, found := set[InitialEventsEnd]; found {
					s.iee = &v
				}
			}
		default:
			ok = s.skip()
		}
		if !ok {
			return false
		}
		s.first = false
	}
}

// strMap reads an object of strings: all of it when only is "", else only
// key only; null says it was null.
func (s *scanner) strMap(only string) (set labels.Set, null, ok bool) {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return nil, true, true
	}
	if !s.open('{') {
		return nil, false, false
	}
	for {
		key, more, ok := s.key()
		if !ok {
			return nil, false, false
		}
		if !more {
			s.first = false
			return set, false, true
		}
		if only != "" && string(key) != only {
			if !s.skip() {
				return nil, false, false
			}
			continue
		}
		v, ok := s.str()
		if !ok {
			return nil, false, false
		}
		if set == nil {
			set = labels.Set{}
		}
		set[string(key)] = v
	}
}
