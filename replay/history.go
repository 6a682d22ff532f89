package replay

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/timeline"
	"github.com/kwrec/kwrec/recorder"
	"github.com/kwrec/kwrec/replay/internal/index"
	"github.com/kwrec/kwrec/replay/internal/overlay"
	"github.com/kwrec/kwrec/replay/internal/write"
)

// History is a cassette read once, to be replayed any number of times:
// what was recorded, immutable and safe for concurrent use, shared by
// every [Replayer] it makes. Each Replayer keeps only its own state: how
// far it has served each collection, the edits it fires, and the writes
// it applies. Load it with [Load]; close it when its replays are done.
//
//	h, err := replay.Load("testdata/mirror.kwrec.zst")
//	...
//	defer h.Close()
//	for _, edit := range faults {
//		r, err := h.Replayer(replay.Options{Edits: []replay.Edit{edit}, Writes: replay.WritesOverlay})
//		...
//	}
type History struct {
	path   string // the file it was loaded from, "" for a cassette in memory
	header cassettes.Header
	src    indexSource
	// skeletons, for a History loaded from a file, gives each interaction
	// its frames (offsets only) the first time a caller looks
	// (Interactions, a Matcher of the caller's): a replay reads them from
	// the index, so a long recording is not held twice.
	skeletons     func()
	skeletonsOnce sync.Once
	writes        *write.Engine // shared: its type converters cost milliseconds to build

	plain       *base // the recording as recorded
	overlayOnce sync.Once
	overlay     *base // the same taking writes (resourceVersions scaled), made at first use
}

// base is the recorded world a replay starts from: sealed timelines and
// interactions, which a [Replayer] forks.
type base struct {
	tlOrder []*timeline.Timeline
	ivs     []ivState
	allOf   map[*timeline.Timeline]*timeline.Timeline
	tables  map[string]*tableSet
}

// Load reads the cassette file path once, keeping only its structure in
// memory (frames are read back from the file as they are served, as by
// [Open]), and returns a History to replay it from any number of times.
// path may name a rotated recording's parts, as for Open. A cassette cut
// mid-write fails with an error wrapping [cassettes.ErrTruncated], naming
// the file: run `kwrec lint --fix` first.
func Load(path string) (*History, error) {
	return load(path, func(opts index.Options) (*index.Index, error) { return index.Open(path, opts) })
}

// loadCassette returns the History of c, held in memory: c encoded in
// the text form and indexed as a file is, so that a cassette in memory and
// one in a file are read and served by the same code.
func loadCassette(c *cassettes.Cassette) (*History, error) {
	var text bytes.Buffer
	text.Grow(textSize(c))
	if err := cassettes.Write(&text, c, false); err != nil {
		return nil, fmt.Errorf("the cassette cannot be written in its text form: %w", err)
	}
	return load("", func(opts index.Options) (*index.Index, error) { return index.Read("the cassette", text.Bytes(), opts) })
}

// textSize is about the most bytes c's text form takes: each frame's
// bytes, base64-encoded if they are not JSON, and its line's keys. A
// buffer grown to it at once is neither grown again nor copied.
func textSize(c *cassettes.Cassette) int {
	n := 1 << 10
	for _, in := range c.Interactions {
		n += 1<<10 + len(in.Request.Body)*4/3
		for _, f := range in.Frames {
			n += len(f.Data)*4/3 + 128
		}
	}
	return n
}

// load reads the cassette that open indexes, path its file ("" for one
// in memory), into a History.
func load(path string, open func(index.Options) (*index.Index, error)) (*History, error) {
	b := newBuilder()
	byID := map[int]*ivState{}
	// The frames are read (decompressed and split) here and observed by
	// the timelines on a second goroutine, in order: the two halves of a
	// load take about as long each.
	obs := newObserver(func(in *index.Interaction, i int, f cassettes.Frame) {
		iv := byID[in.ID]
		if iv == nil {
			iv = b.add(recordedHead(in), indexFrames{in})
			byID[in.ID] = iv
		}
		iv.observe(i, f)
	})
	x, err := open(index.Options{Visit: func(in *index.Interaction, i int, f cassettes.Frame) error {
		obs.add(in, i, f)
		return nil
	}})
	obs.wait()
	if err != nil {
		if x != nil {
			x.Close()
		}
		return nil, err
	}
	src := indexSource{x: x, skeletons: make(map[*cassettes.Interaction]*index.Interaction, len(x.Interactions)), cache: newFrameCache(frameCacheBytes)}
	var ivs []*ivState
	for _, sk := range x.Interactions {
		iv := byID[sk.ID]
		if iv == nil { // no frames: not visited
			iv = b.add(recordedHead(sk), indexFrames{sk})
		}
		// Observed, the interaction gets the rest of what it is to a
		// replay: its end. Its frames are read from the index.
		iv.in.End = sk.End
		src.skeletons[iv.in] = sk
		ivs = append(ivs, iv)
	}
	h := &History{path: path, header: x.Header, src: src, writes: new(write.Engine), plain: b.seal(ivs)}
	h.skeletons = func() {
		for _, iv := range h.plain.ivs {
			sk := src.skeletons[iv.in]
			iv.in.Frames = make([]cassettes.Frame, sk.Frames.Len())
			for i := range iv.in.Frames {
				iv.in.Frames[i].At = sk.Frames.At(i).At
			}
		}
	}
	return h, nil
}

// Header returns the cassette's header.
func (h *History) Header() cassettes.Header { return h.header }

// Close releases the cassette file; the replays made from h fail once it
// is closed.
func (h *History) Close() error { return h.src.close() }

// Replayer returns a new replay of the history with opts, as [Open] would
// make one, but without reading the cassette again: it costs what the
// replay's own state does (one small record per recorded collection and
// interaction), and then memory in proportion to what it serves and the
// writes it applies. The cassette's edits and opts.Edits are resolved
// against the history, as for [New]. Closing the Replayer leaves h open.
func (h *History) Replayer(opts Options) (*Replayer, error) {
	r, err := newReplayer(opts, h)
	if err != nil {
		return nil, err
	}
	if opts.Matcher != nil {
		// A Matcher of the caller's may look at the frames.
		h.withSkeletons()
	}
	b := h.plain
	if r.opts.overlay() {
		b = h.overlayBase()
	}
	h.fork(r, b)
	if opts.CRDs != nil {
		if err := r.writer.Install(opts.CRDs.jsons()); err != nil {
			return nil, h.named(err)
		}
	}
	if err := resolveEdits(r, opts); err != nil {
		return nil, h.named(err)
	}
	r.views.pace = r.pacing(nil)
	if opts.WorldClock {
		if r.wc, err = newWorldClock(r); err != nil {
			return nil, h.named(err)
		}
		r.serving.worldClock = r.wc.c
	}
	return r, nil
}

// named returns err naming the cassette file, when h was read from one.
func (h *History) named(err error) error {
	if h.path != "" {
		return fmt.Errorf("%s: %w", h.path, err)
	}
	return err
}

// withSkeletons makes every interaction hold its frames, once.
func (h *History) withSkeletons() {
	if h.skeletons != nil {
		h.skeletonsOnce.Do(h.skeletons)
	}
}

// overlayBase returns the base of replays that take writes: the
// recording with its resourceVersions scaled (see
// [timeline.Timeline.WithWrites]), made once.
func (h *History) overlayBase() *base {
	h.overlayOnce.Do(func() {
		p := h.plain
		o := &base{tables: p.tables, allOf: map[*timeline.Timeline]*timeline.Timeline{}, ivs: slices.Clone(p.ivs)}
		w := make(map[*timeline.Timeline]*timeline.Timeline, len(p.tlOrder))
		for _, t := range p.tlOrder {
			w[t] = t.WithWrites()
			o.tlOrder = append(o.tlOrder, w[t])
		}
		for t, d := range p.allOf {
			o.allOf[w[t]] = w[d]
		}
		for i := range o.ivs {
			iv := &o.ivs[i]
			iv.tl = w[iv.tl]
			if iv.stream != nil {
				iv.stream = iv.stream.WithWrites()
			}
			if iv.also != nil {
				iv.also = iv.also.WithWrites()
			}
		}
		h.overlay = o
	})
	return h.overlay
}

// fork gives r its own state over b: a fork of each timeline, in a world
// of its own (with a writer of h's engine in Overlay mode), and a copy of
// each interaction's record.
func (h *History) fork(r *Replayer, b *base) {
	f := make(map[*timeline.Timeline]*timeline.Timeline, len(b.tlOrder))
	recorded := make([]*timeline.Timeline, len(b.tlOrder))
	for i, t := range b.tlOrder {
		f[t] = t.Fork()
		recorded[i] = f[t]
	}
	allOf := make(map[*timeline.Timeline]*timeline.Timeline, len(b.allOf))
	for t, d := range b.allOf {
		allOf[f[t]] = f[d]
	}
	r.views = &views{src: r.hist.src, tables: b.tables, header: r.hist.header, writes: r.opts.overlay(), clock: r.clock}
	r.world = overlay.NewWorld(overlay.WorldConfig{Recorded: recorded, AllOf: allOf, Writes: r.opts.overlay(),
		RecordedAt: r.hist.header.RecordedAt, Objects: objects{r.hist.src}, Codec: r.views.codec, Docs: r.views.discoveryDocs,
		RecordedCRD: r.views.recordedCRD})
	r.views.world = r.world
	r.views.printers = &printers{world: r.world}
	if r.opts.overlay() {
		r.writer = overlay.NewWriter(r.world, overlay.Config{Engine: h.writes, Codec: r.views.codec, Docs: r.views.discoveryDocs,
			Clock: r.clock, Started: r.started, DisableGarbageCollection: r.opts.DisableGarbageCollection, Out: r.opts.WritesOut, Logf: r.opts.Logf,

			Redact: func(in *cassettes.Interaction) { recorder.RedactInteraction(in, recorder.Options{}) }})
	}
	ivs := slices.Clone(b.ivs)
	r.ivs = make([]*ivState, len(ivs))
	for i := range ivs {
		ivs[i].tl = f[ivs[i].tl]
		r.ivs[i] = &ivs[i]
	}
	r.prog.world, r.prog.ivs, r.views.ivs = r.world, r.ivs, r.ivs
}

// builder reads a recording into timelines and interactions, for a
// [History].
type builder struct {
	timelines map[string]*timeline.Timeline // by collection path
	tlOrder   []*timeline.Timeline
	// derived are the all-namespaces timelines assembled from namespaces'
	// recordings (see add).
	derived map[string]*timeline.Timeline
	tables  map[string]*tableSet // kubectl's Table form of a collection, by path
}

func newBuilder() *builder {
	return &builder{timelines: map[string]*timeline.Timeline{}, derived: map[string]*timeline.Timeline{}, tables: map[string]*tableSet{}}
}

// seal finishes the reading once every interaction is in ivs and every
// frame observed: it assembles the all-namespaces timelines and seals
// every timeline.
func (b *builder) seal(ivs []*ivState) *base {
	// The timelines are built now, while the recording is read, not inside
	// the first request: a client (a WatchList informer) would otherwise
	// wait for the whole recording to be decoded mid-request.
	// A resource recorded only namespace by namespace gets a timeline of
	// all namespaces assembled from them, for clients that list and watch
	// across namespaces (controller-runtime's cache does by default).
	allOf := map[*timeline.Timeline]*timeline.Timeline{}
	for _, path := range slices.Sorted(maps.Keys(b.derived)) {
		if b.timelines[path] != nil {
			continue
		}
		d := b.derived[path]
		for _, t := range b.tlOrder {
			if t.Res.Namespace != "" && t.Res.Group == d.Res.Group && t.Res.Version == d.Res.Version && t.Res.Resource == d.Res.Resource {
				allOf[t] = d
			}
		}
		allOf[d] = d
		b.timelines[path] = d
		b.tlOrder = append(b.tlOrder, d)
	}
	for _, t := range b.tlOrder {
		t.Seal()
	}
	out := &base{tlOrder: b.tlOrder, allOf: allOf, tables: b.tables, ivs: make([]ivState, len(ivs))}
	for i, iv := range ivs {
		if iv.table != nil {
			// A recorded Table-form watch crosses the timeline's edits
			// like any other watch of the collection.
			iv.tl = b.timelines[pathOf(iv.in.Request.URL)]
		}
		out.ivs[i] = *iv
	}
	return out
}

// errNilCassette is New's answer to a nil cassette.
var errNilCassette = errors.New("nil cassette")
