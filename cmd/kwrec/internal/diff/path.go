package diff

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
)

// DefaultIgnore returns the paths [Compare] ignores unless
// [Options.NoIgnore] names them: what the API server sets on every write
// (resourceVersion, uid, generation, managedFields and its times) and the
// timestamps it stamps (creation, deletion, status conditions' transition
// and probe times), which differ between any two recordings of one
// scenario.
//
// Timestamps are matched by path, not by value: a ConfigMap whose data
// holds a date has a real difference when the date changes.
func DefaultIgnore() []string {
	return []string{
		".metadata.resourceVersion",
		".metadata.uid",
		".metadata.generation",
		".metadata.creationTimestamp",
		".metadata.deletionTimestamp",
		".metadata.managedFields",
		".metadata.managedFields[].time",
		".status.conditions[].last*Time",
	}
}

// step is one step of a JSON path: an object key or an array index.
type step struct {
	key   string
	index int // -1 for a key
}

// token is one step of an ignore pattern.
type token struct {
	kind  byte // 'k' literal key, 'g' key glob, '*' any index, 'i' one index
	s     string
	index int
}

// pattern is a parsed ignore path.
type pattern []token

var identRE = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$-]*$`)

// parsePattern parses an ignore path: steps .name (a key; * and ? glob
// within it), ["any key"] (a literal key, JSON-quoted), [] or [*] (any
// array index) and [N] (index N).
func parsePattern(s string) (pattern, error) {
	bad := func(why string) (pattern, error) {
		return nil, fmt.Errorf("ignore path %q: %s; write paths like .metadata.annotations, .data[\"a.b\"] or .items[].time", s, why)
	}
	if !strings.HasPrefix(s, ".") && !strings.HasPrefix(s, "[") {
		return bad("it must start with . or [")
	}
	var p pattern
	rest := s
	for rest != "" {
		var t token
		var why string
		switch rest[0] {
		case '.':
			t, rest, why = parseKeyStep(rest)
		case '[':
			t, rest, why = parseBracketStep(rest)
		default:
			why = fmt.Sprintf("unexpected %q", rest[:1])
		}
		if why != "" {
			return bad(why)
		}
		p = append(p, t)
	}
	return p, nil
}

// parseKeyStep parses the step .name that rest starts with, a key (* and
// ? glob within it), and returns its token and what follows it; why says
// what is wrong with the step, "" when nothing is.
func parseKeyStep(rest string) (t token, after, why string) {
	rest = rest[1:]
	n := strings.IndexAny(rest, ".[")
	if n < 0 {
		n = len(rest)
	}
	name := rest[:n]
	if name == "" {
		return t, "", "empty key"
	}
	if _, err := path.Match(name, ""); err != nil {
		return t, "", "bad glob " + name
	}
	kind := byte('k')
	if strings.ContainsAny(name, "*?[\\") {
		kind = 'g'
	}
	return token{kind: kind, s: name}, rest[n:], ""
}

// parseBracketStep parses the step that rest starts with in brackets,
// ["any key"] (a literal key, JSON-quoted), [] or [*] (any array index)
// or [N] (index N), and returns its token and what follows it; why says
// what is wrong with the step, "" when nothing is.
func parseBracketStep(rest string) (t token, after, why string) {
	if strings.HasPrefix(rest, `["`) {
		var key string
		dec := json.NewDecoder(strings.NewReader(rest[1:]))
		if err := dec.Decode(&key); err != nil {
			return t, "", "bad quoted key"
		}
		after = rest[1+int(dec.InputOffset()):]
		if !strings.HasPrefix(after, "]") {
			return t, "", "] expected after a quoted key"
		}
		return token{kind: 'k', s: key}, after[1:], ""
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return t, "", "unclosed ["
	}
	in := rest[1:end]
	switch n, err := strconv.Atoi(in); {
	case in == "" || in == "*":
		return token{kind: '*'}, rest[end+1:], ""
	case err == nil && n >= 0:
		return token{kind: 'i', index: n}, rest[end+1:], ""
	default:
		return t, "", "[" + in + "] is not an index"
	}
}

// String renders p canonically, so equal patterns compare equal.
func (p pattern) String() string {
	var b strings.Builder
	for _, t := range p {
		switch t.kind {
		case 'k':
			b.WriteString(keyStep(t.s))
		case 'g':
			b.WriteString("." + t.s)
		case '*':
			b.WriteString("[]")
		case 'i':
			fmt.Fprintf(&b, "[%d]", t.index)
		}
	}
	return b.String()
}

// matches reports whether p names exactly the path steps.
func (p pattern) matches(steps []step) bool {
	if len(p) != len(steps) {
		return false
	}
	for i, t := range p {
		s := steps[i]
		switch t.kind {
		case 'k':
			if s.index >= 0 || s.key != t.s {
				return false
			}
		case 'g':
			if ok, _ := path.Match(t.s, s.key); s.index >= 0 || !ok {
				return false
			}
		case '*':
			if s.index < 0 {
				return false
			}
		case 'i':
			if s.index != t.index {
				return false
			}
		}
	}
	return true
}

// keyStep renders one key step: .name, or ["name"] when name is not a
// plain identifier.
func keyStep(k string) string {
	if identRE.MatchString(k) {
		return "." + k
	}
	q, _ := json.Marshal(k)
	return "[" + string(q) + "]"
}

// render renders a path, "." for the root.
func render(steps []step) string {
	if len(steps) == 0 {
		return "."
	}
	var b strings.Builder
	for _, s := range steps {
		if s.index >= 0 {
			fmt.Fprintf(&b, "[%d]", s.index)
		} else {
			b.WriteString(keyStep(s.key))
		}
	}
	return b.String()
}
