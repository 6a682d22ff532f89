package diff

import (
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"path"
	"slices"
	"unicode/utf8"
)

// sum identifies a version by its canonical form: the first 64 bits of
// the SHA-256 of its deleted mark and canonical JSON. Two versions are
// equal exactly when their sums are, but for a collision: odds 2⁻⁶⁴ a
// pair compared, so that a billion pairs have one chance in 18 billion of
// one. 128 bits took a quarter more of diff's memory, which is mostly
// these records (a million-event recording diffed with itself: 2 million
// versions).
type sum [8]byte

// sumOf is the sum of a version of canonical form canon.
func sumOf(canon []byte, deleted bool) sum {
	h := sha256.New()
	mark := []byte{'f'}
	if deleted {
		mark[0] = 't'
	}
	h.Write(mark)
	h.Write(canon)
	var s sum
	copy(s[:], h.Sum(nil))
	return s
}

// canonizer writes an object's canonical JSON: what json.Marshal writes
// for the object decoded into any (json.Number for numbers) after
// [prune] and without the top-level kind and apiVersion. Its fast path
// is a scanner that writes as it reads, keys sorted as json.Marshal sorts
// a map's; anything it does not read plainly goes through the decoder
// and [prune] instead, so the bytes are the same either way. A canonizer
// is reused from object to object, one goroutine at a time.
type canonizer struct {
	pats []pattern
	out  []byte
	tmp  []byte   // a copy of an object's members while they are sorted
	keys []byte   // the keys that had escapes, unescaped
	mem  [][]span // each depth's members, reused
	live [][]int  // each depth's patterns still matching the path, reused
	src  []byte
	i    int
}

// span is one member of an object being written: its key (in src, or in
// keys when escaped) and its bytes "key":value in out.
type span struct {
	kfrom, kto int
	escaped    bool
	from, to   int
	empty      bool
}

// maxDepth is how deep the decoder nests objects and arrays before it
// gives up; deeper, the fast path leaves the verdict to it.
const maxDepth = 10000

// errSlow makes the fast path give way to the decoder.
var errSlow = errors.New("not read plainly")

// canonical returns raw's canonical JSON, valid until the next call.
func (c *canonizer) canonical(raw []byte) ([]byte, error) {
	if out, ok := c.fast(raw); ok {
		return out, nil
	}
	obj, err := decode(raw)
	if err != nil {
		return nil, err
	}
	obj = prune(obj, nil, c.pats)
	if m, ok := obj.(map[string]any); ok {
		// List items carry no kind and apiVersion, watch events do:
		// the collection says both.
		delete(m, "kind")
		delete(m, "apiVersion")
	}
	c.out, err = json.Marshal(obj)
	return c.out, err
}

// fast is canonical's fast path, false for what it does not read plainly.
func (c *canonizer) fast(raw []byte) ([]byte, bool) {
	c.out, c.keys, c.src, c.i = c.out[:0], c.keys[:0], raw, 0
	live := c.liveAt(0)
	for i := range c.pats {
		live = append(live, i)
	}
	c.live[0] = live
	_, err := c.value(0, true)
	return c.out, err == nil
}

// decode decodes raw into any, numbers as json.Number.
func decode(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var obj any
	err := dec.Decode(&obj)
	return obj, err
}

// liveAt returns c.live[depth] emptied, c.live grown to hold it.
func (c *canonizer) liveAt(depth int) []int {
	for len(c.live) <= depth {
		c.live = append(c.live, nil)
	}
	return c.live[depth][:0]
}

func (c *canonizer) ws() {
	for c.i < len(c.src) {
		switch c.src[c.i] {
		case ' ', '\t', '\n', '\r':
			c.i++
		default:
			return
		}
	}
}

// value writes the value at c.i, whose path is depth steps deep and
// matched by the patterns c.live[depth] names up to there; empty reports
// null, {} and [] (after pruning), which an object leaves out.
func (c *canonizer) value(depth int, top bool) (empty bool, err error) {
	c.ws()
	if c.i >= len(c.src) || depth >= maxDepth {
		return false, errSlow
	}
	switch b := c.src[c.i]; {
	case b == '{':
		return c.object(depth, top)
	case b == '[':
		return c.array(depth)
	case b == '"':
		from := c.i
		_, plain, ok := c.str()
		if !ok || !c.writeStr(c.src[from:c.i], plain) {
			return false, errSlow
		}
		return false, nil
	case b == '-' || b >= '0' && b <= '9':
		from := c.i
		if !c.number() {
			return false, errSlow
		}
		c.out = append(c.out, c.src[from:c.i]...)
		return false, nil
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
			c.i += len(lit)
			c.out = append(c.out, lit...)
			return lit == "null", nil
		}
	}
	return false, errSlow
}

// object writes the object at c.i with its members sorted by key, the
// ignored and the empty left out; top leaves out kind and apiVersion too.
func (c *canonizer) object(depth int, top bool) (empty bool, err error) {
	c.i++ // {
	for len(c.mem) <= depth {
		c.mem = append(c.mem, nil)
	}
	mem := c.mem[depth][:0]
	start := len(c.out)
	c.out = append(c.out, '{')
	c.ws()
	if c.i < len(c.src) && c.src[c.i] == '}' {
		c.i++
		c.out = append(c.out, '}')
		return true, nil
	}
	for {
		c.ws()
		if c.i >= len(c.src) || c.src[c.i] != '"' {
			return false, errSlow
		}
		kfrom := c.i
		key, plainKey, ok := c.str()
		if !ok {
			return false, errSlow
		}
		kend := c.i
		s := span{kfrom: kfrom + 1, kto: kend - 1}
		if !plainKey {
			var k string
			if json.Unmarshal(c.src[kfrom:kend], &k) != nil {
				return false, errSlow
			}
			s.escaped, s.kfrom = true, len(c.keys)
			c.keys = append(c.keys, k...)
			s.kto = len(c.keys)
			key = c.keys[s.kfrom:s.kto]
		}
		c.ws()
		if c.i >= len(c.src) || c.src[c.i] != ':' {
			return false, errSlow
		}
		c.i++
		if c.ignored(depth, key, -1) || top && (string(key) == "kind" || string(key) == "apiVersion") {
			if !c.skip() {
				return false, errSlow
			}
		} else {
			if len(mem) > 0 {
				c.out = append(c.out, ',')
			}
			s.from = len(c.out)
			if !c.writeStr(c.src[kfrom:kend], plainKey) {
				return false, errSlow
			}
			c.out = append(c.out, ':')
			if s.empty, err = c.value(depth+1, false); err != nil {
				return false, err
			}
			s.to = len(c.out)
			mem = append(mem, s)
		}
		c.ws()
		if c.i >= len(c.src) {
			return false, errSlow
		}
		if c.src[c.i] == '}' {
			c.i++
			break
		}
		if c.src[c.i] != ',' {
			return false, errSlow
		}
		c.i++
	}
	c.mem[depth] = mem
	return c.sortMembers(start, mem), nil
}

// sortMembers ends the object written from start, its members mem: in
// key order, as json.Marshal writes a map; a repeated key keeps its last
// value, as decoding into a map does; empty members are left out. An
// object already so, as the API server writes most, is left as written.
func (c *canonizer) sortMembers(start int, mem []span) (empty bool) {
	ordered := true
	for i, s := range mem {
		if s.empty || i > 0 && bytes.Compare(c.key(mem[i-1]), c.key(s)) >= 0 {
			ordered = false
			break
		}
	}
	if ordered {
		c.out = append(c.out, '}')
		return len(mem) == 0
	}
	slices.SortStableFunc(mem, func(a, b span) int { return bytes.Compare(c.key(a), c.key(b)) })
	c.tmp = append(c.tmp[:0], c.out[start:]...)
	c.out = append(c.out[:start], '{')
	n := 0
	for i, s := range mem {
		if i+1 < len(mem) && bytes.Equal(c.key(s), c.key(mem[i+1])) {
			continue // a later value of the same key wins
		}
		if s.empty {
			continue
		}
		if n > 0 {
			c.out = append(c.out, ',')
		}
		c.out = append(c.out, c.tmp[s.from-start:s.to-start]...)
		n++
	}
	c.out = append(c.out, '}')
	return n == 0
}

// array writes the array at c.i, each element pruned, none left out.
func (c *canonizer) array(depth int) (empty bool, err error) {
	c.i++ // [
	c.out = append(c.out, '[')
	c.ws()
	if c.i < len(c.src) && c.src[c.i] == ']' {
		c.i++
		c.out = append(c.out, ']')
		return true, nil
	}
	for n := 0; ; n++ {
		if n > 0 {
			c.out = append(c.out, ',')
		}
		// An element is never ignored (only members are), but the
		// patterns through it go on matching below it.
		c.ignored(depth, nil, n)
		if _, err := c.value(depth+1, false); err != nil {
			return false, err
		}
		c.ws()
		if c.i >= len(c.src) {
			return false, errSlow
		}
		if c.src[c.i] == ']' {
			c.i++
			c.out = append(c.out, ']')
			return false, nil
		}
		if c.src[c.i] != ',' {
			return false, errSlow
		}
		c.i++
	}
}

// ignored reports whether a pattern ends at the step depth+1, key (or
// index when index >= 0), and sets c.live[depth+1] to the patterns that
// match up to it and go on.
func (c *canonizer) ignored(depth int, key []byte, index int) bool {
	next := c.liveAt(depth + 1)
	hit := false
	for _, pi := range c.live[depth] {
		p := c.pats[pi]
		if !p[depth].matchesStep(key, index) {
			continue
		}
		if len(p) == depth+1 {
			hit = true
		} else {
			next = append(next, pi)
		}
	}
	c.live[depth+1] = next
	return hit
}

// matchesStep reports whether t matches the step key, or index when
// index >= 0.
func (t token) matchesStep(key []byte, index int) bool {
	switch t.kind {
	case 'k':
		return index < 0 && string(key) == t.s
	case 'g':
		ok, _ := path.Match(t.s, string(key))
		return index < 0 && ok
	case '*':
		return index >= 0
	case 'i':
		return index == t.index
	}
	return false
}

// strClass sorts a string's bytes for str: 0 for bytes json.Marshal
// writes as they are, 1 for the quote and backslash, 2 for what it
// escapes (control characters, <, >, &), 3 for the bytes of UTF-8's
// longer characters.
var strClass = func() (t [256]byte) {
	for b := range 0x20 {
		t[b] = 2
	}
	t['"'], t['\\'] = 1, 1
	t['<'], t['>'], t['&'] = 2, 2, 2
	for b := 0x80; b < 0x100; b++ {
		t[b] = 3
	}
	return t
}()

// str reads the string at c.i (at its quote): what it holds between its
// quotes as written, whether that is plain (json.Marshal writes the
// string it holds as written: no escapes, nothing it escapes, valid
// UTF-8 without U+2028 or U+2029), and whether it ends.
func (c *canonizer) str() (s []byte, plain, ok bool) {
	from := c.i + 1
	plain = true
	ascii := true
	for i := from; i < len(c.src); i++ {
		switch strClass[c.src[i]] {
		case 0:
		case 1:
			if c.src[i] == '\\' {
				plain = false
				i++
				continue
			}
			c.i = i + 1
			s = c.src[from:i]
			if plain && !ascii {
				plain = utf8.Valid(s) && !bytes.Contains(s, []byte("\u2028")) && !bytes.Contains(s, []byte("\u2029"))
			}
			return s, plain, true
		case 2:
			plain = false
		case 3:
			ascii = false
		}
	}
	return nil, false, false
}

// writeStr writes the string q (with its quotes) as json.Marshal writes
// it: as is when plain, else decoded and encoded again; false when it
// does not decode.
func (c *canonizer) writeStr(q []byte, plain bool) bool {
	if plain {
		c.out = append(c.out, q...)
		return true
	}
	var s string
	if json.Unmarshal(q, &s) != nil {
		return false
	}
	b, _ := json.Marshal(s)
	c.out = append(c.out, b...)
	return true
}

// key returns s's key, unescaped.
func (c *canonizer) key(s span) []byte {
	if s.escaped {
		return c.keys[s.kfrom:s.kto]
	}
	return c.src[s.kfrom:s.kto]
}

// number reads the number at c.i, true when it is one as JSON spells
// them; json.Number keeps its spelling.
func (c *canonizer) number() bool {
	b, i := c.src, c.i
	digits := func() bool {
		n := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > n
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	if i < len(b) && b[i] == '0' {
		i++
	} else if !digits() {
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	c.i = i
	return true
}

// skip reads past the value at c.i without writing it, false when it
// does not read plainly.
func (c *canonizer) skip() bool {
	c.ws()
	if c.i >= len(c.src) {
		return false
	}
	switch b := c.src[c.i]; {
	case b == '{' || b == '[':
		closing := byte('}')
		if b == '[' {
			closing = ']'
		}
		c.i++
		c.ws()
		if c.i < len(c.src) && c.src[c.i] == closing {
			c.i++
			return true
		}
		for {
			if b == '{' {
				c.ws()
				if c.i >= len(c.src) || c.src[c.i] != '"' {
					return false
				}
				from := c.i
				if _, plain, ok := c.str(); !ok || !plain && !json.Valid(c.src[from:c.i]) {
					return false
				}
				c.ws()
				if c.i >= len(c.src) || c.src[c.i] != ':' {
					return false
				}
				c.i++
			}
			if !c.skip() {
				return false
			}
			c.ws()
			if c.i >= len(c.src) {
				return false
			}
			if c.src[c.i] == closing {
				c.i++
				return true
			}
			if c.src[c.i] != ',' {
				return false
			}
			c.i++
		}
	case b == '"':
		// The decoder reads what is ignored too: a bad escape or a
		// control character is an error either way.
		from := c.i
		_, plain, ok := c.str()
		return ok && (plain || json.Valid(c.src[from:c.i]))
	case b == '-' || b >= '0' && b <= '9':
		return c.number()
	}
	for _, lit := range []string{"true", "false", "null"} {
		if bytes.HasPrefix(c.src[c.i:], []byte(lit)) {
			c.i += len(lit)
			return true
		}
	}
	return false
}

// prune returns v without the fields pats name and without fields that
// are null, {} or [] (after pruning), which Kubernetes reads as absent:
// protobuf cannot tell an empty map or list from a missing one, and a typed
// object decoded from it writes nulls the API server's JSON leaves out.
func prune(v any, at []step, pats []pattern) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			p := append(at[:len(at):len(at)], step{key: k, index: -1})
			if ignored(p, pats) {
				continue
			}
			if x = prune(x, p, pats); !empty(x) {
				out[k] = x
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = prune(x, append(at[:len(at):len(at)], step{index: i}), pats)
		}
		return out
	}
	return v
}

func empty(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

func ignored(p []step, pats []pattern) bool {
	for _, pat := range pats {
		if pat.matches(p) {
			return true
		}
	}
	return false
}
