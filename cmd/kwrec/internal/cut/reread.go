package cut

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"

	"github.com/kwrec/kwrec/cassettes"
	"github.com/kwrec/kwrec/internal/cassettefile"
	"github.com/kwrec/kwrec/internal/table"
	"github.com/kwrec/kwrec/internal/timeline"
)

// ErrChanged: a recording's files changed between [Read] and the cut
// that reads its lines again.
var ErrChanged = errors.New("recording changed since it was read")

// reread reads r's first n lines again from its files, in order, and
// calls fn with each line's index and entry (its Line left 0). It stops
// at fn's first error and returns it.
func (r *Recording) reread(n int, fn func(i int, e cassettes.Entry) error) error {
	if n == 0 {
		return nil
	}
	rd, err := openLines(r.names, true)
	if err != nil {
		return err
	}
	defer rd.Close()
	for i := range n {
		e, err := rd.Next()
		if err == io.EOF || errors.Is(err, cassettes.ErrOpenAtEnd) {
			return fmt.Errorf("%w: %s ends after %d entries, of the %d read: read it again", ErrChanged, rd.File(), i, r.lines.Len())
		}
		if err != nil {
			return err
		}
		l := r.lines.At(i)
		if v := r.ivOf(l); e.ID != v.in.ID || kindOf(&e) != l.kind() {
			return fmt.Errorf("%w: %s: line %d is not what it was: read it again", ErrChanged, rd.File(), e.Line)
		}
		e.Line = 0
		if err := fn(i, e); err != nil {
			return err
		}
	}
	return nil
}

// lineReader reads a recording's lines as [cassettes.Open] does, but
// through a Scanner of its own: one that decodes the next compressed
// block on a second goroutine while the lines of this one are taken, and
// checks a frame only as much as it must (see openLines).
type lineReader struct {
	*cassettes.Reader
	files []*os.File
}

// openLines opens the recording names as [cassettes.Open] does, with
// the same errors. Its frames are checked as cassettes.Open checks them,
// valid JSON, unless every file is compressed, whose zstd checksums
// prove its bytes are those kwrec's writer wrote (as replay.Open reads
// them), or again says the lines were read and checked before: the
// check (json.Valid) is most of what reading a frame costs.
func openLines(names []string, again bool) (*lineReader, error) {
	paths, err := cassettes.Parts(names...)
	if err != nil {
		return nil, err
	}
	lr := &lineReader{}
	parts := make([]cassettefile.Part, 0, len(paths))
	check := cassettefile.CheckNone
	for _, name := range paths {
		f, err := os.Open(name)
		if err != nil {
			lr.Close()
			var pe *os.PathError
			if errors.As(err, &pe) {
				err = pe.Err
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		lr.files = append(lr.files, f)
		parts = append(parts, cassettefile.Part{R: f, Name: name})
		var magic [4]byte
		if n, _ := f.ReadAt(magic[:], 0); !again && !cassettes.IsCompressed(magic[:n]) {
			check = cassettefile.CheckValid
		}
	}
	sc := cassettefile.NewScanner(parts, cassettefile.ScanOptions{Check: check, Ahead: true})
	if lr.Reader, err = cassettes.NewReader(cassettefile.Scanned{S: sc}, paths[0]); err != nil {
		sc.Close()
		lr.Close()
		return nil, err
	}
	return lr, nil
}

// Close closes the reader and its files.
func (lr *lineReader) Close() error {
	var errs []error
	if lr.Reader != nil {
		errs = append(errs, lr.Reader.Close())
	}
	for _, f := range lr.files {
		errs = append(errs, f.Close())
	}
	return errors.Join(errs...)
}

// frameKey names frame i of interaction id.
type frameKey struct{ id, i int }

// readBack is what a cut reads back from a recording's lines, in one
// pass: the bytes of objects its lists hold, the frames of the
// interactions it carries, the rows of kubectl's Table form.
type readBack struct {
	objs   map[frameKey][]timeline.Ref // the objects wanted, by the frame they are in
	frames map[frameKey]bool           // the frames wanted whole
	tables map[string]*tableRows       // the Table-form rows wanted, by collection path

	got   objBytes            // the objects read
	whole map[frameKey][]byte // the frames read
	n     int                 // how many lines to read: up to the last wanted
}

// tableRows gathers the rows of a collection's Table-form lists and
// watches: the watches' events in the order they were recorded, then
// the lists' in the order they were asked.
type tableRows struct {
	x      table.Index
	bodies map[*iv][]byte
}

func newReadBack() *readBack {
	return &readBack{objs: map[frameKey][]timeline.Ref{}, frames: map[frameKey]bool{},
		tables: map[string]*tableRows{}, got: objBytes{}, whole: map[frameKey][]byte{}}
}

// wantObjects asks for the bytes of objs, those in a frame.
func (b *readBack) wantObjects(objs []timeline.Object) {
	for i := range objs {
		ref := objs[i].Ref
		if ref.In == nil || ref.W {
			continue // held by the timeline
		}
		k := frameKey{ref.In.ID, int(ref.I)}
		b.objs[k] = append(b.objs[k], ref)
	}
}

// wantState asks for the bytes of the objects of t at rv, whatever a
// list of them selects (see stateOf). Errors are left to the lists made.
func (b *readBack) wantState(t *timeline.Timeline, rv int64) {
	sel, err := t.Selector(url.Values{}, "", nil)
	if err != nil {
		return
	}
	if l, err := t.List(stateQuery(min(rv, t.Newest())), sel); err == nil {
		b.wantObjects(l.Items)
	}
}

// wantTable asks for the rows of the Table-form lists and watches of
// the collection at path.
func (b *readBack) wantTable(path string) {
	b.tables[path] = &tableRows{bodies: map[*iv][]byte{}}
}

// wantFrames asks for the first n frames of interaction id.
func (b *readBack) wantFrames(id, n int) {
	for i := range n {
		b.frames[frameKey{id, i}] = true
	}
}

// read reads back from r what b wants.
func (b *readBack) read(r *Recording) error {
	for i := range r.lines.Len() {
		l := r.lines.At(i)
		if l.kind() != lineFrame {
			continue
		}
		v := r.ivOf(l)
		k := frameKey{v.in.ID, int(l.fr)}
		if b.objs[k] != nil || b.frames[k] || v.table && b.tables[v.path] != nil {
			b.n = i + 1
		}
	}
	err := r.reread(b.n, func(i int, e cassettes.Entry) error {
		l := r.lines.At(i)
		if l.kind() != lineFrame {
			return nil
		}
		v := r.ivOf(l)
		k := frameKey{e.ID, int(l.fr)}
		for _, ref := range b.objs[k] {
			raw, err := ref.Of(e.Frame.Data)
			if err != nil {
				return err
			}
			b.got[ref] = bytes.Clone(raw)
		}
		if b.frames[k] {
			b.whole[k] = e.Frame.Data
		}
		if tr := b.tables[v.path]; v.table && tr != nil {
			if v.watch {
				_ = tr.x.AddWatchEvent(e.Frame.Data)
			} else {
				tr.bodies[v] = append(tr.bodies[v], e.Frame.Data...)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, v := range r.order {
		if tr := b.tables[v.path]; v.table && tr != nil && tr.bodies[v] != nil {
			_ = tr.x.AddList(tr.bodies[v])
			delete(tr.bodies, v)
		}
	}
	return nil
}

// objBytes are the recorded bytes of objects, read back.
type objBytes map[timeline.Ref][]byte

// of returns the bytes of object ref of t.
func (b objBytes) of(t *timeline.Timeline, ref timeline.Ref) ([]byte, error) {
	if ref.In == nil || ref.W {
		return t.Bytes(ref)
	}
	raw, ok := b[ref]
	if !ok {
		return nil, fmt.Errorf("frame %d of interaction %d of %s: not read back", ref.I+1, ref.In.ID, t.Path)
	}
	return raw, nil
}

// framesOf returns the first n frames of v, read back (see wantFrames).
func (b *readBack) framesOf(v *iv, n int) []cassettes.Frame {
	var fs []cassettes.Frame
	for i := range n {
		fs = append(fs, cassettes.Frame{At: *v.ats.At(i), Data: b.whole[frameKey{v.in.ID, i}]})
	}
	return fs
}
