package diff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/kwrec/kwrec/cassettes"
)

// ErrBadPath is wrapped by the error for an ignore path that does not
// parse, or a [Options.NoIgnore] path that is not in [DefaultIgnore].
var ErrBadPath = errors.New("bad ignore path")

// Options configures [Compare]. The zero value ignores the paths of
// [DefaultIgnore] and nothing else.
type Options struct {
	// Ignore adds paths to ignore (".metadata.annotations"); a path
	// covers everything under it.
	Ignore []string
	// NoIgnore takes paths out of [DefaultIgnore]; each must be one of
	// them, spelled as there.
	NoIgnore []string
}

// Report is the difference between two cassettes, and the stable shape of
// kwrec diff --json.
type Report struct {
	// A and B name the cassettes (their paths for [Files]).
	A string `json:"a"`
	B string `json:"b"`
	// Equal is true when no collection differs.
	Equal bool `json:"equal"`
	// Ignored lists the ignore paths in effect.
	Ignored []string `json:"ignored"`
	// Collections lists the collections that differ, by path.
	Collections []Collection `json:"collections"`
}

// Collection is how one collection differs. Path is its all-namespaces
// path (/api/v1/configmaps): requests on /api/v1/namespaces/X/configmaps
// fill the same collection, their objects keyed namespace/name.
type Collection struct {
	Path string `json:"collection"`
	// OnlyInA and OnlyInB are the keys (namespace/name, or name for
	// cluster-scoped objects) of objects seen in one cassette only, sorted.
	OnlyInA []string `json:"onlyInA,omitempty"`
	OnlyInB []string `json:"onlyInB,omitempty"`
	// Changed are the objects in both whose histories differ, by key.
	Changed []Object `json:"changed,omitempty"`
}

// Object is how the history of one object differs.
type Object struct {
	Key string `json:"key"`
	// Versions are the steps of the aligned histories that differ, in
	// order; equal steps are left out.
	Versions []Step `json:"versions"`
}

// Step is one step of two aligned histories: a version of A paired with a
// version of B that differs from it (Fields set), or a version only one
// side has (the other side's index 0).
type Step struct {
	// A and B are 1-based positions in each history, 0 when absent.
	A int `json:"a,omitempty"`
	B int `json:"b,omitempty"`
	// AResourceVersion and BResourceVersion are the recorded
	// resourceVersions.
	AResourceVersion string `json:"aResourceVersion,omitempty"`
	BResourceVersion string `json:"bResourceVersion,omitempty"`
	// ADeleted and BDeleted mark a version that is a DELETED event.
	ADeleted bool `json:"aDeleted,omitempty"`
	BDeleted bool `json:"bDeleted,omitempty"`
	// Fields are the differing fields of a paired step, by path.
	Fields []Field `json:"fields,omitempty"`
}

// Field is one differing field. A and B are its JSON values, nil (left out
// of the JSON) when the field is absent on that side.
type Field struct {
	Path string          `json:"path"`
	A    json.RawMessage `json:"a,omitempty"`
	B    json.RawMessage `json:"b,omitempty"`
}

// Files compares the cassette files a and b (compressed or plain).
func Files(a, b string, opts Options) (*Report, error) {
	if _, err := patterns(opts); err != nil {
		return nil, err // before reading anything
	}
	ra, err := cassettes.Open(a)
	if err != nil {
		return nil, err
	}
	defer ra.Close()
	rb, err := cassettes.Open(b)
	if err != nil {
		return nil, err
	}
	defer rb.Close()
	r, err := Compare(ra, rb, opts)
	if err != nil {
		return nil, err
	}
	r.A, r.B = a, b
	return r, nil
}

// Compare reads a and b to their ends and compares the objects they
// recorded, collection by collection; the report's A and B are "A" and "B".
func Compare(a, b Source, opts Options) (*Report, error) {
	pats, err := patterns(opts)
	if err != nil {
		return nil, err
	}
	ra, err := read(a)
	if err != nil {
		return nil, fmt.Errorf("cassette A: %w", err)
	}
	rb, err := read(b)
	if err != nil {
		return nil, fmt.Errorf("cassette B: %w", err)
	}
	r := &Report{A: "A", B: "B", Collections: []Collection{}}
	for _, p := range pats {
		r.Ignored = append(r.Ignored, p.String())
	}
	for _, path := range unionKeys(ra, rb) {
		if c, differs := compareCollection(path, ra[path], rb[path], pats); differs {
			r.Collections = append(r.Collections, c)
		}
	}
	r.Equal = len(r.Collections) == 0
	return r, nil
}

// patterns parses the ignore paths opts puts in effect.
func patterns(opts Options) ([]pattern, error) {
	var out []pattern
	drop := map[string]bool{}
	for _, s := range opts.NoIgnore {
		p, err := parsePattern(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadPath, err)
		}
		drop[p.String()] = true
	}
	for _, s := range append(DefaultIgnore(), opts.Ignore...) {
		p, err := parsePattern(s)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadPath, err)
		}
		if drop[p.String()] {
			delete(drop, p.String())
			continue
		}
		out = append(out, p)
	}
	for s := range drop {
		return nil, fmt.Errorf("%w: %s is not ignored by default; the defaults are %s", ErrBadPath, s, strings.Join(DefaultIgnore(), " "))
	}
	return out, nil
}

func unionKeys[V any](a, b map[string]V) []string {
	var keys []string
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func compareCollection(path string, a, b map[string]*history, pats []pattern) (Collection, bool) {
	c := Collection{Path: path}
	for _, key := range unionKeys(a, b) {
		ha, hb := a[key], b[key]
		switch {
		case hb == nil:
			c.OnlyInA = append(c.OnlyInA, key)
		case ha == nil:
			c.OnlyInB = append(c.OnlyInB, key)
		default:
			if steps := align(normalize(ha, pats), normalize(hb, pats)); len(steps) > 0 {
				c.Changed = append(c.Changed, Object{Key: key, Versions: steps})
			}
		}
	}
	return c, len(c.OnlyInA)+len(c.OnlyInB)+len(c.Changed) > 0
}

// norm is a version with the ignored fields dropped.
type norm struct {
	index int // 1-based position in the normalized history
	version
	canon string // canonical JSON, with the deleted mark
}

// normalize drops ignored fields, null values and the type meta from every
// version of h, then collapses consecutive versions that became equal: a
// write that changed only ignored fields is no change.
func normalize(h *history, pats []pattern) []norm {
	var out []norm
	for _, v := range h.versions {
		obj := prune(v.obj, nil, pats)
		if m, ok := obj.(map[string]any); ok {
			// List items carry no kind and apiVersion, watch events
			// do: the collection says both.
			delete(m, "kind")
			delete(m, "apiVersion")
		}
		b, _ := json.Marshal(obj)
		canon := fmt.Sprintf("%t %s", v.deleted, b)
		if n := len(out); n > 0 && out[n-1].canon == canon {
			continue
		}
		v.obj = obj
		out = append(out, norm{index: len(out) + 1, version: v, canon: canon})
	}
	return out
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

// alignLimit bounds the LCS table; longer histories align by index.
const alignLimit = 1 << 22

// align lines up two histories by their longest common subsequence of
// equal versions, then pairs the unequal versions between two matches by
// position, as diff(1) turns a deletion and an insertion into a change:
// one object changed differently (k: "1" → "2" in A, → "3" in B) reads as a
// changed field, while an extra write in one history reads as a version
// only it has. It returns the steps that differ.
func align(a, b []norm) []Step {
	var steps []Step
	gap := func(ga, gb []norm) {
		for len(ga) > 0 && len(gb) > 0 {
			steps = append(steps, pair(ga[0], gb[0]))
			ga, gb = ga[1:], gb[1:]
		}
		for _, v := range ga {
			steps = append(steps, Step{A: v.index, AResourceVersion: v.rv, ADeleted: v.deleted})
		}
		for _, v := range gb {
			steps = append(steps, Step{B: v.index, BResourceVersion: v.rv, BDeleted: v.deleted})
		}
	}
	i, j := 0, 0
	for _, m := range lcs(a, b) {
		gap(a[i:m[0]], b[j:m[1]])
		i, j = m[0]+1, m[1]+1
	}
	gap(a[i:], b[j:])
	return steps
}

// lcs returns the index pairs of a longest common subsequence of a and b
// by canonical form; none when the table would exceed alignLimit.
func lcs(a, b []norm) [][2]int {
	n, m := len(a), len(b)
	if n*m > alignLimit || n == 0 || m == 0 {
		return nil
	}
	t := make([][]int32, n+1)
	for i := range t {
		t[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i].canon == b[j].canon {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	var out [][2]int
	for i, j := 0, 0; i < n && j < m; {
		switch {
		case a[i].canon == b[j].canon:
			out = append(out, [2]int{i, j})
			i, j = i+1, j+1
		case t[i+1][j] >= t[i][j+1]:
			i++
		default:
			j++
		}
	}
	return out
}

func pair(va, vb norm) Step {
	s := Step{A: va.index, B: vb.index, AResourceVersion: va.rv, BResourceVersion: vb.rv, ADeleted: va.deleted, BDeleted: vb.deleted}
	fields(va.obj, vb.obj, nil, &s.Fields)
	return s
}

// fields appends the differences between a and b at path at; nil is
// absent.
func fields(a, b any, at []step, out *[]Field) {
	ma, oka := a.(map[string]any)
	mb, okb := b.(map[string]any)
	if oka && okb {
		for _, k := range unionKeys(ma, mb) {
			fields(ma[k], mb[k], append(at[:len(at):len(at)], step{key: k, index: -1}), out)
		}
		return
	}
	la, oka := a.([]any)
	lb, okb := b.([]any)
	if oka && okb {
		for i := range max(len(la), len(lb)) {
			var x, y any
			if i < len(la) {
				x = la[i]
			}
			if i < len(lb) {
				y = lb[i]
			}
			fields(x, y, append(at[:len(at):len(at)], step{index: i}), out)
		}
		return
	}
	ja, jb := raw(a), raw(b)
	if string(ja) != string(jb) {
		*out = append(*out, Field{Path: render(at), A: ja, B: jb})
	}
}

func raw(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	b, _ := json.Marshal(v)
	return b
}

// WriteText writes r for people: each differing collection, the objects
// only one side has, and for each changed object its differing steps with
// their fields, "path: A → B".
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "A: %s\nB: %s\n", r.A, r.B)
	for _, c := range r.Collections {
		fmt.Fprintf(&b, "%s\n", c.Path)
		for _, k := range c.OnlyInA {
			fmt.Fprintf(&b, "  only in A: %s\n", k)
		}
		for _, k := range c.OnlyInB {
			fmt.Fprintf(&b, "  only in B: %s\n", k)
		}
		for _, o := range c.Changed {
			fmt.Fprintf(&b, "  changed: %s\n", o.Key)
			for _, s := range o.Versions {
				b.WriteString("    " + s.text() + "\n")
				for _, f := range s.Fields {
					fmt.Fprintf(&b, "      %s: %s → %s\n", f.Path, value(f.A), value(f.B))
				}
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func (s Step) text() string {
	side := func(name string, i int, rv string, deleted bool) string {
		t := fmt.Sprintf("%s#%d", name, i)
		if rv != "" {
			t += " rv=" + rv
		}
		if deleted {
			t += " DELETED"
		}
		return t
	}
	switch {
	case s.B == 0:
		return side("A", s.A, s.AResourceVersion, s.ADeleted) + ": only in A"
	case s.A == 0:
		return side("B", s.B, s.BResourceVersion, s.BDeleted) + ": only in B"
	}
	return side("A", s.A, s.AResourceVersion, s.ADeleted) + " ↔ " + side("B", s.B, s.BResourceVersion, s.BDeleted) + ":"
}

func value(v json.RawMessage) string {
	if v == nil {
		return "(absent)"
	}
	return string(v)
}
