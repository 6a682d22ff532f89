package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/cmd/kwrec/internal/describe"
	"github.com/kwrec/kwrec/internal/apipath"
	"github.com/kwrec/kwrec/internal/wire"
)

// Trace is a whole Chrome trace, the JSON object form.
type Trace struct {
	TraceEvents []Event `json:"traceEvents"`
	// DisplayTimeUnit is always "ms".
	DisplayTimeUnit string `json:"displayTimeUnit"`
	// OtherData holds the cassette header's fields.
	OtherData map[string]any `json:"otherData,omitempty"`
}

// Event is one trace event. Which fields are set depends on Ph: every
// event has Name, Ph, Ts, Pid and Tid; "X" has Dur; "i" has S; "C" and
// "M" have Args.
type Event struct {
	Name string `json:"name"`
	Cat  string `json:"cat,omitempty"`
	// Ph is the phase: "X" complete slice, "i" instant, "C" counter, "M"
	// metadata.
	Ph string `json:"ph"`
	// Ts and Dur are microseconds from the cassette start.
	Ts  float64  `json:"ts"`
	Dur *float64 `json:"dur,omitempty"`
	Pid int      `json:"pid"`
	Tid int      `json:"tid"`
	// S is an instant's scope: "t" (its track), "p" or "g".
	S    string         `json:"s,omitempty"`
	Args map[string]any `json:"args,omitempty"`
}

// Mark is an instant drawn on an interaction's track: the point a replay
// edit sits at.
type Mark struct {
	// Interaction is the ID of the interaction.
	Interaction int
	// After places the mark at the arrival of frame After (1-based); 0
	// places it at the response head, or at the request when there is no
	// response. An After beyond the last frame places it at the end.
	After int
	// Name is the event's name ("edit: watch-error:request=10,after=1,code=410").
	Name string
}

// Options configures [Build]. The zero value draws no marks.
type Options struct {
	// Marks are drawn on their interactions' tracks; marks naming an
	// interaction the cassette lacks are dropped.
	Marks []Mark
}

// Source is what [Build] reads: a [cassettes.Reader].
type Source interface {
	Header() cassettes.Header
	Next() (cassettes.Entry, error)
}

var _ Source = (*cassettes.Reader)(nil)

// pidOther is the process of requests outside any collection.
const pidOther = 1

// interval is what Build keeps of an interaction until its end.
type interval struct {
	pid            int
	start, headers time.Duration
	response       *cassettes.Response
	frames         []time.Duration // arrival of each frame
	method, target string
}

// builder accumulates a trace while reading a cassette entry by entry.
type builder struct {
	t      Trace
	pids   map[string]int // collection path → pid
	open   map[int]*interval
	marks  map[int][]Mark
	counts map[int]map[int64]int // pid → second → watch events
}

// Build reads src to its end and returns its trace. A cassette cut
// mid-write ([cassettes.ErrTruncated]) is drawn up to the cut, its open
// interactions ending at their last frame with end "cut"; any other read
// error is returned.
func Build(src Source, opts Options) (*Trace, error) {
	b := &builder{
		t:      Trace{TraceEvents: []Event{}, DisplayTimeUnit: "ms"},
		pids:   map[string]int{},
		open:   map[int]*interval{},
		marks:  map[int][]Mark{},
		counts: map[int]map[int64]int{},
	}
	b.header(src.Header())
	for _, m := range opts.Marks {
		b.marks[m.Interaction] = append(b.marks[m.Interaction], m)
	}
	for {
		e, err := src.Next()
		if err == io.EOF {
			break
		}
		if errors.Is(err, cassettes.ErrTruncated) {
			b.cut()
			break
		}
		if err != nil {
			return nil, err
		}
		b.entry(e)
	}
	b.counters()
	return &b.t, nil
}

func (b *builder) header(h cassettes.Header) {
	od := map[string]any{"recordedAt": h.RecordedAt.Format(time.RFC3339Nano)}
	if h.Server != "" {
		od["server"] = h.Server
	}
	if len(h.Labels) > 0 {
		od["labels"] = h.Labels
	}
	if len(h.Edits) > 0 {
		od["edits"] = h.Edits
	}
	b.t.OtherData = od
	b.meta("process_name", pidOther, 0, "requests outside collections")
}

func (b *builder) meta(name string, pid, tid int, value any) {
	key := "name"
	if name == "thread_sort_index" || name == "process_sort_index" {
		key = "sort_index"
	}
	b.t.TraceEvents = append(b.t.TraceEvents, Event{Name: name, Ph: "M", Pid: pid, Tid: tid, Args: map[string]any{key: value}})
}

func (b *builder) entry(e cassettes.Entry) {
	switch {
	case e.Request != nil:
		b.request(e.ID, e.At, e.Request)
	case e.Response != nil:
		iv := b.open[e.ID]
		iv.response = e.Response
		iv.headers = iv.start + e.Response.Latency
	case e.Frame != nil:
		b.frame(e.ID, e.Frame)
	case e.End != nil:
		b.end(e.ID, e.End)
	}
}

// collection returns the all-namespaces collection path of a request, ""
// for requests outside collections.
func collection(u *url.URL) string {
	p, ok := apipath.Parse(u.Path)
	if !ok {
		return ""
	}
	p.Namespace, p.Name = "", ""
	return p.Collection()
}

func (b *builder) request(id int, at time.Duration, r *cassettes.Request) {
	iv := &interval{pid: pidOther, start: at, headers: at, method: r.Method, target: r.URL}
	if u, err := url.Parse(r.URL); err == nil {
		iv.target = u.RequestURI()
		if c := collection(u); c != "" {
			pid, ok := b.pids[c]
			if !ok {
				pid = len(b.pids) + 2
				b.pids[c] = pid
				b.meta("process_name", pid, 0, c)
				b.meta("process_sort_index", pid, 0, pid)
			}
			iv.pid = pid
		}
	}
	b.open[id] = iv
	b.meta("thread_name", iv.pid, id, fmt.Sprintf("#%d %s %s", id, r.Method, iv.target))
	b.meta("thread_sort_index", iv.pid, id, id)
}

func (b *builder) frame(id int, f *cassettes.Frame) {
	iv := b.open[id]
	at := iv.headers + f.At
	iv.frames = append(iv.frames, at)
	s := describe.Frame(f.Data)
	name, args := frameEvent(s)
	b.t.TraceEvents = append(b.t.TraceEvents, Event{Name: name, Cat: "frame", Ph: "i", S: "t", Ts: micros(at), Pid: iv.pid, Tid: id, Args: args})
	if s.Event != "" && s.Event != "BOOKMARK" && iv.pid != pidOther {
		sec := int64(at / time.Second)
		if b.counts[iv.pid] == nil {
			b.counts[iv.pid] = map[int64]int{}
		}
		b.counts[iv.pid][sec]++
	}
}

// frameEvent names a frame's instant and gathers its args.
func frameEvent(s describe.Summary) (string, map[string]any) {
	args := map[string]any{"format": s.Format, "size": s.Size}
	name := "frame"
	switch {
	case s.Event != "":
		name = s.Event
	case s.Items > 0 || len(s.Kind) > 4 && s.Kind[len(s.Kind)-4:] == "List":
		name = "list"
	case s.Kind != "":
		name = s.Kind
	}
	if s.Event != "" {
		args["type"] = s.Event
	}
	if s.Kind != "" {
		args["kind"] = s.Kind
	}
	if s.Name != "" {
		args["object"] = s.Namespace + "/" + s.Name
		if s.Namespace == "" {
			args["object"] = s.Name
		}
	}
	if s.ResourceVersion != "" {
		args["resourceVersion"] = s.ResourceVersion
	}
	if s.Items > 0 || name == "list" {
		args["items"] = s.Items
	}
	if s.Code != 0 {
		args["code"], args["reason"], args["message"] = s.Code, s.Reason, s.Message
	}
	if s.InitialEventsEnd {
		args["initialEventsEnd"] = true
	}
	return name, args
}

func (b *builder) end(id int, e *cassettes.End) {
	iv := b.open[id]
	delete(b.open, id)
	end := iv.headers + e.At
	args := map[string]any{"url": iv.target, "end": string(e.Reason), "frames": len(iv.frames)}
	if e.Error != "" {
		args["error"] = e.Error
	}
	if iv.response != nil {
		args["status"] = iv.response.Status
		args["latency"] = iv.response.Latency.String()
		if ct := iv.response.Header.Get("Content-Type"); ct != "" {
			args["contentType"] = ct
		}
	}
	b.slice(iv, id, iv.method+" "+slicePath(iv.target), "request", end, args)
	if iv.response != nil {
		b.slice(iv, id, "waiting for headers", "headers", iv.headers, nil)
	}
	for _, m := range b.marks[id] {
		at := iv.headers
		switch {
		case m.After > len(iv.frames):
			at = end
		case m.After > 0:
			at = iv.frames[m.After-1]
		}
		b.t.TraceEvents = append(b.t.TraceEvents, Event{Name: m.Name, Cat: "edit", Ph: "i", S: "t", Ts: micros(at), Pid: iv.pid, Tid: id, Args: map[string]any{"after": m.After}})
	}
}

// cut ends every open interaction at its last frame (or response head).
func (b *builder) cut() {
	for _, id := range slices.Sorted(maps.Keys(b.open)) {
		iv := b.open[id]
		at := time.Duration(0)
		if n := len(iv.frames); n > 0 {
			at = iv.frames[n-1] - iv.headers
		}
		b.end(id, &cassettes.End{At: at, Reason: "cut"})
	}
}

func (b *builder) slice(iv *interval, id int, name, cat string, end time.Duration, args map[string]any) {
	dur := micros(end - iv.start)
	b.t.TraceEvents = append(b.t.TraceEvents, Event{Name: name, Cat: cat, Ph: "X", Ts: micros(iv.start), Dur: &dur, Pid: iv.pid, Tid: id, Args: args})
}

// slicePath is a request target without its query, plus " (watch)" for a
// watch: the slice's label, short enough to read on a track.
func slicePath(target string) string {
	u, err := url.Parse(target)
	if err != nil {
		return target
	}
	if wire.IsWatchURL(u) {
		return u.Path + " (watch)"
	}
	return u.Path
}

// counters appends each collection's events/s samples.
func (b *builder) counters() {
	for _, pid := range slices.Sorted(maps.Keys(b.counts)) {
		secs := slices.Sorted(maps.Keys(b.counts[pid]))
		prev := -1
		sample := func(sec int64, n int) {
			if n == prev {
				return
			}
			prev = n
			b.t.TraceEvents = append(b.t.TraceEvents, Event{Name: "events/s", Cat: "rate", Ph: "C", Ts: micros(time.Duration(sec) * time.Second), Pid: pid, Args: map[string]any{"events": n}})
		}
		for i, s := range secs {
			if i > 0 && s > secs[i-1]+1 {
				sample(secs[i-1]+1, 0)
			}
			sample(s, b.counts[pid][s])
		}
		sample(secs[len(secs)-1]+1, 0)
	}
}

func micros(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }

// Write writes t as JSON.
func (t *Trace) Write(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(t)
}
