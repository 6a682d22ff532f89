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
		switch rest[0] {
		case '.':
			rest = rest[1:]
			n := strings.IndexAny(rest, ".[")
			if n < 0 {
				n = len(rest)
			}
			name := rest[:n]
			rest = rest[n:]
			if name == "" {
				return bad("empty key")
			}
			if _, err := path.Match(name, ""); err != nil {
				return bad("bad glob " + name)
			}
			kind := byte('k')
			if strings.ContainsAny(name, "*?[\\") {
				kind = 'g'
			}
			p = append(p, token{kind: kind, s: name})
		case '[':
			end := strings.IndexByte(rest, ']')
			if strings.HasPrefix(rest, `["`) {
				var key string
				dec := json.NewDecoder(strings.NewReader(rest[1:]))
				if err := dec.Decode(&key); err != nil {
					return bad("bad quoted key")
				}
				after := rest[1+int(dec.InputOffset()):]
				if !strings.HasPrefix(after, "]") {
					return bad("] expected after a quoted key")
				}
				p = append(p, token{kind: 'k', s: key})
				rest = after[1:]
				continue
			}
			if end < 0 {
				return bad("unclosed [")
			}
			in := rest[1:end]
			rest = rest[end+1:]
			switch n, err := strconv.Atoi(in); {
			case in == "" || in == "*":
				p = append(p, token{kind: '*'})
			case err == nil && n >= 0:
				p = append(p, token{kind: 'i', index: n})
			default:
				return bad("[" + in + "] is not an index")
			}
		default:
			return bad(fmt.Sprintf("unexpected %q", rest[:1]))
		}
	}
	return p, nil
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
