package cassettefile

import (
	"fmt"
	"slices"
	"unicode/utf8"
)

// The "bytes" form of a binary frame (see the package doc) is a JSON
// string with one character per byte: printable ASCII as itself ('"' and
// '\' escaped as JSON requires), every other byte b as the character
// U+0100+b, two bytes of UTF-8 (0xC4-0xC7, then 0x80-0xBF). The strings
// inside a protobuf object (names, labels, image references) stay as
// they are, so zstd finds them again as it finds them in JSON; base64
// shifts them through three alignments and hides them.

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
func fastBytes(s []byte) ([]byte, bool) { return fastBytesInto(nil, s) }

// fastBytesInto is fastBytes decoding into dst's array when it is not nil
// (a caller's buffer, reused frame after frame: the bytes are as many as
// s at most), else into a new one.
func fastBytesInto(dst, s []byte) ([]byte, bool) {
	if dst == nil {
		dst = make([]byte, 0, len(s))
	}
	data, ok := appendBytes(dst[:0], s)
	if !ok {
		return nil, false
	}
	return data[:len(data):len(data)], true
}

// appendBytes appends to dst what s, the inside of a "bytes" string, stands
// for, as fastBytes decodes it; on false dst's contents past len(dst) are
// undefined. It goes one character at a time: decoders that take eight
// bytes at a time (SWAR: a plain run copied with no branch on where it
// ends, or every byte's class and position computed side by side) were
// slower on a Pod's protobuf events, whose plain runs average eleven
// bytes (BenchmarkBytesForm), as were one that copies each plain run with
// copy (2x the time) and one that copies four plain bytes as a word (1.3x).
func appendBytes(dst, s []byte) ([]byte, bool) {
	n := len(dst)
	dst = slices.Grow(dst, len(s))
	out := dst[n : n+len(s)]
	k := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if bytesPlain[c] {
			out[k] = c
			k++
			continue
		}
		if i+1 == len(s) {
			return nil, false
		}
		switch t := s[i+1]; {
		case c == '\\' && (t == '"' || t == '\\'):
			out[k] = t
		case c >= 0xC4 && c <= 0xC7 && t&0xC0 == 0x80:
			out[k] = (c-0xC4)<<6 | t&0x3f
		default:
			return nil, false
		}
		k++
		i++
	}
	return dst[:n+k], true
}

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
