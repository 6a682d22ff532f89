package diff

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/kwrec/kwrec/cassettes"
)

// ErrBadPath is wrapped by the error for an ignore path that does not
// parse, or a [Options.NoIgnore] path that is not in [DefaultIgnore].
var ErrBadPath = errors.New("bad ignore path")

// ErrChanged is wrapped by the error for a cassette that does not read
// the same the second time [Compare] reads it.
var ErrChanged = errors.New("the cassette changed while it was compared")

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
	open := func(name string) Opener {
		return func() (Source, error) { return cassettes.Open(name) }
	}
	r, err := Compare(open(a), open(b), opts)
	if err != nil {
		return nil, err
	}
	r.A, r.B = a, b
	return r, nil
}

// Compare reads a and b to their ends and compares the objects they
// recorded, collection by collection; the report's A and B are "A" and "B".
// It reads each cassette once for its versions' sums, and a second time
// only when they have versions that differ, for those versions' fields.
func Compare(a, b Opener, opts Options) (*Report, error) {
	r, _, err := compare(a, b, opts)
	return r, err
}

// retention is what a comparison kept of the versions' bytes: the
// canonical JSON of the versions read again for their fields.
type retention struct {
	versions int
	bytes    int
}

// compare is Compare, also saying what it retained.
func compare(a, b Opener, opts Options) (*Report, retention, error) {
	var kept retention
	pats, err := patterns(opts)
	if err != nil {
		return nil, kept, err
	}
	var recs [2]*recording
	err = bothSides(a, b, func(side int, src Source) error {
		rec, err := read(src, pats)
		recs[side] = rec
		return err
	})
	if err != nil {
		return nil, kept, err
	}
	r := &Report{A: "A", B: "B", Collections: []Collection{}}
	for _, p := range pats {
		r.Ignored = append(r.Ignored, p.String())
	}
	var pairs []pairing
	ra, rb := recs[0].colls, recs[1].colls
	for _, path := range unionKeys(ra, rb) {
		if c, differs := compareCollection(path, ra[path], rb[path], [2]*rvTable{&recs[0].rvs, &recs[1].rvs}, &pairs); differs {
			r.Collections = append(r.Collections, c)
		}
	}
	r.Equal = len(r.Collections) == 0
	if len(pairs) == 0 {
		return r, kept, nil
	}
	// The second reading: the canonical JSON of the paired versions.
	var objs [2]map[int][]byte
	err = bothSides(a, b, func(side int, src Source) error {
		var err error
		objs[side], err = fetch(src, pats, pairs, side, &recs[side].rvs)
		return err
	})
	if err != nil {
		return nil, kept, err
	}
	for _, o := range objs {
		kept.versions += len(o)
		for _, b := range o {
			kept.bytes += len(b)
		}
	}
	// A version is in one pair at most: each is dropped once compared.
	for _, p := range pairs {
		var v [2]any
		for side := range v {
			ord := int(p.v[side].ord)
			if v[side], err = decode(objs[side][ord]); err != nil {
				return nil, kept, fmt.Errorf("cassette %c: %w", 'A'+side, err)
			}
			delete(objs[side], ord)
		}
		fields(v[0], v[1], nil, &p.step.Fields)
	}
	return r, kept, nil
}

// bothSides opens a, then b, and runs read on both at once; an error
// reading names its cassette.
func bothSides(a, b Opener, read func(side int, src Source) error) error {
	var srcs [2]Source
	for i, open := range []Opener{a, b} {
		src, err := open()
		if err != nil {
			for _, s := range srcs[:i] {
				if c, ok := s.(io.Closer); ok {
					c.Close()
				}
			}
			return err
		}
		srcs[i] = src
	}
	var errs [2]error
	var wg sync.WaitGroup
	for i, src := range srcs {
		wg.Go(func() { errs[i] = read(i, src) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("cassette %c: %w", 'A'+i, err)
		}
	}
	return nil
}

// fetch reads src again for the canonical JSON of one side of pairs,
// by ord, and stops after the last.
func fetch(src Source, pats []pattern, pairs []pairing, side int, rvs *rvTable) (map[int][]byte, error) {
	type wanted struct {
		version
		key string
	}
	want := make([]wanted, 0, len(pairs))
	for _, p := range pairs {
		want = append(want, wanted{p.v[side], p.key})
	}
	slices.SortFunc(want, func(x, y wanted) int { return cmp.Compare(x.ord, y.ord) })
	objs := make(map[int][]byte, len(want))
	cz := canonizer{pats: pats}
	err := scan(src, func(c *candidate) error {
		if len(want) == 0 {
			return errStop
		}
		if c.ord < int(want[0].ord) {
			return nil
		}
		w := want[0]
		want = want[1:]
		raw, err := c.json()
		if err != nil {
			return err
		}
		canon, err := cz.canonical(raw)
		if err != nil {
			return err
		}
		if sumOf(canon, w.deleted) != w.sum {
			return fmt.Errorf("%w: %s at resourceVersion %s reads differently the second time", ErrChanged, w.key, rvs.text(w.rv))
		}
		objs[int(w.ord)] = bytes.Clone(canon)
		return nil
	})
	if err == nil && len(want) > 0 {
		err = fmt.Errorf("%w: it ends before %s at resourceVersion %s", ErrChanged, want[0].key, rvs.text(want[0].rv))
	}
	return objs, err
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

func compareCollection(path string, a, b map[string]*history, rvs [2]*rvTable, pairs *[]pairing) (Collection, bool) {
	c := Collection{Path: path}
	for _, key := range unionKeys(a, b) {
		ha, hb := a[key], b[key]
		switch {
		case hb == nil:
			c.OnlyInA = append(c.OnlyInA, key)
		case ha == nil:
			c.OnlyInB = append(c.OnlyInB, key)
		default:
			if steps := align(key, ha.versions, hb.versions, rvs, pairs); len(steps) > 0 {
				c.Changed = append(c.Changed, Object{Key: key, Versions: steps})
			}
		}
	}
	return c, len(c.OnlyInA)+len(c.OnlyInB)+len(c.Changed) > 0
}

// pairing is a step of two unequal versions, waiting for its fields: the
// second reading of the cassettes fills them.
type pairing struct {
	step *Step
	key  string // the object's
	v    [2]version
}

// align lines up two histories by their longest common subsequence of
// equal versions, then pairs the unequal versions between two matches by
// position, as diff(1) turns a deletion and an insertion into a change:
// one object changed differently (k: "1" → "2" in A, → "3" in B) reads as a
// changed field, while an extra write in one history reads as a version
// only it has. It returns the steps that differ, and adds the paired ones
// to pairs, their fields still to be found.
func align(key string, a, b []version, rvs [2]*rvTable, pairs *[]pairing) []Step {
	var steps []Step
	var paired []int // indexes in steps
	gap := func(i0, i1, j0, j1 int) {
		for ; i0 < i1 && j0 < j1; i0, j0 = i0+1, j0+1 {
			paired = append(paired, len(steps))
			va, vb := a[i0], b[j0]
			steps = append(steps, Step{A: i0 + 1, B: j0 + 1, AResourceVersion: rvs[0].text(va.rv), BResourceVersion: rvs[1].text(vb.rv), ADeleted: va.deleted, BDeleted: vb.deleted})
		}
		for ; i0 < i1; i0++ {
			steps = append(steps, Step{A: i0 + 1, AResourceVersion: rvs[0].text(a[i0].rv), ADeleted: a[i0].deleted})
		}
		for ; j0 < j1; j0++ {
			steps = append(steps, Step{B: j0 + 1, BResourceVersion: rvs[1].text(b[j0].rv), BDeleted: b[j0].deleted})
		}
	}
	sa, sb := make([]sum, len(a)), make([]sum, len(b))
	for i, v := range a {
		sa[i] = v.sum
	}
	for j, v := range b {
		sb[j] = v.sum
	}
	i, j := 0, 0
	for _, m := range lcs(sa, sb) {
		gap(i, m[0], j, m[1])
		i, j = m[0]+1, m[1]+1
	}
	gap(i, len(a), j, len(b))
	for _, k := range paired {
		s := &steps[k]
		*pairs = append(*pairs, pairing{step: s, key: key, v: [2]version{a[s.A-1], b[s.B-1]}})
	}
	return steps
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
