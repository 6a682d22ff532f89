package cut

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/chunked"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// Recording is a recording read line by line, in the order its lines
// were written, with the timelines of its collections. It holds what
// each line is (see line) and each interaction's request, response head
// and end, never a frame's bytes: a cut reads back the bytes it writes
// (see reread).
type Recording struct {
	// Header is the recording's (its first part's, Part 0 when several
	// parts were read).
	Header cassettes.Header
	names  []string // as Read was given them, to read the lines again
	files  []string // the files lines were read from
	starts []int    // the first line read from each of files
	lines  chunked.List[line]
	ivs    map[int]*iv
	order  []*iv // by ID
	tls    map[string]*timeline.Timeline
	tlList []*timeline.Timeline
	end    time.Duration
}

// line is what a cut knows of one line of the recording: which entry it
// is and when it happened. 16 bytes, whatever the line holds; which file
// it was read from is in Recording.starts.
type line struct {
	mono time.Duration // the latest time, from the recording's start, of this line and the lines before
	in   int32         // its interaction's index in Recording.order
	fr   int32         // a frame's index in its interaction; for a line that is no frame, -1 - its lineKind
}

// kind returns which of its entry's parts l is.
func (l *line) kind() lineKind {
	if l.fr >= 0 {
		return lineFrame
	}
	return lineKind(-1 - l.fr)
}

// lineKind is which of an entry's parts a line is.
type lineKind uint8

const (
	lineRequest lineKind = iota
	lineResponse
	lineFrame
	lineEnd
)

// kindOf returns the kind of line e is.
func kindOf(e *cassettes.Entry) lineKind {
	switch {
	case e.Request != nil:
		return lineRequest
	case e.Response != nil:
		return lineResponse
	case e.Frame != nil:
		return lineFrame
	}
	return lineEnd
}

// iv is one interaction and what the cut knows of it.
type iv struct {
	in     *cassettes.Interaction      // request, response and end, no frames (see ats)
	ats    chunked.List[time.Duration] // its frames' times: it is the timeline.Frames of in
	idx    int32                       // its index in Recording.order
	req    int                         // its request line
	resp   int                         // its response line, -1 for none
	end    int                         // its end line, -1 while open
	q      url.Values
	path   string
	tl     *timeline.Timeline
	stream *timeline.Stream
	watch  bool
	proto  bool
	table  bool // a 200 list or watch of a collection in kubectl's Table form
}

var _ timeline.Frames = (*iv)(nil)

// Len returns how many frames v has.
func (v *iv) Len() int { return v.ats.Len() }

// At returns when v's frame i came, from its response.
func (v *iv) At(i int) time.Duration { return *v.ats.At(i) }

// Read reads the recording names names, as [cassettes.Open] takes them:
// one cassette, or a rotated recording's parts. Interactions open at the
// end are left open (the parts of a recording still being written end
// so); a cut line is an error wrapping [cassettes.ErrTruncated].
func Read(names ...string) (*Recording, error) {
	rd, err := openLines(names, false)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	r := &Recording{Header: rd.Header(), names: names, ivs: map[int]*iv{}, tls: map[string]*timeline.Timeline{}}
	if len(rd.files) > 1 {
		r.Header.Part = 0 // the whole recording's
	}
	for {
		e, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			if errors.Is(err, cassettes.ErrOpenAtEnd) {
				break // nothing cut but the ends of what is open
			}
			return nil, err
		}
		r.add(e, rd.File())
	}
	for _, t := range r.tlList {
		t.Seal()
	}
	return r, nil
}

// add files entry e, read from file: a frame's bytes are observed by its
// timeline, not kept.
func (r *Recording) add(e cassettes.Entry, file string) {
	n := r.lines.Len()
	kind := kindOf(&e)
	l := line{fr: -1 - int32(kind)}
	if k := len(r.files); k == 0 || r.files[k-1] != file {
		r.files, r.starts = append(r.files, file), append(r.starts, n)
	}
	var at time.Duration
	switch kind {
	case lineRequest:
		in := &cassettes.Interaction{ID: e.ID, At: e.At, Request: *e.Request}
		v := &iv{in: in, idx: int32(len(r.order)), req: n, resp: -1, end: -1}
		r.ivs[e.ID] = v
		r.order = append(r.order, v)
		at = e.At
	case lineResponse:
		v := r.ivs[e.ID]
		v.in.Response, v.resp = e.Response, n
		at = v.base()
		r.classify(v)
	case lineFrame:
		v := r.ivs[e.ID]
		l.fr = int32(v.ats.Len())
		v.ats.Add(e.Frame.At)
		if v.stream != nil {
			v.stream.Observe(int(l.fr), *e.Frame)
		}
		at = v.base() + e.Frame.At
	case lineEnd:
		v := r.ivs[e.ID]
		v.in.End = e.End
		v.end = n
		at = v.base() + e.End.At
	}
	l.in = r.ivs[e.ID].idx
	l.mono = at
	if n > 0 {
		l.mono = max(l.mono, r.lines.At(n-1).mono)
	}
	r.end = max(r.end, at)
	r.lines.Add(l)
}

// ivOf returns the interaction of line l.
func (r *Recording) ivOf(l *line) *iv { return r.order[l.in] }

// fileOf returns the file line i was read from.
func (r *Recording) fileOf(i int) string {
	k := sort.Search(len(r.starts), func(k int) bool { return r.starts[k] > i })
	return r.files[k-1]
}

// base is when the interaction's response came, else its request.
func (v *iv) base() time.Duration {
	if v.in.Response != nil {
		return v.in.At + v.in.Response.Latency
	}
	return v.in.At
}

// classify files a 200 list or watch of a collection under its timeline,
// as replay does.
func (r *Recording) classify(v *iv) {
	in := v.in
	u, err := url.Parse(in.Request.URL)
	if err != nil {
		return
	}
	v.q, v.path = u.Query(), u.Path
	v.watch = wire.IsWatch(v.q)
	if !strings.EqualFold(in.Request.Method, http.MethodGet) || in.Response.Status != http.StatusOK {
		return
	}
	var enc timeline.Encoding
	switch wire.MediaType(in.Response.Header.Get("Content-Type")) {
	case wire.MediaJSON:
		enc = timeline.JSON
	case wire.MediaProtobuf:
		enc, v.proto = timeline.Protobuf, true
	default:
		return
	}
	rp, ok := apipath.Parse(u.Path)
	if !ok || rp.Name != "" {
		return
	}
	if _, ok := table.Wants(in.Request.Header.Get("Accept")); ok && enc == timeline.JSON {
		v.table = true // kubectl's Table form: a view, not the objects
		return
	}
	t := r.tls[u.Path]
	if t == nil {
		t = timeline.New(u.Path, rp)
		r.tls[u.Path] = t
		r.tlList = append(r.tlList, t)
	}
	v.tl = t
	v.stream = t.Stream(in, v, v.q, enc)
}

// rvOf returns the resourceVersion line i records, 0 for none.
func (r *Recording) rvOf(i int) int64 {
	l := r.lines.At(i)
	v := r.ivOf(l)
	if l.fr < 0 || v.stream == nil {
		return 0
	}
	return v.stream.RV(int(l.fr))
}
