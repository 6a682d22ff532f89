package report

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"strconv"
)

// maxBaseChain bounds how many first versions in a row are stored as
// deltas of an earlier object's, so the page rebuilds any of them quickly.
const maxBaseChain = 16

// store keeps each object version once, as a delta of the one before.
type store struct {
	objects  []Object
	versions Versions
	texts    textLog
	objectOf map[string]int // kind/namespace/name → object
	seen     map[string]int // kind/namespace/name/rv → version
	last     map[int][]string
	// kindBase is the latest first version of each kind, the base of
	// the next object's first version.
	kindBase map[string]kindBase
}

type kindBase struct {
	version, depth int
	lines          []string
}

func newStore() *store {
	return &store{objectOf: map[string]int{}, seen: map[string]int{}, last: map[int][]string{}, kindBase: map[string]kindBase{}}
}

// add stores o's version unless it is stored already, and returns its
// index.
func (s *store) add(o object) int {
	okey := o.meta.Kind + "/" + o.meta.Namespace + "/" + o.meta.Name
	vkey := okey + "/" + o.meta.ResourceVersion
	if v, ok := s.seen[vkey]; ok {
		return v
	}
	oi, ok := s.objectOf[okey]
	if !ok {
		oi = len(s.objects)
		s.objectOf[okey] = oi
		s.objects = append(s.objects, Object{Kind: o.meta.Kind, Namespace: o.meta.Namespace, Name: o.meta.Name})
	}
	v := len(s.versions.Object)
	s.seen[vkey] = v
	lines := o.lines()
	var text json.RawMessage
	if prev := s.objects[oi].Versions; len(prev) > 0 {
		text = encodeDelta(prev[len(prev)-1], diffLines(s.last[oi], lines))
	} else {
		text = s.first(o.meta.Kind, v, lines)
	}
	s.objects[oi].Versions = append(s.objects[oi].Versions, v)
	s.last[oi] = lines
	s.versions.Object = append(s.versions.Object, oi)
	s.versions.RV = append(s.versions.RV, o.meta.ResourceVersion)
	s.texts.add(text)
	return v
}

// textLog is the versions' texts as a JSON array gzipped as they come:
// what the page embeds, so the report holds them compressed.
type textLog struct {
	buf bytes.Buffer
	gz  *gzip.Writer
}

func (l *textLog) add(t []byte) {
	if l.gz == nil {
		l.start()
	} else {
		l.gz.Write([]byte{','}) // into a bytes.Buffer: no error
	}
	l.gz.Write(t)
}

// start opens the array.
func (l *textLog) start() {
	l.gz, _ = gzip.NewWriterLevel(&l.buf, gzip.BestCompression) // a valid level
	l.gz.Write([]byte{'['})
}

// close ends the array and returns the gzipped bytes.
func (l *textLog) close() []byte {
	if l.gz == nil {
		l.start()
	}
	l.gz.Write([]byte{']'})
	l.gz.Close()
	return l.buf.Bytes()
}

// first encodes an object's first version: as a delta of the previous
// object of its kind when that is smaller than the whole text (objects of
// a kind share most of their shape), else whole.
func (s *store) first(kind string, v int, lines []string) json.RawMessage {
	whole := encodeDelta(-1, []lineOp{{insert: lines}})
	kb, ok := s.kindBase[kind]
	if ok && kb.depth < maxBaseChain {
		if d := encodeDelta(kb.version, diffLines(kb.lines, lines)); len(d) < len(whole) {
			s.kindBase[kind] = kindBase{version: v, depth: kb.depth + 1, lines: lines}
			return d
		}
	}
	s.kindBase[kind] = kindBase{version: v, lines: lines}
	return whole
}

// encodeDelta writes [base, op...] (see [Versions].Texts).
func encodeDelta(base int, ops []lineOp) json.RawMessage {
	b := []byte{'['}
	b = strconv.AppendInt(b, int64(base), 10)
	for _, o := range ops {
		b = append(b, ',')
		switch {
		case o.keep > 0:
			b = strconv.AppendInt(b, int64(o.keep), 10)
		case o.skip > 0:
			b = strconv.AppendInt(b, int64(-o.skip), 10)
		default:
			b = appendJSONString(b, o.insert)
		}
	}
	return append(b, ']')
}

// appendJSONString appends lines joined by "\n" as a JSON string, with
// <, > and & escaped as encoding/json does, so it is safe in a <script>.
func appendJSONString(b []byte, lines []string) []byte {
	n := 0
	for _, l := range lines {
		n += len(l) + 1
	}
	s := make([]byte, 0, n)
	for i, l := range lines {
		if i > 0 {
			s = append(s, '\n')
		}
		s = append(s, l...)
	}
	q, _ := json.Marshal(string(s))
	return append(b, q...)
}
