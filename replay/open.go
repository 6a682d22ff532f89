package replay

import (
	"sync"
	"time"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/replay/internal/index"
)

// Open returns a Replayer over the cassette file path that keeps only the
// cassette's structure in memory (about 60 bytes a frame) and reads frames
// back from the file as it serves them. path may also name a rotated
// recording's parts (cassettes.Parts): a glob pattern ('rec-*.kwrec.zst')
// or its first part; they replay as one cassette,
// so a cassette of any size replays in memory proportional to its frame
// count, not its size. The timelines that answer unrecorded requests are
// built in the same single pass over the file, as references into it.
//
// Close the Replayer when done. Options and edits are as for [New]. A
// cassette cut mid-write fails with an error wrapping
// [cassettes.ErrTruncated], naming the file: run `kwrec lint --fix` first.
func Open(path string, opts Options) (*Replayer, error) {
	if err := opts.check(); err != nil { // before the file is read
		return nil, err
	}
	h, err := Load(path)
	if err != nil {
		return nil, err
	}
	return h.alone(opts)
}

// recordedHead returns what a Replayer is told of an indexed interaction
// while its frames are read: its request and response head.
func recordedHead(in *index.Interaction) *cassettes.Interaction {
	return &cassettes.Interaction{ID: in.ID, At: in.At, Request: in.Request, Response: in.Response}
}

// indexFrames are an indexed interaction's frames, as a timeline and a
// replay read them.
type indexFrames struct{ in *index.Interaction }

func (f indexFrames) Len() int               { return f.in.Frames.Len() }
func (f indexFrames) At(i int) time.Duration { return f.in.Frames.At(i).At }

// indexSource reads frames back from an indexed cassette file. readMany
// (gets, lists and writes, which read the same objects again and again)
// goes through a small cache of frames.
type indexSource struct {
	x         *index.Index
	skeletons map[*cassettes.Interaction]*index.Interaction // each interaction's in x
	cache     *frameCache
}

// frames reads in's frames from frame from (0-based) on, in order.
func (s indexSource) frames(in *cassettes.Interaction, from int) (indexIter, error) {
	fr, err := s.x.Frames(s.skeletons[in], from)
	if err != nil {
		return indexIter{}, err
	}
	return indexIter{fr}, nil
}

// scan calls fn(i, data) for frames i = 0 to n-1 of in, in order, until
// fn fails; data is only valid during the call. One pass of
// [index.Index.Scan] reads them, reusing one buffer for their lines and
// keeping the frames later deltas copy from.
func (s indexSource) scan(in *cassettes.Interaction, n int, fn func(int, []byte) error) error {
	sk := s.skeletons[in]
	if n > sk.Frames.Len() {
		return frameMissing(in.ID, sk.Frames.Len())
	}
	return s.x.Scan(sk, 0, n, func(i int, f cassettes.Frame) error { return fn(i, f.Data) })
}

// readMany calls fn(k, data) for the frame each ref names, in any order;
// data is only valid during the call.
func (s indexSource) readMany(refs []frameRef, fn func(int, []byte) error) error {
	var miss []frameRef
	var missK []int
	for k, ref := range refs {
		if d, ok := s.cache.get(ref); ok {
			if err := fn(k, d); err != nil {
				return err
			}
			continue
		}
		miss, missK = append(miss, ref), append(missK, k)
	}
	if len(miss) == 0 {
		return nil
	}
	refsIn := make([]index.FrameRef, len(miss))
	for j, ref := range miss {
		refsIn[j] = index.FrameRef{In: s.skeletons[ref.in], I: ref.i}
	}
	return s.x.ReadFrames(refsIn, func(j int, f cassettes.Frame) error {
		s.cache.put(miss[j], f.Data)
		return fn(missK[j], f.Data)
	})
}

// frameCache keeps copies of the frames read last, up to a byte budget,
// first in first out. Reading one frame again from a compressed cassette
// means decompressing its segment up to it, so a cache hit saves up to
// megabytes of work; a frame larger than a quarter of the budget is not
// kept.
type frameCache struct {
	mu     sync.Mutex
	budget int
	size   int
	data   map[frameRef][]byte
	order  []frameRef
}

// frameCacheBytes is the cache's budget: small next to what a replay of a
// long recording holds, large enough for a list of thousands of objects.
const frameCacheBytes = 8 << 20

func newFrameCache(budget int) *frameCache {
	return &frameCache{budget: budget, data: map[frameRef][]byte{}}
}

func (c *frameCache) get(ref frameRef) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	d, ok := c.data[ref]
	return d, ok
}

func (c *frameCache) put(ref frameRef, d []byte) {
	if len(d) > c.budget/4 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.data[ref]; ok {
		return
	}
	for c.size+len(d) > c.budget && len(c.order) > 0 {
		old := c.order[0]
		c.order = c.order[1:]
		c.size -= len(c.data[old])
		delete(c.data, old)
	}
	c.data[ref] = append([]byte(nil), d...)
	c.order = append(c.order, ref)
	c.size += len(d)
}

func (s indexSource) close() error { return s.x.Close() }

// indexIter reads an interaction's frames in order.
type indexIter struct{ fr *index.FrameReader }

// next returns the next frame's bytes, valid until the next call; io.EOF
// after the last.
func (it indexIter) next() ([]byte, error) {
	f, err := it.fr.Next()
	return f.Data, err
}

func (it indexIter) close() { it.fr.Close() }

// observer runs fn over frames on its own goroutine, in the order they
// are added, in batches of copied frames; a frame larger than a batch is
// observed where it is, not copied (see add).
type observer struct {
	fn    func(in *index.Interaction, i int, f cassettes.Frame)
	batch *frameBatch
	ch    chan *frameBatch
	free  chan *frameBatch // observed batches, to fill again
	seen  chan struct{}    // a frame observed in place (observeInPlace)
	done  chan struct{}
}

type frameBatch struct {
	ins  []*index.Interaction
	is   []int
	fs   []cassettes.Frame
	data []byte
	// inPlace says the batch's one frame's Data is the caller's, not a
	// copy (observer.add): observer.seen is signalled once it is observed.
	inPlace bool
}

// batchBytes is how much frame data a batch carries before it is handed
// over; with the channel's capacity it bounds what an open holds extra.
const batchBytes = 256 << 10

func newObserver(fn func(in *index.Interaction, i int, f cassettes.Frame)) *observer {
	o := &observer{fn: fn, ch: make(chan *frameBatch, 2), free: make(chan *frameBatch, 4), seen: make(chan struct{}), done: make(chan struct{}), batch: &frameBatch{}}
	go func() {
		defer close(o.done)
		for b := range o.ch {
			for k, in := range b.ins {
				o.fn(in, b.is[k], b.fs[k])
			}
			if b.inPlace {
				o.seen <- struct{}{}
				continue
			}
			clear(b.ins) // drop the references before the batch waits
			b.ins, b.is, b.fs, b.data = b.ins[:0], b.is[:0], b.fs[:0], b.data[:0]
			select {
			case o.free <- b:
			default:
			}
		}
	}()
	return o
}

// add queues frame i of in; f.Data is copied. A frame larger than a
// batch (a page of a list: megabytes) is observed before add returns,
// once the frames before it are, without a copy: copying it cost more
// than the wait, a memmove into a fresh buffer the size of the frame on
// the reading goroutine, and the page faults of that buffer
// (BENCHMARKS.md).
func (o *observer) add(in *index.Interaction, i int, f cassettes.Frame) {
	if len(f.Data) > batchBytes {
		o.observeInPlace(in, i, f)
		return
	}
	b := o.batch
	if len(b.data)+len(f.Data) > cap(b.data) && len(b.ins) > 0 {
		o.flush()
		b = o.batch
	}
	if cap(b.data) == 0 {
		b.data = make([]byte, 0, batchBytes)
	}
	start := len(b.data)
	b.data = append(b.data, f.Data...)
	f.Data = b.data[start:len(b.data):len(b.data)]
	b.ins, b.is, b.fs = append(b.ins, in), append(b.is, i), append(b.fs, f)
}

// observeInPlace hands the observer f uncopied and waits until it is
// observed: f.Data is only valid until add returns.
func (o *observer) observeInPlace(in *index.Interaction, i int, f cassettes.Frame) {
	if len(o.batch.ins) > 0 {
		o.flush()
	}
	b := &frameBatch{ins: []*index.Interaction{in}, is: []int{i}, fs: []cassettes.Frame{f}, inPlace: true}
	o.ch <- b
	<-o.seen
}

func (o *observer) flush() {
	o.ch <- o.batch
	select {
	case o.batch = <-o.free:
	default:
		o.batch = &frameBatch{}
	}
}

// wait observes what is queued and returns once every frame is observed.
func (o *observer) wait() {
	if len(o.batch.ins) > 0 {
		o.flush()
	}
	close(o.ch)
	<-o.done
}
