package cassetteline

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
