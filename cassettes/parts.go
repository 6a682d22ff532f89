package cassettes

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kwrec/kwrec/internal/cassettefile"
)

// Parts returns the files of the recording named by names, in part order:
// one cassette, or the parts of a rotated recording (see
// [WriterOptions.MaxSize]). A name that is not an existing file is a
// glob pattern ([filepath.Match]): 'rec-*.kwrec.zst'. A single first part
// (rec-0001.kwrec.zst) brings the further parts of its recording found
// beside it (rec-0002.kwrec.zst, ...).
//
// Parts reads each file's header: several files must be the parts 1 to n
// of one recording (the same recordedAt), whatever order they are named
// in, else the error wraps [ErrPart] and names the file. A missing last
// part cannot be told from the end of the recording, unless streams end
// open in the last part found ([ErrTruncated] when reading).
func Parts(names ...string) ([]string, error) {
	var files []string
	globbed := false
	for _, n := range names {
		if _, err := os.Stat(n); err == nil || !strings.ContainsAny(n, `*?[\`) {
			files = append(files, n)
			continue
		}
		globbed = true
		m, err := filepath.Glob(n)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", n, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no file matches the pattern: %w", n, fs.ErrNotExist)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, errors.New("cassette: no file named")
	}
	parts := make([]partFile, len(files))
	for i, f := range files {
		h, err := readHeader(f)
		if err != nil {
			return nil, err
		}
		parts[i] = partFile{f, h}
	}
	if len(parts) == 1 && (parts[0].h.Part == 1 || parts[0].h.Rebased) {
		parts = append(parts, further(parts[0])...)
	}
	if len(parts) == 1 && (parts[0].h.Part <= 1 || parts[0].h.Rebased || !globbed) {
		return files, nil // a later part named alone: the Reader says what to do
	}
	parts, err := checkParts(parts)
	if err != nil {
		return nil, err
	}
	files = files[:0]
	for _, p := range parts {
		files = append(files, p.name)
	}
	return files, nil
}

type partFile struct {
	name string
	h    Header
}

// checkParts sorts parts by their number and checks they are 1 to n of
// one recording, or k to n when part k is rebased (kwrec record --keep):
// it returns the parts from the newest rebased one on, those before it
// superseded (left by a recorder stopped while it deleted them).
func checkParts(parts []partFile) ([]partFile, error) {
	slices.SortStableFunc(parts, func(a, b partFile) int { return a.h.Part - b.h.Part })
	from := 0
	for i, p := range parts {
		if p.h.Rebased && p.h.Part > 0 {
			from = i
		}
	}
	parts = parts[from:]
	first := parts[0]
	for i, p := range parts {
		switch want := first.h.Part + i; {
		case p.h.Part <= 0:
			return nil, partError(p.name, "not a part of a rotated recording (its header has no part number): name the parts of one recording only")
		case i > 0 && p.h.Part == parts[i-1].h.Part:
			return nil, partError(p.name, fmt.Sprintf("part %d twice: %s is part %d too", p.h.Part, parts[i-1].name, p.h.Part))
		case i == 0 && p.h.Part != 1 && !p.h.Rebased:
			return nil, partError(p.name, fmt.Sprintf("part %d, but part %d is missing (a recording starts at part 1, or at a part kwrec record --keep rebased)", p.h.Part, p.h.Part-1))
		case p.h.Part != want:
			return nil, partError(p.name, fmt.Sprintf("part %d, but part %d is missing", p.h.Part, want))
		case !p.h.RecordedAt.Equal(first.h.RecordedAt):
			return nil, partError(p.name, fmt.Sprintf("part %d of a recording made at %s, not of the one %s starts (made at %s)",
				p.h.Part, p.h.RecordedAt.Format(time.RFC3339Nano), first.name, first.h.RecordedAt.Format(time.RFC3339Nano)))
		}
	}
	return parts, nil
}

func partError(name, msg string) error {
	return &ParseError{File: name, Line: 1, Offset: -1, Err: ErrPart, Msg: msg}
}

// further returns the files beside first part p that are further parts
// of its recording by their names and headers; others (left from an
// earlier recording to the same name) are not its.
func further(p partFile) []partFile {
	dir, base := filepath.Split(p.name)
	stem, ext := splitPartName(base)
	i := strings.LastIndexByte(stem, '-')
	if i < 0 || stem[i+1:] != fmt.Sprintf("%04d", p.h.Part) {
		return nil
	}
	stem = stem[:i]
	m, _ := filepath.Glob(dir + escapeGlob(stem) + "-*" + escapeGlob(ext))
	var out []partFile
	for _, name := range m {
		_, b := filepath.Split(name)
		num := strings.TrimSuffix(strings.TrimPrefix(b, stem+"-"), ext)
		if k, err := strconv.Atoi(num); err != nil || k <= p.h.Part || len(num) < 4 || num[0] == '+' || num[0] == '-' {
			continue
		}
		h, err := readHeader(name)
		if err != nil || h.Part <= p.h.Part || !h.RecordedAt.Equal(p.h.RecordedAt) {
			continue
		}
		out = append(out, partFile{name, h})
	}
	return out
}

func escapeGlob(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// ReadHeader reads the header line of the cassette file path, which may
// be any part of a rotated recording.
func ReadHeader(path string) (Header, error) { return readHeader(path) }

// readHeader reads the header of the cassette file path, of any part.
func readHeader(path string) (Header, error) {
	f, err := os.Open(path)
	if err != nil {
		return Header{}, fileError(path, err)
	}
	defer f.Close()
	rd, err := newReader(cassettefile.NewScanner([]cassettefile.Part{{R: f, Name: path}}, cassettefile.ScanOptions{}), true)
	if err != nil {
		return Header{}, err
	}
	rd.Close()
	return rd.Header(), nil
}

// Open opens a recording for streaming; Close it when done. names is
// one cassette file, compressed or plain, or a rotated recording (see
// [WriterOptions.MaxSize]) as [Parts] finds it: its first part, which
// brings the others found beside it, a glob pattern ('rec-*.kwrec.zst'),
// or all its parts. Several parts read as one stream: interactions
// continue from part to part, errors name the part and its line, and the
// Header is the first part's with Part 0. A later part named alone is
// refused with [ErrPart].
func Open(names ...string) (*Reader, error) {
	files, err := Parts(names...)
	if err != nil {
		return nil, err
	}
	if len(files) == 1 {
		return openFile(files[0])
	}
	parts := make([]cassettefile.Part, 0, len(files))
	var closers []io.Closer
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			for _, c := range closers {
				c.Close()
			}
			return nil, fileError(name, err)
		}
		closers = append(closers, f)
		parts = append(parts, cassettefile.Part{R: f, Name: name})
	}
	rd, err := newReader(cassettefile.NewScanner(parts, cassettefile.ScanOptions{}), false)
	if err != nil {
		for _, c := range closers {
			c.Close()
		}
		return nil, err
	}
	rd.closers = closers
	rd.header.Part = 0 // the whole recording's
	return rd, nil
}

// Load reads a whole recording, one file or a rotated recording's parts,
// named as [Open] takes them; see [Read] for truncated recordings.
func Load(names ...string) (*Cassette, error) {
	rd, err := Open(names...)
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return readAll(rd)
}

// nextPart starts the next part of a rotated recording at the end of the
// current one, and reports whether there was one.
func (r *Reader) nextPart() (bool, error) {
	prev := r.name
	more, err := r.sc.NextFile()
	if !more {
		return false, nil
	}
	p := r.sc.Name()
	r.name = p
	h, err := r.startFile(err)
	if err != nil {
		return false, err
	}
	switch want := r.first + r.sc.File(); {
	case h.Part != want:
		return false, partError(p, fmt.Sprintf("part %d where part %d should follow %s", h.Part, want, prev))
	case !h.RecordedAt.Equal(r.header.RecordedAt):
		return false, partError(p, fmt.Sprintf("part %d of a recording made at %s, not of the one before it (made at %s)",
			h.Part, h.RecordedAt.Format(time.RFC3339Nano), r.header.RecordedAt.Format(time.RFC3339Nano)))
	}
	return true, nil
}

// PartName returns the name of part k of a recording written to path
// with rotation: the name's stem, "-", k in at least four digits, then
// its extension, which is ".kwrec.zst" or ".kwrec" if the name ends so,
// else everything from the first dot: rec.kwrec.zst gives
// rec-0001.kwrec.zst, rec-0002.kwrec.zst, ...
func PartName(path string, k int) string {
	dir, base := filepath.Split(path)
	stem, ext := splitPartName(base)
	return fmt.Sprintf("%s%s-%04d%s", dir, stem, k, ext)
}

// Leftovers returns the temporary files that a writer of the parts of
// the recording path (as [Create] takes it with MaxSize or Rotate) left
// when it was stopped mid-way: a part before its header was written, or
// a rebased part being written (".rec-0003.kwrec.zst.tmp123"). Nothing
// reads them. The files of other recordings beside it (rec-a-0001 beside
// rec-0001) are not among them.
func Leftovers(path string) []string {
	dir, base := filepath.Split(path)
	stem, ext := splitPartName(base)
	names, _ := filepath.Glob(filepath.Join(dir, "."+escapeGlob(stem)+"-*"+escapeGlob(ext)+".tmp*"))
	var left []string
	for _, n := range names {
		num, _, ok := strings.Cut(strings.TrimPrefix(filepath.Base(n), "."+stem+"-"), ext+".tmp")
		if ok && num != "" && strings.Trim(num, "0123456789") == "" {
			left = append(left, n)
		}
	}
	return left
}

// partPattern returns the glob pattern of the parts of the recording
// whose part is name (rec-0002.kwrec.zst: rec-*.kwrec.zst), else
// NAME-*.kwrec.zst.
func partPattern(name string) string {
	_, base := filepath.Split(name)
	stem, ext := splitPartName(base)
	i := strings.LastIndexByte(stem, '-')
	if i < 0 || len(stem)-i-1 < 4 || strings.Trim(stem[i+1:], "0123456789") != "" {
		return "NAME-*.kwrec.zst"
	}
	return stem[:i] + "-*" + ext
}

func splitPartName(base string) (stem, ext string) {
	for _, e := range []string{".kwrec.zst", ".kwrec"} {
		if s, ok := strings.CutSuffix(base, e); ok && s != "" {
			return s, e
		}
	}
	if i := strings.IndexByte(base, '.'); i > 0 {
		return base[:i], base[i:]
	}
	return base, ""
}
