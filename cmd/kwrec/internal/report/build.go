package report

import (
	"errors"
	"io"
	"net/url"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
)

// Build reads the cassette at path (compressed or plain) into a [Report],
// frame by frame, and places the cassette's edits and opts.Edits on it. An
// edit that does not fit the cassette is an error wrapping
// [replay.ErrBadEdit]; a cassette cut short is reported up to the cut.
func Build(path string, opts Options) (*Report, error) {
	r, err := cassettes.Open(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	h := r.Header()
	b := newBuilder()
	rep := &Report{
		Title:      filepath.Base(path),
		RecordedAt: h.RecordedAt.Format(time.RFC3339),
		Server:     h.Server,
		Redactions: h.Redactions,
		Labels:     h.Labels,
		Types:      types,
	}
	if rep.Redactions == nil {
		rep.Redactions = []string{}
	}
	for {
		e, err := r.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, cassettes.ErrTruncated) {
			rep.Truncated = err.Error()
			break
		}
		if err != nil {
			return nil, err
		}
		b.entry(e)
	}
	b.finish(rep)
	if err := placeEdits(rep, path, h, opts.Edits, b.rvs); err != nil {
		return nil, err
	}
	return rep, nil
}

// pendingMark is a frame's mark before the lanes are laid out one after
// the other.
type pendingMark struct {
	t       int64
	typ     int
	version int
	note    int
	rv      int64
	items   []int
}

type builder struct {
	lanes   []*Lane
	byID    map[int]int // interaction ID → lane index
	marks   [][]pendingMark
	groups  []Group
	groupOf map[string]int
	notes   []string
	noteOf  map[string]int
	store   *store
	end     int64
	rvs     [][]int64 // after finish: each lane's marks' resourceVersions
}

func newBuilder() *builder {
	return &builder{byID: map[int]int{}, groupOf: map[string]int{}, noteOf: map[string]int{}, store: newStore()}
}

func us(d time.Duration) int64 { return d.Microseconds() }

func (b *builder) at(t int64) int64 {
	b.end = max(b.end, t)
	return t
}

func (b *builder) entry(e cassettes.Entry) {
	switch {
	case e.Request != nil:
		u, _ := url.Parse(e.Request.URL)
		l := &Lane{ID: e.ID, Method: e.Request.Method, URL: e.Request.URL, At: b.at(us(e.At)), Headers: -1, End: -1}
		if u != nil {
			l.Watch = wire.IsWatchURL(u)
			l.Group = b.group(groupName(u.Path))
		} else {
			l.Group = b.group(OtherGroup)
		}
		b.byID[e.ID] = len(b.lanes)
		b.groups[l.Group].Lanes = append(b.groups[l.Group].Lanes, len(b.lanes))
		b.lanes = append(b.lanes, l)
		b.marks = append(b.marks, nil)
	case e.Response != nil:
		l := b.lanes[b.byID[e.ID]]
		l.Status, l.ContentType = e.Response.Status, e.Response.Header.Get("Content-Type")
		l.Latency = us(e.Response.Latency)
		l.Headers = b.at(l.At + l.Latency)
	case e.Frame != nil:
		i := b.byID[e.ID]
		l := b.lanes[i]
		f := b.frame(l, e.Frame.Data)
		f.t = b.at(l.Headers + us(e.Frame.At))
		b.marks[i] = append(b.marks[i], f)
	case e.End != nil:
		l := b.lanes[b.byID[e.ID]]
		from := l.Headers
		if from < 0 {
			from = l.At
		}
		l.End, l.Reason, l.Error = b.at(from+us(e.End.At)), string(e.End.Reason), e.End.Error
	}
}

// groupName is the collection a request path belongs to; OtherGroup for
// non-resource paths.
func groupName(path string) string {
	p, ok := apipath.Parse(stripWatch(path))
	if !ok {
		return OtherGroup
	}
	return p.Collection()
}

// stripWatch removes the segment of a legacy watch path
// (/api/v1/watch/..., /apis/G/V/watch/...).
func stripWatch(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	for i, p := range parts {
		core := i == 2 && parts[0] == "api"
		grouped := i == 3 && parts[0] == "apis"
		if p == "watch" && (core || grouped) {
			return "/" + strings.Join(append(parts[:i:i], parts[i+1:]...), "/")
		}
	}
	return path
}

func (b *builder) group(name string) int {
	if i, ok := b.groupOf[name]; ok {
		return i
	}
	b.groupOf[name] = len(b.groups)
	b.groups = append(b.groups, Group{Name: name, Lanes: []int{}})
	return len(b.groups) - 1
}

func (b *builder) note(s string) int {
	if s == "" {
		return -1
	}
	if i, ok := b.noteOf[s]; ok {
		return i
	}
	b.noteOf[s] = len(b.notes)
	b.notes = append(b.notes, s)
	return len(b.notes) - 1
}

// finish lays the lanes' marks out one lane after the other.
func (b *builder) finish(rep *Report) {
	rep.End = b.end
	rep.Groups = b.groups
	rep.Notes = b.notes
	if rep.Notes == nil {
		rep.Notes = []string{}
	}
	rep.Lanes = make([]Lane, len(b.lanes))
	b.rvs = make([][]int64, len(b.lanes))
	m := &rep.Marks
	for i, l := range b.lanes {
		l.First, l.Count = len(m.T), len(b.marks[i])
		rep.Lanes[i] = *l
		for _, p := range b.marks[i] {
			if p.items != nil {
				if rep.Lists == nil {
					rep.Lists = map[string][]int{}
				}
				rep.Lists[strconv.Itoa(len(m.T))] = p.items
			}
			m.T = append(m.T, p.t)
			m.Type = append(m.Type, p.typ)
			m.Version = append(m.Version, p.version)
			m.Note = append(m.Note, p.note)
			b.rvs[i] = append(b.rvs[i], p.rv)
		}
	}
	if m.T == nil {
		*m = Marks{T: []int64{}, Type: []int{}, Version: []int{}, Note: []int{}}
	}
	rep.Objects, rep.Versions = b.store.objects, b.store.versions
	if rep.Objects == nil {
		rep.Objects = []Object{}
		rep.Versions = Versions{Object: []int{}, RV: []string{}}
	}
	rep.Versions.Texts = b.store.texts.close()
}
