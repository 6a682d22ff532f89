package cassettefile

import (
	"bytes"
	"io"
	"strconv"

	"github.com/klauspost/compress/zstd"
)

// seekPrefix starts a seek comment: "# kwrec:seek zstd=C text=T".
const seekPrefix = "# kwrec:seek zstd="

// SeekPoint is where a zstd frame of the compressed form starts: at byte
// Zstd of the file, which decodes to text from byte Text on.
type SeekPoint struct {
	Zstd, Text int64
	// File is, in a [Source], the file of a rotated recording the point
	// is in (0: the first); never written in a comment.
	File int
}

// AppendSeekComment appends p's seek comment line, newline included.
func AppendSeekComment(b []byte, p SeekPoint) []byte {
	b = append(b, seekPrefix...)
	b = strconv.AppendInt(b, p.Zstd, 10)
	b = append(b, " text="...)
	b = strconv.AppendInt(b, p.Text, 10)
	return append(b, '\n')
}

// ParseSeekComment parses line (without its newline) if it is exactly a
// seek comment, canonical decimal numbers included.
func ParseSeekComment(line []byte) (SeekPoint, bool) {
	rest, ok := bytes.CutPrefix(line, []byte(seekPrefix))
	if !ok {
		return SeekPoint{}, false
	}
	c, rest, ok := cutNumber(rest)
	if !ok {
		return SeekPoint{}, false
	}
	rest, ok = bytes.CutPrefix(rest, []byte(" text="))
	if !ok {
		return SeekPoint{}, false
	}
	t, rest, ok := cutNumber(rest)
	if !ok || len(rest) != 0 {
		return SeekPoint{}, false
	}
	return SeekPoint{Zstd: c, Text: t}, true
}

// cutNumber cuts a canonical non-negative decimal (no sign, no leading
// zero) off the front of b.
func cutNumber(b []byte) (int64, []byte, bool) {
	i := 0
	for i < len(b) && i < 18 && b[i] >= '0' && b[i] <= '9' {
		i++
	}
	if i == 0 || (i > 1 && b[0] == '0') {
		return 0, b, false
	}
	n, err := strconv.ParseInt(string(b[:i]), 10, 64)
	return n, b[i:], err == nil
}

// NewDecoder returns the zstd decoder every cassette reader uses: one
// goroutine, low memory, and windows up to 64 MiB. With ahead, a second
// goroutine decodes the next block while this one is read: for one pass
// over a whole file, such as an index's, which it shortens.
func NewDecoder(r io.Reader, ahead bool) (*zstd.Decoder, error) {
	n := 1
	if ahead {
		n = 2
	}
	return zstd.NewReader(r, zstd.WithDecoderConcurrency(n), zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(64<<20))
}
