package cut

import (
	"errors"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/internal/wire"
)

// Recording is a recording read into memory line by line, in the order
// its lines were written, with the timelines of its collections.
type Recording struct {
	// Header is the recording's (its first part's, Part 0 when several
	// parts were read).
	Header cassettes.Header
	lines  []line
	ivs    map[int]*iv
	order  []*iv // by ID
	tls    map[string]*timeline.Timeline
	tlList []*timeline.Timeline
	end    time.Duration
}

// line is one entry and when it happened, from the recording's start.
type line struct {
	e    cassettes.Entry
	at   time.Duration
	mono time.Duration // the latest at of this line and the lines before
	file string
	in   *iv
	fr   int // a frame's index in its interaction
}

// iv is one interaction and what the cut knows of it.
type iv struct {
	in     *cassettes.Interaction
	req    int // its request line
	end    int // its end line, -1 while open
	q      url.Values
	path   string
	tl     *timeline.Timeline
	stream *timeline.Stream
	watch  bool
	proto  bool
	table  bool // a 200 list or watch of a collection in kubectl's Table form
}

// Read reads the recording names names, as [cassettes.Open] takes them:
// one cassette, or a rotated recording's parts. Interactions open at the
// end are left open (the parts of a recording still being written end
// so); a cut line is an error wrapping [cassettes.ErrTruncated].
func Read(names ...string) (*Recording, error) {
	rd, err := cassettes.Open(names...)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	r := &Recording{Header: rd.Header(), ivs: map[int]*iv{}, tls: map[string]*timeline.Timeline{}}
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
	for _, v := range r.order {
		if v.stream != nil {
			for i, f := range v.in.Frames {
				v.stream.Observe(i, f)
			}
		}
	}
	for _, t := range r.tlList {
		t.Seal()
	}
	return r, nil
}

// add files entry e, read from file.
func (r *Recording) add(e cassettes.Entry, file string) {
	l := line{e: e, file: file, fr: -1}
	n := len(r.lines)
	switch {
	case e.Request != nil:
		in := &cassettes.Interaction{ID: e.ID, At: e.At, Request: *e.Request}
		v := &iv{in: in, req: n, end: -1}
		r.ivs[e.ID] = v
		r.order = append(r.order, v)
		l.at = e.At
	case e.Response != nil:
		v := r.ivs[e.ID]
		v.in.Response = e.Response
		l.at = v.base()
		r.classify(v)
	case e.Frame != nil:
		v := r.ivs[e.ID]
		l.fr = len(v.in.Frames)
		v.in.Frames = append(v.in.Frames, *e.Frame)
		l.at = v.base() + e.Frame.At
	case e.End != nil:
		v := r.ivs[e.ID]
		v.in.End = e.End
		v.end = n
		l.at = v.base() + e.End.At
	}
	l.in = r.ivs[e.ID]
	l.mono = l.at
	if n > 0 {
		l.mono = max(l.mono, r.lines[n-1].mono)
	}
	r.end = max(r.end, l.at)
	r.lines = append(r.lines, l)
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
	v.stream = t.Stream(in, timeline.FramesOf(in), v.q, enc)
}

// rvOf returns the resourceVersion line i records, 0 for none.
func (r *Recording) rvOf(i int) int64 {
	l := &r.lines[i]
	if l.fr < 0 || l.in.stream == nil {
		return 0
	}
	return l.in.stream.RV(l.fr)
}
