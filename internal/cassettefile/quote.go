package cassettefile

import (
	"unicode/utf8"
)

// unquote decodes the inside of a JSON string as encoding/json does, in one
// pass. ok is false for anything it does not decode plainly: a raw quote
// or control character (not a string's inside), an escape it does not
// know, a UTF-16 surrogate escape, or bytes that are not UTF-8 (which
// encoding/json replaces with U+FFFD); the general decoder then has it.
func unquote(s []byte) ([]byte, bool) {
	out := make([]byte, 0, len(s))
	for i := 0; i < len(s); {
		// Copy the run up to the next byte that needs a look.
		j := i
		for j < len(s) && s[j] >= 0x20 && s[j] != '"' && s[j] != '\\' && s[j] < utf8.RuneSelf {
			j++
		}
		out = append(out, s[i:j]...)
		i = j
		if i == len(s) {
			break
		}
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			r, n := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && n == 1 {
				return nil, false
			}
			out = append(out, s[i:i+n]...)
			i += n
		case c == '\\':
			if i+1 >= len(s) {
				return nil, false
			}
			switch e := s[i+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, ok := hex4(s[i+2:])
				if !ok || utf8.RuneLen(r) < 0 { // a surrogate half
					return nil, false
				}
				out = utf8.AppendRune(out, r)
				i += 4
			default:
				return nil, false
			}
			i += 2
		default: // a raw quote or control character
			return nil, false
		}
	}
	return out, true
}

// hex4 reads the four hex digits of a \u escape.
func hex4(s []byte) (rune, bool) {
	if len(s) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range s[:4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c = c - 'a' + 10
		case 'A' <= c && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}
