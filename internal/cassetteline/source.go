package cassetteline

import "io"

// Source is a cassette read for an index. Passed as the io.Reader of
// cassettes.NewReader, it makes the Reader check frame values only as
// Check says (Check may change between entries) and keep here where its
// lines are, which an index needs to read a frame back from the file.
// Its zero Check is [CheckValid], a public Reader's.
type Source struct {
	// R is the cassette's bytes, compressed or plain.
	R     io.Reader
	Check Check

	// Set by the Reader as it reads:

	// Compressed says the cassette is in the compressed form.
	Compressed bool
	// Off is how many bytes of text have been read.
	Off int64
	// LineOff and LineLen are where the last line read is in the text
	// form: its byte offset and its length without the newline.
	LineOff int64
	LineLen int
	// Seeks are the compressed form's seek comments, in order, each at
	// the text offset it claims (whether its compressed offset is right
	// is for the index to check).
	Seeks []SeekPoint
}

// Read reads from R.
func (s *Source) Read(p []byte) (int, error) { return s.R.Read(p) }
