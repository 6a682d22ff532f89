package cassettefile

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

// bytesRoundTrip checks that data written in the "bytes" form is one valid
// JSON string that both decoders read back as data.
func bytesRoundTrip(t *testing.T, data []byte) {
	t.Helper()
	q := AppendBytesString(nil, data)
	if !utf8.Valid(q) || !json.Valid(q) {
		t.Fatalf("%q is not a valid JSON string", q)
	}
	fast, ok := fastBytes(q[1 : len(q)-1])
	if !ok {
		t.Fatalf("the fast decoder refuses what the writer wrote: %q", q)
	}
	var s string
	if err := json.Unmarshal(q, &s); err != nil {
		t.Fatal(err)
	}
	slow, err := bytesOf(s)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fast, data) || !bytes.Equal(slow, data) {
		t.Fatalf("%x written as %q reads back as %x (fast) and %x (decoder)", data, q, fast, slow)
	}
}

func TestTheBytesFormHoldsAnyBytes(t *testing.T) {
	every := make([]byte, 256)
	for i := range every {
		every[i] = byte(i)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	tests := []struct {
		name string
		data []byte
	}{
		{"nothing", []byte{}},
		{"every byte value", every},
		{"random bytes", random},
		{"a protobuf watch frame", []byte("\x00\x00\x00\x1b\n\x05ADDED\x12\x12k8s\x00\n\x0c\n\x02v1\x12\x03Pod")},
		{"quotes and backslashes only", []byte(`"\\"`)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { bytesRoundTrip(t, tt.data) })
	}
}

func FuzzBytesForm(f *testing.F) {
	f.Add([]byte("\x00\x00\x00\x04k8s\x00"))
	f.Add([]byte(`"\`))
	f.Fuzz(bytesRoundTrip)
}

// refBytes is the "bytes" form's strict decoding written another way, as
// the format says it, one character (not byte) at a time: a plain
// character, \" or \\, or U+0100-U+01FF for the bytes 0x00-0xFF.
// fastBytes must answer as it does on any input.
func refBytes(s []byte) ([]byte, bool) {
	data := make([]byte, 0, len(s))
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case r < utf8.RuneSelf && bytesPlain[r]:
			data = append(data, byte(r))
		case r == '\\' && len(s) > 1 && (s[1] == '"' || s[1] == '\\'):
			data, n = append(data, s[1]), 2
		case r >= 0x100 && r <= 0x1ff:
			data = append(data, byte(r-0x100))
		default:
			return nil, false
		}
		s = s[n:]
	}
	return data, true
}

// sameBytes checks that fastBytes and appendBytes answer for s what
// refBytes does.
func sameBytes(t *testing.T, s []byte) {
	t.Helper()
	want, wantOK := refBytes(s)
	got, ok := fastBytes(s)
	if ok != wantOK || !bytes.Equal(got, want) {
		t.Fatalf("fastBytes(%q) = %x, %v; the plain decoder says %x, %v", s, got, ok, want, wantOK)
	}
	prefix := []byte("prefix")
	got, ok = appendBytes(prefix, s)
	if ok != wantOK || ok && (string(got[:len(prefix)]) != "prefix" || !bytes.Equal(got[len(prefix):], want)) {
		t.Fatalf("appendBytes(prefix, %q) = %q, %v; the plain decoder says %x, %v", s, got, ok, want, wantOK)
	}
}

var bytesSeeds = []string{
	``, `plain`, `\"\\`, `\`, `\x`, `\/`, `"`, "\x00", "\x7f", "Ā", "ǿ", "Ȁ", "\xc4", "\xc4A", "\xc3\xbf", `\u0041`,
	"0123456789abcdefĀ", "0123456789abcdef\\", "01234567\\\"89abcdefghij", "0123456789ĀāĂ\xc7\xbf\\\\abcdefgh\xc5",
	"ĀĀĐđĊĈMODIFIEDĒƄ ĊƁ k8sĀĊĉĊĂv1ĒăPodĒǫğĊǑăĊęsearch-1-9swmmg6zh5-tzb44ĒĔ",
}

// TestTheFastDecoderAnswersAsThePlainOne: on bytes forms written by a
// Writer and on strings that are not one, cut at every length.
func TestTheFastDecoderAnswersAsThePlainOne(t *testing.T) {
	line := podEventLine(t)
	seeds := append([]string{string(line)}, bytesSeeds...)
	for _, s := range seeds {
		for n := range len(s) + 1 {
			sameBytes(t, []byte(s[:n]))
			sameBytes(t, []byte(s[len(s)-n:]))
		}
	}
	every := make([]byte, 0, 3*256)
	for c := range 256 {
		for _, t := range []byte{'"', '\\', 0x80, 0xbf, 'A'} {
			every = append(every, byte(c), t)
		}
	}
	for i := range every {
		sameBytes(t, every[i:min(i+12, len(every))])
	}
	// Every pair of bytes, where the decoder takes eight bytes at a time.
	s := []byte("0123456789..0123456789")
	for c := range 256 {
		for d := range 256 {
			s[10], s[11] = byte(c), byte(d)
			sameBytes(t, s)
		}
	}
}

func FuzzFastBytes(f *testing.F) {
	for _, s := range bytesSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(sameBytes)
}
