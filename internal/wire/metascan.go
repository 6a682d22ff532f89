package wire

import (
	"bytes"
	"cmp"
	"strings"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/labels"
)

// metaScan is MetaJSON's fast path: a scanner over the bytes that reads
// kind, apiVersion and metadata's name, namespace, resourceVersion, labels
// and the initial-events-end annotation, and skips every other value
// without decoding it. ok is false for anything it does not read plainly
// (a string with escapes in a field it keeps, a malformed value); MetaJSON
// then decodes.
func metaScan(raw []byte) (m Meta, ok bool) { return scanMeta(&scanner{b: raw}) }

// scanMeta is metaScan with s's settings (keyOnly).
func scanMeta(s *scanner) (m Meta, ok bool) {
	defer func() {
		// Labels and annotations merge over repeated keys, as decoding
		// into the same map does.
		m.Labels = s.labelString()
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
	labels labels.Set // metadata.labels so far, once a second labels member merges
	// pairs are the first labels member's, as read; seen says there was one.
	pairs      [][2][]byte
	labelsSeen bool
	iee        *string // the initial-events-end annotation so far, nil for none
	// keyOnly skips labels and annotations: EventKey reads only an
	// object's identity.
	keyOnly bool
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
		// The closing quote is the first one after an even number of
		// backslashes; strings are long (4 KB of data) and escapes rare.
		for j := s.i + 1; ; {
			k := bytes.IndexByte(s.b[j:], '"')
			if k < 0 {
				return false
			}
			q := j + k
			n := 0
			for p := q - 1; p > s.i && s.b[p] == '\\'; p-- {
				n++
			}
			if n%2 == 0 {
				s.i = q + 1
				return true
			}
			j = q + 1
		}
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
	return s.members(func(key []byte) (ok bool) {
		switch string(key) {
		case "name":
			m.Name, ok = s.str()
		case "namespace":
			m.Namespace, ok = s.str()
		case "resourceVersion":
			m.ResourceVersion, ok = s.str()
		case "labels", "annotations":
			switch {
			case s.keyOnly:
				ok = s.skip()
			case string(key) == "annotations":
				ok = s.annotations()
			default:
				ok = s.labelsMember()
			}
		default:
			ok = s.skip()
		}
		return ok
	})
}

// members reads an object, calling member for each key with s at the
// key's value; false, at once, for a malformed object or when member
// returns false.
func (s *scanner) members(member func(key []byte) bool) bool {
	if !s.open('{') {
		return false
	}
	for {
		key, more, ok := s.key()
		if !ok {
			return false
		}
		if !more {
			s.first = false
			return true
		}
		if !member(key) {
			return false
		}
		s.first = false
	}
}

// null reads a null, if that is what comes next.
func (s *scanner) null() bool {
	s.ws()
	if s.i+4 <= len(s.b) && string(s.b[s.i:s.i+4]) == "null" {
		s.i += 4
		return true
	}
	return false
}

// labelsMember reads a metadata.labels member: the first as pairs
// (strPairs), a repeated one merged over what came before.
func (s *scanner) labelsMember() bool {
	if !s.labelsSeen {
		s.labelsSeen = true
		return s.strPairs()
	}
	s.mergePairs()
	set, null, ok := s.strMap("")
	if ok {
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
	return ok
}

// annotations reads metadata.annotations for the initial-events-end one.
func (s *scanner) annotations() bool {
	set, null, ok := s.strMap(InitialEventsEnd)
	if ok {
		if null {
			s.iee = nil
		}
		if v, found := set[InitialEventsEnd]; found {
			s.iee = &v
		}
	}
	return ok
}

// strPairs reads the first labels member, an object of strings or null,
// into s.pairs without a map: an API server writes labels sorted, and
// labelString then joins them as they are.
func (s *scanner) strPairs() bool {
	if s.null() {
		return true
	}
	return s.members(func(key []byte) bool {
		v, ok := s.rawStr()
		if !ok {
			return false
		}
		if s.pairs == nil {
			s.pairs = make([][2][]byte, 0, 8)
		}
		s.pairs = append(s.pairs, [2][]byte{key, v})
		return true
	})
}

// mergePairs moves s.pairs into s.labels, for a repeated labels member
// to merge over.
func (s *scanner) mergePairs() {
	for _, p := range s.pairs {
		if s.labels == nil {
			s.labels = labels.Set{}
		}
		s.labels[string(p[0])] = string(p[1])
	}
	s.pairs = nil
}

// maxJoinedPairs bounds the labels labelString joins without a map: it
// checks their keys pairwise.
const maxJoinedPairs = 32

// labelString returns the labels read in labels.Set.String's form:
// "k=v" pairs, sorted, joined by commas.
func (s *scanner) labelString() string {
	if s.labels != nil || len(s.pairs) > maxJoinedPairs {
		s.mergePairs()
		return s.labels.String()
	}
	if len(s.pairs) == 0 {
		return ""
	}
	n := len(s.pairs) - 1
	for k, p := range s.pairs {
		// Sorted as String sorts "k=v", with no key twice (a later one
		// would replace an earlier one in a map): else through the map.
		if k > 0 && kvCompare(s.pairs[k-1], p) >= 0 || s.repeated(k) {
			s.mergePairs()
			return s.labels.String()
		}
		n += len(p[0]) + 1 + len(p[1])
	}
	var b strings.Builder
	b.Grow(n)
	for k, p := range s.pairs {
		if k > 0 {
			b.WriteByte(',')
		}
		b.Write(p[0])
		b.WriteByte('=')
		b.Write(p[1])
	}
	return b.String()
}

// kvCompare compares the strings a[0]+"="+a[1] and b[0]+"="+b[1] without
// making them.
func kvCompare(a, b [2][]byte) int {
	la, lb := len(a[0])+1+len(a[1]), len(b[0])+1+len(b[1])
	for i := 0; i < la && i < lb; i++ {
		if ca, cb := kvByte(a, i), kvByte(b, i); ca != cb {
			return cmp.Compare(ca, cb)
		}
	}
	return cmp.Compare(la, lb)
}

// kvByte returns byte i of p[0]+"="+p[1].
func kvByte(p [2][]byte, i int) byte {
	switch {
	case i < len(p[0]):
		return p[0][i]
	case i == len(p[0]):
		return '='
	}
	return p[1][i-len(p[0])-1]
}

// repeated reports whether pair k's key is an earlier pair's.
func (s *scanner) repeated(k int) bool {
	for _, p := range s.pairs[:k] {
		if bytes.Equal(p[0], s.pairs[k][0]) {
			return true
		}
	}
	return false
}

// strMap reads an object of strings: all of it when only is "", else only
// key only; null says it was null.
func (s *scanner) strMap(only string) (set labels.Set, null, ok bool) {
	if s.null() {
		return nil, true, true
	}
	ok = s.members(func(key []byte) bool {
		if only != "" && string(key) != only {
			return s.skip()
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		if set == nil {
			set = labels.Set{}
		}
		set[string(key)] = v
		return true
	})
	if !ok {
		return nil, false, false
	}
	return set, false, true
}

// scannedList is what listScan reads of a list.
type scannedList struct {
	kind, apiVersion, rv string
	items                [][2]int
}

// listScan is ListItemsJSON's fast path: it reads a list's kind,
// apiVersion and metadata.resourceVersion and each item's bounds, skipping
// everything else. ok is false for anything it does not read plainly, and
// for a body with more than the one object.
func listScan(body []byte) (l scannedList, ok bool) {
	s := scanner{b: body}
	var m Meta
	seen := map[string]bool{}
	ok = s.members(func(key []byte) (ok bool) {
		k := string(key)
		if seen[k] {
			// A repeated key: encoding/json's last-wins merging is
			// the decoder's business.
			return false
		}
		seen[k] = true
		switch k {
		case "kind":
			l.kind, ok = s.str()
		case "apiVersion":
			l.apiVersion, ok = s.str()
		case "metadata":
			ok = s.metadata(&m)
		case "items":
			l.items, ok = s.array(l.items[:0])
		default:
			ok = s.skip()
		}
		return ok
	})
	s.ws()
	if !ok || s.i != len(s.b) {
		return l, false
	}
	l.rv = m.ResourceVersion
	return l, true
}

// array reads an array of objects (or null) and appends each element's
// bounds to items.
func (s *scanner) array(items [][2]int) ([][2]int, bool) {
	if s.null() {
		return nil, true
	}
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return nil, false
	}
	s.i++
	for first := true; ; first = false {
		s.ws()
		if s.i >= len(s.b) {
			return nil, false
		}
		if s.b[s.i] == ']' {
			s.i++
			return items, true
		}
		if !first {
			if s.b[s.i] != ',' {
				return nil, false
			}
			s.i++
			s.ws()
		}
		if s.i >= len(s.b) || s.b[s.i] != '{' {
			return nil, false
		}
		start := s.i
		if !s.skip() {
			return nil, false
		}
		items = append(items, [2]int{start, s.i})
	}
}
