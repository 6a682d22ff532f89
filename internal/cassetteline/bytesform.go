package cassetteline

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"
	"unicode/utf8"
)

// The "bytes" form of a binary frame (see the package doc) is a JSON
// string with one character per byte: printable ASCII as itself ('"' and
// '\' escaped as JSON requires), every other byte b as the character
// U+0100+b, two bytes of UTF-8 (0xC4-0xC7, then 0x80-0xBF). The strings
// inside a protobuf object (names, labels, image references) stay as
// they are, so zstd finds them again as it finds them in JSON; base64
// shifts them through three alignments and hides them. On the suite's
// 20k protobuf events the compressed cassette is 5.2 MB instead of
// 8.0 MB.

// bytesKey is what precedes the string of a "bytes" frame as a Writer
// writes it.
const bytesKey = `","bytes":"`

// bytesPlain marks the bytes that stand for themselves in the "bytes" form.
var bytesPlain = func() (t [256]bool) {
	for b := 0x20; b < 0x7f; b++ {
		t[b] = b != '"' && b != '\\'
	}
	return
}()

// bytesChar is how the "bytes" form writes each byte: up to two bytes of
// text, and how many.
var bytesChar = func() (t [256][3]byte) {
	for i := range t {
		b := byte(i)
		switch {
		case bytesPlain[b]:
			t[i] = [3]byte{b, 0, 1}
		case b == '"' || b == '\\':
			t[i] = [3]byte{'\\', b, 2}
		default:
			t[i] = [3]byte{0xC4 + b>>6, 0x80 | b&0x3f, 2}
		}
	}
	return
}()

// AppendBytesString appends data in the "bytes" form, quotes included.
func AppendBytesString(dst, data []byte) []byte {
	n := len(dst)
	dst = slices.Grow(dst, 2*len(data)+2)[:n+2*len(data)+2]
	dst[n] = '"'
	n++
	for _, b := range data {
		// Both bytes are written, the second overwritten next when
		// the byte stands for itself: there is room for it.
		c := &bytesChar[b]
		dst[n], dst[n+1] = c[0], c[1]
		n += int(c[2])
	}
	dst[n] = '"'
	return dst[:n+1]
}

// fastBytes decodes s, the inside of a "bytes" string (without quotes),
// if it is written as a Writer writes it: plain bytes, \" and \\, and
// two-byte characters U+0100-U+01FF. Anything else (other JSON escapes,
// bad UTF-8, a quote) reports false, for the general decoder to parse or
// refuse.
func fastBytes(s []byte) ([]byte, bool) {
	data, ok := appendBytes(make([]byte, 0, len(s)), s)
	if !ok {
		return nil, false
	}
	return data[:len(data):len(data)], true
}

// appendBytes appends to dst what s, the inside of a "bytes" string, stands
// for, as fastBytes decodes it; on false dst's contents past len(dst) are
// undefined. A Pod's protobuf event is mostly runs of plain bytes (its
// strings) between short runs of two-byte characters (tags, lengths,
// varints): each step copies the run up to the next byte that is not
// plain eight bytes at a time, then decodes one character of any kind
// from tables, without a branch on its kind.
func appendBytes(dst, s []byte) ([]byte, bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(s))
	out := dst[n : n+len(s)]
	i, k := 0, 0
	// out[k:k+8] fits: k <= i, each character being at least one byte.
	for i+10 <= len(s) {
		w := binary.LittleEndian.Uint64(s[i:])
		binary.LittleEndian.PutUint64(out[k:], w)
		p := bits.TrailingZeros64(notPlain(w)) >> 3
		i, k = i+p, k+p
		c, t := s[i], s[i+1]
		st := &bytesSteps[c]
		if st.need&^bytesNext[t] != 0 {
			return nil, false
		}
		out[k] = st.base | t&st.mask
		i, k = i+int(st.size), k+1
	}
	for i < len(s) {
		c, t := s[i], byte(0) // no second byte: bytesNext[0] is empty
		if i+1 < len(s) {
			t = s[i+1]
		}
		st := &bytesSteps[c]
		if st.need&^bytesNext[t] != 0 {
			return nil, false
		}
		out[k] = st.base | t&st.mask
		i, k = i+int(st.size), k+1
	}
	return dst[:n+k], true
}

// notPlain returns w, eight bytes of a "bytes" string, with the high bit
// of each byte set that is not plain (see bytesPlain), and no other bit.
func notPlain(w uint64) uint64 {
	const ones, high = 0x0101010101010101, 0x8080808080808080
	x := w &^ high                            // the low seven bits: no sum below carries out of its byte
	ctl := ^(x + 0x60*ones)                   // below 0x20
	del := x + ones                           // 0x7f
	quote := ^(x ^ '"'*ones + 0x7f*ones)      // '"'
	backslash := ^(x ^ '\\'*ones + 0x7f*ones) // '\\'
	return (w | ctl | del | quote | backslash) & high
}

// bytesStep is how the "bytes" form decodes a character that starts with
// a given byte c, followed by the byte t: the byte it stands for is
// base | t&mask, and it is size bytes long if t has a bytesNext bit need
// asks for (need is 0 for a plain byte).
type bytesStep struct{ base, mask, need, size uint8 }

// The bytesNext bits: what may follow a character's first byte.
const (
	nextCont    = 1 << iota // a UTF-8 continuation byte, after 0xC4-0xC7
	nextEscaped             // '"' or '\\', after '\\'
	nextNothing             // no byte has it: c starts no character
)

// bytesSteps and bytesNext are the tables of appendBytes.
var bytesSteps, bytesNext = func() (st [256]bytesStep, next [256]uint8) {
	for i := range st {
		c := byte(i)
		switch {
		case bytesPlain[c]:
			st[i] = bytesStep{base: c, size: 1}
		case c == '\\':
			st[i] = bytesStep{mask: 0xff, need: nextEscaped, size: 2}
		case c >= 0xC4 && c <= 0xC7:
			// (c-0xC4)<<6 is c<<6 in a byte: 0xC4<<6 ends in eight zeros.
			st[i] = bytesStep{base: c << 6, mask: 0x3f, need: nextCont, size: 2}
		default:
			st[i] = bytesStep{need: nextNothing, size: 1}
		}
		switch {
		case c&0xC0 == 0x80:
			next[i] = nextCont
		case c == '"' || c == '\\':
			next[i] = nextEscaped
		}
	}
	return
}()

// bytesOf decodes a "bytes" string that a JSON decoder has unquoted:
// characters below U+0080 stand for themselves (so a hand edit may write
// any JSON escape), U+0100-U+01FF for the bytes 0x00-0xFF.
func bytesOf(s string) ([]byte, error) {
	data := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r < 0x80:
			data = append(data, byte(r))
		case r >= 0x100 && r < 0x200:
			data = append(data, byte(r-0x100))
		default:
			return nil, fmt.Errorf("character %U at byte %d stands for no byte (a byte is U+0000-U+007F or U+0100-U+01FF)", r, i)
		}
		i += n
	}
	return data, nil
}
